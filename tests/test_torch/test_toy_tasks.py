"""Chapter 7's toy tasks (transformer_course/torch/toy_tasks.py): the data mean what the chapter says, the
controls take away what they say, bad arguments are refused by name."""
import numpy as np
import pytest
import torch

from transformer_course import set_seed
from transformer_course.torch.toy_tasks import (
    REPEAT_LENGTH,
    REPEAT_PAD,
    SORT_LENGTH,
    RepeatClassifier,
    Tagger,
    repeat_batch,
    silence_attention,
    sort_batch,
)


def test_a_sort_target_is_its_row_sorted_from_tokens_4_to_15():
    x, y = sort_batch(torch.Generator().manual_seed(0), batch_size=50)
    assert x.shape == y.shape == (50, SORT_LENGTH)
    assert x.min() >= 4 and x.max() <= 15
    for row, target in zip(x.tolist(), y.tolist(), strict=True):
        assert target == sorted(row)


def test_a_repeat_label_says_whether_a_real_token_occurs_twice():
    ids, y = repeat_batch(3000, np.random.default_rng(0))
    assert ids.shape == (3000, REPEAT_LENGTH) and y.shape == (3000,)
    for row, label in zip(ids.tolist(), y.tolist(), strict=True):
        length = sum(t != REPEAT_PAD for t in row)
        real = row[:length]
        assert 4 <= length <= REPEAT_LENGTH and all(t == REPEAT_PAD for t in row[length:])   # padding at the end
        assert all(1 <= t <= 19 for t in real)
        assert len(real) - len(set(real)) == label           # one repeat exactly when the label is 1
    assert 0.45 < y.float().mean() < 0.55


def test_the_same_generator_gives_the_same_batch():
    a = repeat_batch(10, np.random.default_rng(3))
    b = repeat_batch(10, np.random.default_rng(3))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


def test_without_attention_a_position_sees_only_its_own_token():
    set_seed(0)
    model = RepeatClassifier(attention=False).eval()
    ids = torch.tensor([[3, 5, 7, 9, 0, 0, 0, 0]])
    changed = ids.clone()
    changed[0, 3] = 11
    h = model.encoder(model.positions(model.embed(ids)))[0]            # (1, S, D)
    h_changed = model.encoder(model.positions(model.embed(changed)))[0]
    assert torch.equal(h[0, :3], h_changed[0, :3]) and not torch.equal(h[0, 3], h_changed[0, 3])


def test_without_attention_or_positions_the_classifier_ignores_order():
    set_seed(0)
    model = RepeatClassifier(attention=False, positions=False).eval()
    ids = torch.tensor([[3, 5, 7, 9, 0, 0, 0, 0]])
    shuffled = torch.tensor([[9, 3, 7, 5, 0, 0, 0, 0]])
    torch.testing.assert_close(model(ids), model(shuffled))
    with_attention = RepeatClassifier().eval()
    assert not torch.allclose(with_attention(ids), with_attention(shuffled))   # positions matter with them


def test_silencing_is_undone_by_removing_the_hook():
    set_seed(0)
    model = RepeatClassifier().eval()
    ids, _ = repeat_batch(4, np.random.default_rng(1))
    before = model(ids)
    handle = silence_attention(model.encoder.layers[0])
    assert not torch.allclose(model(ids), before)
    handle.remove()
    torch.testing.assert_close(model(ids), before)


def test_the_classifier_returns_its_weights_on_request_and_the_tagger_one_row_per_position():
    set_seed(0)
    ids, _ = repeat_batch(4, np.random.default_rng(1))
    logits, weights = RepeatClassifier()(ids, need_weights=True)
    assert logits.shape == (4, 2) and len(weights) == 2
    x, _ = sort_batch(torch.Generator().manual_seed(0), batch_size=3)
    assert Tagger(2, 16, norm_first=True)(x).shape == (3, SORT_LENGTH, 16)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: repeat_batch(0, np.random.default_rng(0)), "n: expected a positive int"),
    (lambda: repeat_batch(5, np.random.default_rng(0), min_len=1), "min_len: expected an int in [2, 8]"),
    (lambda: repeat_batch(5, 0), "rng: expected a numpy.random.Generator"),
    (lambda: sort_batch(torch.Generator(), batch_size=0), "batch_size: expected a positive int"),
    (lambda: sort_batch(0), "generator: expected a torch.Generator"),
    (lambda: silence_attention(torch.nn.Linear(2, 2)), "layer: expected an EncoderLayer"),
])
def test_bad_arguments_are_refused_by_name(call, message):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert message in str(info.value)
