"""Bahdanau's RNN encoder-decoder, with and without attention."""
from __future__ import annotations

import pytest
import torch

from transformer_course.torch.attention import additive_scores
from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.loss import cross_entropy


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 12, (3, 6), generator=g)
    src[1, 4:] = 0
    tgt = torch.randint(4, 14, (3, 5), generator=g)
    return src, tgt


@pytest.mark.parametrize("attention", [True, False])
def test_shapes_and_weights(attention):
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(12, 14, emb=8, hidden=16, attention=attention)
    src, tgt = _batch()
    logits, weights = model(src, tgt)
    assert logits.shape == (3, 5, 14)
    if attention:
        assert weights.shape == (3, 5, 6)
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 5))
        assert torch.all(weights[1, :, 4:] == 0)         # no weight on padding
    else:
        assert weights is None
    tokens, gen_weights = model.generate(src, max_len=7)
    assert tokens.shape[0] == 3 and tokens.shape[1] <= 7
    assert (gen_weights is None) == (not attention)


@pytest.mark.parametrize("attention", [True, False])
def test_padding_does_not_change_the_output(attention):
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(12, 14, emb=8, hidden=16, attention=attention).eval()
    src, tgt = _batch()
    logits, _ = model(src, tgt)
    longer = torch.cat([src, torch.zeros(3, 3, dtype=src.dtype)], 1)
    logits_long, _ = model(longer, tgt)
    torch.testing.assert_close(logits_long, logits, atol=1e-5, rtol=1e-5)


def test_attention_step_is_the_additive_score():
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(12, 14, emb=8, hidden=16).double()
    src, tgt = _batch()
    annotations, context, s0, mask = model.encode(src)
    keys = model.decoder.project_keys(annotations)       # (B, S, A): U_a h_j, once per source
    _, _, weights = model.decode_step(tgt[:, 0], s0, annotations, keys, context, mask)
    step = model.decoder
    scores = additive_scores(s0[:, None, :], annotations, step.W_a, step.U_a, step.v_a)[:, 0]  # (B, S)
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    torch.testing.assert_close(weights, expected)


def test_both_models_learn_to_copy_a_short_batch():
    src, _ = _batch(1)
    src[1, 4:] = 0
    tgt_out = torch.cat([src, torch.full((3, 1), 2)], 1)
    tgt_out[1, 4] = 2
    tgt_out[1, 5:] = 0
    tgt_in = torch.cat([torch.ones(3, 1, dtype=torch.long), tgt_out[:, :-1]], 1)
    for attention in (True, False):
        torch.manual_seed(0)
        model = BahdanauSeq2Seq(12, 14, emb=16, hidden=32, attention=attention)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        first = None
        for _step in range(40):
            logits, _ = model(src, tgt_in)
            loss = cross_entropy(logits, tgt_out, pad_id=0)
            first = loss.item() if first is None else first
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert loss.item() < 0.3 * first


def test_bad_input_errors():
    model = BahdanauSeq2Seq(12, 14, emb=8, hidden=16)
    src, tgt = _batch()
    with pytest.raises(ValueError, match="hidden: expected a positive int"):
        BahdanauSeq2Seq(12, 14, emb=8, hidden=0)
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, 12\)"):
        model(src + 20, tgt)
    with pytest.raises(ValueError, match="tgt_in: expected batch size 3"):
        model(src, tgt[:2])
    with pytest.raises(ValueError, match="mask: expected at least one real position in every sequence"):
        model(torch.zeros(2, 3, dtype=torch.long), tgt[:2])
