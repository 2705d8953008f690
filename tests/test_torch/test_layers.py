"""Layers: LayerNorm vs torch.nn.LayerNorm, encoder/decoder layers vs torch.nn.Transformer*Layer, positions,
embeddings, feed-forward, residual placement."""
from __future__ import annotations

import math

import pytest
import torch

from transformer_course.torch.decoder import Decoder, DecoderLayer
from transformer_course.torch.embedding import Embedding
from transformer_course.torch.encoder import Encoder, EncoderLayer
from transformer_course.torch.feedforward import FeedForward
from transformer_course.torch.layernorm import LayerNorm, layernorm
from transformer_course.torch.masks import causal_mask, combine_masks, padding_mask
from transformer_course.torch.positional import LearnedPositions, SinusoidalPositions, sinusoidal_encoding

D, H, FF = 16, 4, 32


def _randomise(module, seed=0):
    """Non-trivial values for every parameter (biases, gamma, beta included)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return module


def test_layernorm_equals_torch_layernorm_and_the_explicit_formula():
    x = torch.randn(3, 4, D, dtype=torch.float64)
    ours = _randomise(LayerNorm(D).double())
    ref = torch.nn.LayerNorm(D).double()
    with torch.no_grad():
        ref.weight.copy_(ours.gamma)
        ref.bias.copy_(ours.beta)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(layernorm(x, ours.gamma, ours.beta), ref(x), atol=1e-12, rtol=1e-12)
    with pytest.raises(ValueError, match="x: expected last axis d_model=16"):
        ours(torch.randn(2, 3, 8, dtype=torch.float64))


def _copy_mha(ours, ref):
    ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
    ref.out_proj.weight.copy_(ours.W_o.weight)
    ref.out_proj.bias.copy_(ours.W_o.bias)


def _copy_common(ours, ref):
    ref.linear1.weight.copy_(ours.ffn.W_1.weight)
    ref.linear1.bias.copy_(ours.ffn.W_1.bias)
    ref.linear2.weight.copy_(ours.ffn.W_2.weight)
    ref.linear2.bias.copy_(ours.ffn.W_2.bias)
    for i in (1, 2, 3):
        if hasattr(ours, f"norm{i}"):
            getattr(ref, f"norm{i}").weight.copy_(getattr(ours, f"norm{i}").gamma)
            getattr(ref, f"norm{i}").bias.copy_(getattr(ours, f"norm{i}").beta)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch_transformer_encoder_layer(norm_first):
    torch.manual_seed(0)
    ours = _randomise(EncoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first).double())
    ref = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).double()
    with torch.no_grad():
        _copy_mha(ours.self_attn, ref.self_attn)
        _copy_common(ours, ref)
    tokens = torch.tensor([[3, 3, 3, 3, 3], [3, 3, 3, 0, 0]])
    x = torch.randn(2, 5, D, dtype=torch.float64)
    for need_weights in (False, True):
        out, _ = ours(x, padding_mask(tokens, 0), need_weights=need_weights)
        expected = ref(x, src_key_padding_mask=tokens == 0)
        torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch_transformer_decoder_layer(norm_first):
    torch.manual_seed(1)
    ours = _randomise(DecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first).double(), seed=1)
    ref = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).double()
    with torch.no_grad():
        _copy_mha(ours.self_attn, ref.self_attn)
        _copy_mha(ours.cross_attn, ref.multihead_attn)
        _copy_common(ours, ref)
    src = torch.tensor([[3, 3, 3, 3], [3, 3, 0, 0]])
    tgt = torch.tensor([[4, 4, 4, 4, 4], [4, 4, 4, 4, 0]])
    x, memory = torch.randn(2, 5, D, dtype=torch.float64), torch.randn(2, 4, D, dtype=torch.float64)
    expected = ref(x, memory, tgt_mask=~causal_mask(5)[0], tgt_key_padding_mask=tgt == 0,
                   memory_key_padding_mask=src == 0)
    self_mask = combine_masks(causal_mask(5), padding_mask(tgt, 0))
    for need_weights in (False, True):
        out, (w_self, w_cross) = ours(x, memory, self_mask, padding_mask(src, 0), need_weights=need_weights)
        # row 1, position 4 is a padded query: torch masks it the same way, so it is compared too
        torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
        if need_weights:
            assert w_self.shape == (2, H, 5, 5) and w_cross.shape == (2, H, 5, 4)
            assert torch.all(w_cross[1, :, :, 2:] == 0) and torch.all(w_self.triu(1) == 0)


def test_stacks_have_a_final_norm_only_when_pre_ln():
    assert Encoder(2, D, H, FF).norm is None and Encoder(2, D, H, FF, norm_first=True).norm is not None
    assert Decoder(2, D, H, FF).norm is None and Decoder(2, D, H, FF, norm_first=True).norm is not None
    enc = Encoder(2, D, H, FF)
    out, weights = enc(torch.randn(2, 3, D), need_weights=True)
    assert out.shape == (2, 3, D) and len(weights) == 2 and weights[0].shape == (2, H, 3, 3)


def test_sinusoidal_encoding_is_the_papers_formula():
    pe = sinusoidal_encoding(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == torch.float32
    pos, i = 7, 3
    assert math.isclose(pe[pos, 2 * i], math.sin(pos / 10000 ** (2 * i / 16)), abs_tol=1e-7)
    assert math.isclose(pe[pos, 2 * i + 1], math.cos(pos / 10000 ** (2 * i / 16)), abs_tol=1e-7)
    assert sinusoidal_encoding(5, 7).shape == (5, 7)    # odd widths work too
    positions = SinusoidalPositions(16, 50)
    x = torch.zeros(2, 4, 16)
    torch.testing.assert_close(positions(x, offset=3)[0], pe[3:7])
    with pytest.raises(ValueError, match="max_len=50"):
        positions(torch.zeros(1, 51, 16))
    learned = LearnedPositions(16, 50)
    assert learned(x).shape == (2, 4, 16) and learned.P.requires_grad


def test_embedding_scales_by_sqrt_d_model_and_checks_ids():
    emb = Embedding(10, 16)
    tokens = torch.tensor([[1, 2, 3]])
    torch.testing.assert_close(emb(tokens), emb.E[tokens] * 4.0)
    assert abs(emb.E.std().item() - 16 ** -0.5) < 0.05
    with pytest.raises(ValueError, match=r"tokens: expected ids in \[0, 10\), got values in \[1, 10\]"):
        emb(torch.tensor([[1, 10]]))
    with pytest.raises(TypeError, match=r"tokens: expected an integer tensor \(int64 or int32\), got torch.float32"):
        emb(torch.tensor([[1.0]]))
    with pytest.raises(ValueError, match=r"tokens: expected shape \(B, T\)"):
        emb(torch.tensor([1, 2]))


def test_feedforward_is_position_wise_with_paper_init():
    ffn = FeedForward(D, FF)
    assert torch.all(ffn.W_1.bias == 0) and torch.all(ffn.W_2.bias == 0)
    bound = math.sqrt(6 / (D + FF))
    assert ffn.W_1.weight.abs().max() <= bound
    x = torch.randn(2, 5, D)
    out = ffn(x)
    torch.testing.assert_close(out[:, 2], ffn(x[:, 2:3])[:, 0])
