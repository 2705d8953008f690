"""Rotary position embeddings and ALiBi in the PyTorch twin: RoPE against complex numbers, scores that depend on
the offset only, every attention path equal, the key/value cache, causality and padding."""
from __future__ import annotations

import pytest
import torch
from torch_helpers import SMALL, lively_model, random_batch, with_kernel

from transformer_course.torch.attention import KVCache, MultiHeadAttention
from transformer_course.torch.decoding import beam_search, greedy_decode
from transformer_course.torch.positional import RotaryPositions, alibi_bias, alibi_slopes
from transformer_course.torch.transformer import Transformer

KINDS = ["rope", "alibi"]


def test_rope_equals_complex_multiplication():
    """Pair i of position p, read as a complex number, is multiplied by e^(j p theta_i) (torch.view_as_complex)."""
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64)     # (B, H, T, Dh)
    rotary = RotaryPositions(8, max_len=32)
    for offset in (0, 5):
        theta = 10000.0 ** (-torch.arange(4, dtype=torch.float64) * 2 / 8)              # (Dh/2,)
        phase = torch.polar(torch.ones(7, 4, dtype=torch.float64),
                            torch.arange(offset, offset + 7, dtype=torch.float64)[:, None] * theta)  # (T, Dh/2)
        expected = torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 7, 4, 2)) * phase).flatten(-2)
        torch.testing.assert_close(rotary(x, offset), expected, atol=1e-12, rtol=0)
        # the float32 table gives the same rotation to float32 precision
        torch.testing.assert_close(rotary(x.float(), offset), expected.float(), atol=1e-5, rtol=1e-5)


def test_rope_scores_depend_on_the_offset_only():
    rotary = RotaryPositions(16, max_len=64)
    q, k = torch.randn(1, 1, 1, 16, dtype=torch.float64), torch.randn(1, 1, 1, 16, dtype=torch.float64)

    def score(m, n):
        return (rotary(q, m) @ rotary(k, n).transpose(-1, -2)).item()

    assert score(9, 2) == pytest.approx(score(7, 0), abs=1e-12) == pytest.approx(score(40, 33), abs=1e-12)
    assert score(9, 2) != pytest.approx(score(2, 9), abs=1e-6)


def test_alibi_slopes_and_bias():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -k for k in range(1, 9)], dtype=torch.float64))
    torch.testing.assert_close(alibi_slopes(6), torch.tensor([2.0 ** -k for k in (2, 4, 6, 8, 1, 3)],
                                                             dtype=torch.float64))
    bias = alibi_bias(2, 2, 4, offset=3)                 # two queries at positions 3 and 4, keys 0..3
    torch.testing.assert_close(bias[0], -(2.0 ** -4) * torch.tensor([[3.0, 2, 1, 0], [4, 3, 2, 1]]))


@pytest.mark.parametrize("positional", KINDS)
def test_both_kernels_and_the_cache_give_the_same_output(positional):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, positional=positional, max_len=32).eval()
    explicit = MultiHeadAttention(16, 4, positional=positional, max_len=32, fused=False).eval()
    explicit.load_state_dict(mha.state_dict())
    x = torch.randn(3, 6, 16)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()[None]  # (1, T, T)
    for mask in (None, causal):
        weighted, _ = mha(x, x, mask)
        fused, _ = mha(x, x, mask, need_weights=False)
        written_out, _ = explicit(x, x, mask, need_weights=False)
        torch.testing.assert_close(fused, weighted, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(written_out, weighted, atol=1e-5, rtol=1e-5)
    # one position at a time with the cache: RoPE rotates each new key at its own position, ALiBi's bias is
    # that of the new query's position
    cache = KVCache()
    steps = [mha(x[:, i:i + 1], x[:, i:i + 1], need_weights=False, cache=cache)[0] for i in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), mha(x, x, causal)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positional", KINDS)
def test_position_term_is_in_attention_not_in_the_embeddings(positional):
    model = Transformer(SMALL.replace(positional=positional))
    assert model.positions is None
    assert all(layer.self_attn.positional == positional for layer in model.encoder.layers)
    assert all(layer.self_attn.positional == positional and layer.cross_attn.positional is None
               for layer in model.decoder.layers)
    # nothing to save: the same parameters as the sinusoidal model
    assert list(model.state_dict()) == list(Transformer(SMALL).state_dict())
    with pytest.raises(ValueError, match="max_len=64 positions"):
        model(torch.ones(1, 65, dtype=torch.long), torch.ones(1, 3, dtype=torch.long))


@pytest.mark.parametrize("positional", KINDS)
def test_decoder_is_causal_and_padding_is_invisible(positional):
    model = lively_model(SMALL.replace(positional=positional))
    src, tgt = random_batch()
    logits = model(src, tgt)
    changed = tgt.clone()
    changed[:, 4:] = 5
    torch.testing.assert_close(model(src, changed)[:, :4], logits[:, :4])
    longer = torch.cat([src, torch.zeros(4, 3, dtype=src.dtype)], 1)
    torch.testing.assert_close(model(longer, tgt), logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(with_kernel(model, False)(src, tgt), logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(src, tgt, need_weights=True)[0], logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positional", KINDS)
def test_cached_decoding_gives_the_tokens_of_full_decoding(positional):
    """(The cached logits equal the full decoder's in tests/test_torch/test_decoding.py.)"""
    model = lively_model(SMALL.replace(positional=positional))
    src, _ = random_batch(B=3, S=7)
    greedy = greedy_decode(model, src, max_len=12)
    assert torch.equal(greedy, greedy_decode(model, src, max_len=12, use_cache=False))
    assert torch.equal(beam_search(model, src, beam_size=1, max_len=12), greedy)
