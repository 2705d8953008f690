"""The whole model: shapes, weights, masks (causality, padding), init, loss, variants, training, precision."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch_helpers import SMALL, lively_model, random_batch, with_kernel

from transformer_course.config import ModelConfig
from transformer_course.torch.loss import cross_entropy, fast_cross_entropy
from transformer_course.torch.transformer import Transformer


def test_forward_shapes_and_weights_dictionary():
    model = lively_model()
    src, tgt = random_batch()
    logits = model(src, tgt)
    assert logits.shape == (4, 6, SMALL.tgt_vocab_size)
    logits_w, weights = model(src, tgt, need_weights=True)
    torch.testing.assert_close(logits_w, logits, atol=1e-4, rtol=1e-4)
    assert len(weights["encoder"]) == 2 and weights["encoder"][0].shape == (4, 2, 7, 7)
    assert weights["decoder_self"][1].shape == (4, 2, 6, 6)
    assert weights["decoder_cross"][0].shape == (4, 2, 6, 7)
    assert torch.all(weights["decoder_cross"][0][1, :, :, -2:] == 0)   # padded source keys get no weight
    assert torch.all(weights["decoder_self"][0].triu(1) == 0)           # no look-ahead
    assert model.config is SMALL


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal_and_padding_is_invisible(norm_first):
    model = lively_model(SMALL.replace(norm_first=norm_first))
    src, tgt = random_batch()
    logits = model(src, tgt)
    changed = tgt.clone()
    changed[:, 4:] = 5                                   # change the future: the past must not move
    torch.testing.assert_close(model(src, changed)[:, :4], logits[:, :4])
    longer = torch.cat([src, torch.zeros(4, 3, dtype=src.dtype)], 1)  # more source padding: nothing changes
    torch.testing.assert_close(model(longer, tgt), logits, atol=1e-5, rtol=1e-5)


def test_paper_initialisation_and_initial_loss_near_ln_v():
    config = ModelConfig(src_vocab_size=500, tgt_vocab_size=500, d_model=64, n_heads=4, d_ff=128,
                         n_encoder_layers=2, n_decoder_layers=2, dropout=0.0)
    torch.manual_seed(0)
    model = Transformer(config)
    assert abs(model.src_embedding.E.std().item() - 64 ** -0.5) < 0.01
    for name, p in model.named_parameters():
        if name.endswith(("bias", "beta")):
            assert torch.all(p == 0), name
        if name.endswith("gamma"):
            assert torch.all(p == 1), name
    w = model.encoder.layers[0].self_attn.W_q.weight
    assert w.abs().max() <= math.sqrt(6 / (64 + 64))
    src = torch.randint(4, 500, (8, 10))
    tgt = torch.randint(4, 500, (8, 9))
    loss = cross_entropy(model(src, tgt[:, :-1]), tgt[:, 1:], pad_id=0)
    assert abs(loss.item() - math.log(500)) < 1.0


def test_weight_tying_and_untied_variant():
    tied = Transformer(SMALL)
    assert tied.W_out is None
    src, tgt = random_batch()
    seen = []
    tied.decoder.register_forward_hook(lambda module, inputs, output: seen.append(output[0]))
    logits = tied(src, tgt)                              # the decoder's output y times E^T: no W_out, no bias
    torch.testing.assert_close(logits, seen[0] @ tied.tgt_embedding.E.T)
    untied = Transformer(SMALL.replace(tie_output_embedding=False, positional="learned"))
    assert untied.W_out.weight.shape == (SMALL.tgt_vocab_size, SMALL.d_model)
    assert untied(src, tgt).shape == (4, 6, SMALL.tgt_vocab_size)
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == SMALL.tgt_vocab_size * SMALL.d_model + SMALL.max_len * SMALL.d_model


def test_teaching_and_fast_losses_equal_torch_cross_entropy_with_smoothing_and_padding():
    """The hand-written loss (teaching) and the fused one (training) are both F.cross_entropy, gradients too."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(1, 11, (3, 5), generator=g)
    targets[0, 3:] = 0
    for eps in (0.0, 0.1):
        ref = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1), ignore_index=0, label_smoothing=eps)
        g_ref, = torch.autograd.grad(ref, logits)
        for loss in (cross_entropy, fast_cross_entropy):
            ours = loss(logits, targets, pad_id=0, label_smoothing=eps)
            torch.testing.assert_close(ours, ref, atol=1e-12, rtol=1e-12)
            g_ours, = torch.autograd.grad(ours, logits)
            torch.testing.assert_close(g_ours, g_ref, atol=1e-12, rtol=1e-12)
    for loss in (cross_entropy, fast_cross_entropy):         # no real token: 0, not 0 / 0
        assert loss(logits, torch.zeros(3, 5, dtype=torch.long), pad_id=0).item() == 0.0
    with pytest.raises(ValueError, match=r"targets: expected shape \(B=3, T=5\), got \(3, 4\)"):
        cross_entropy(logits, targets[:, :4], pad_id=0)
    with pytest.raises(ValueError, match="label_smoothing"):
        cross_entropy(logits, targets, pad_id=0, label_smoothing=1.0)


def test_a_few_adam_steps_overfit_a_tiny_batch():
    torch.manual_seed(0)
    model = Transformer(SMALL.replace(d_model=32, n_heads=4, d_ff=64))
    src, tgt = random_batch(B=4, S=6, T=6, seed=1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    first = None
    for _ in range(60):
        loss = cross_entropy(model(src, tgt[:, :-1]), tgt[:, 1:], pad_id=0)
        first = first if first is not None else loss.item()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    assert loss.item() < 0.2 * first


def test_dropout_is_active_only_in_training_mode():
    model = Transformer(SMALL.replace(dropout=0.3))
    src, tgt = random_batch()
    model.eval()
    torch.testing.assert_close(model(src, tgt), model(src, tgt))
    model.train()
    assert not torch.allclose(model(src, tgt), model(src, tgt))


def test_bad_inputs_raise_clear_errors():
    model = Transformer(SMALL)
    src, tgt = random_batch()
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, 23\)"):
        model(src + 100, tgt)
    with pytest.raises(ValueError, match="tgt_in: expected batch size 4"):
        model(src, tgt[:2])
    with pytest.raises(TypeError, match="config: expected a ModelConfig"):
        Transformer({"d_model": 16})
    with pytest.raises(ValueError, match=r"memory: expected shape \(B=4, S, d_model=16\)"):
        model.decode(tgt, torch.zeros(4, 7, 8))


def test_explicit_path_everywhere_gives_the_same_logits():
    model = lively_model()
    src, tgt = random_batch()
    fused = model(src, tgt)
    torch.testing.assert_close(with_kernel(model, False)(src, tgt), fused, atol=1e-4, rtol=1e-4)
