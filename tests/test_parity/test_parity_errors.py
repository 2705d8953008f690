"""The twins check the same things with the same words: the same bad input to the NumPy and the PyTorch
function raises the same exception type with the same message, which names the argument and what was
expected."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_course.config import ModelConfig
from transformer_course.numpy import cross_entropy_forward, transformer_forward
from transformer_course.numpy import greedy_decode as np_greedy_decode
from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.convert import torch_to_numpy
from transformer_course.torch.decoding import beam_search, greedy_decode
from transformer_course.torch.loss import cross_entropy, fast_cross_entropy
from transformer_course.torch.transformer import Transformer

CONFIG = ModelConfig(src_vocab_size=9, tgt_vocab_size=7, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1,
                     n_decoder_layers=1, dropout=0.0, max_len=16)


@pytest.fixture(scope="module")
def twins():
    torch.manual_seed(0)
    model = Transformer(CONFIG).eval()
    return model, torch_to_numpy(model)


def _batch():
    src = np.array([[4, 5, 6, 2], [4, 5, 2, 0]])
    tgt_in = np.array([[1, 4, 5], [1, 4, 0]])
    return src, tgt_in


def _same_error(numpy_call, torch_calls, expected_type, pattern):
    """Every call raises expected_type; all messages are equal and match `pattern`."""
    messages = []
    for call in (numpy_call, *torch_calls):
        with pytest.raises(expected_type, match=pattern) as caught:
            call()
        messages.append(str(caught.value))
    assert len(set(messages)) == 1, messages


def test_loss_targets_out_of_range():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 3, 7))
    targets = np.array([[1, 4, 9], [4, -1, 0]])
    _same_error(lambda: cross_entropy_forward(logits, targets, 0),
                [lambda loss=loss: loss(torch.from_numpy(logits), torch.from_numpy(targets), 0)
                 for loss in (cross_entropy, fast_cross_entropy)],
                ValueError, r"^targets: expected ids in \[0, 7\), got values in \[-1, 9\]$")


@pytest.mark.parametrize("name", ["bos_id", "eos_id"])
@pytest.mark.parametrize("value", [7, -1])
def test_bos_and_eos_ids_outside_the_vocabulary(twins, name, value):
    model, params = twins
    src, _ = _batch()
    bahdanau = BahdanauSeq2Seq(9, 7, emb=4, hidden=4)
    _same_error(lambda: np_greedy_decode(src, params, CONFIG, **{name: value}),
                [lambda: greedy_decode(model, torch.from_numpy(src), **{name: value}),
                 lambda: beam_search(model, torch.from_numpy(src), **{name: value}),
                 lambda: bahdanau.generate(torch.from_numpy(src), **{name: value})],
                ValueError, rf"^{name}: expected an int in \[0, 6\] \(an id of the vocabulary of size 7\), "
                            rf"got {value}$")


def test_max_len_beyond_the_position_table(twins):
    model, params = twins
    src, _ = _batch()
    _same_error(lambda: np_greedy_decode(src, params, CONFIG, max_len=17),
                [lambda: greedy_decode(model, torch.from_numpy(src), max_len=17)],
                ValueError, r"^max_len: expected an int in \[1, 16\] \(at most config.max_len\), got 17$")


def test_beam_size_larger_than_the_vocabulary(twins):
    model, _ = twins
    src, _ = _batch()
    with pytest.raises(ValueError, match=r"^beam_size: expected an int in \[1, 7\] \(at most the target "
                                         r"vocabulary size 7\), got 8$"):
        beam_search(model, torch.from_numpy(src), beam_size=8)
    with pytest.raises(TypeError, match=r"^beam_size: expected an int in \[1, 7\]"):
        beam_search(model, torch.from_numpy(src), beam_size=2.0)


@pytest.mark.parametrize("shape", [(0, 4), (2, 0)])
def test_an_empty_batch(twins, shape):
    model, params = twins
    _src, tgt_in = _batch()
    empty = np.zeros(shape, dtype=np.int64)
    pattern = rf"^src: expected a non-empty batch of shape \(B, T\) \(every axis >= 1\), got shape \({shape[0]}, " \
              rf"{shape[1]}\)$"
    _same_error(lambda: transformer_forward(empty, tgt_in[:shape[0]], params, CONFIG),
                [lambda: model(torch.from_numpy(empty), torch.from_numpy(tgt_in[:shape[0]])),
                 lambda: greedy_decode(model, torch.from_numpy(empty))],
                ValueError, pattern)
    _same_error(lambda: np_greedy_decode(empty, params, CONFIG), [lambda: model.encode(torch.from_numpy(empty))],
                ValueError, pattern)


def test_an_empty_batch_of_loss_targets():
    logits = np.zeros((0, 3, 7))
    targets = np.zeros((0, 3), dtype=np.int64)
    _same_error(lambda: cross_entropy_forward(logits, targets, 0),
                [lambda loss=loss: loss(torch.from_numpy(logits), torch.from_numpy(targets), 0)
                 for loss in (cross_entropy, fast_cross_entropy)],
                ValueError, r"^targets: expected a non-empty batch of shape \(B, T\) \(every axis >= 1\), "
                            r"got shape \(0, 3\)$")
