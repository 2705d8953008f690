"""Shared helpers for the PyTorch tests: small models whose greedy outputs vary from step to step."""
from __future__ import annotations

import torch

from transformer_course.config import ModelConfig
from transformer_course.torch.transformer import Transformer

# small on purpose: the whole folder runs in seconds on a 2-core CPU
SMALL = ModelConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2,
                    n_decoder_layers=2, dropout=0.0, max_len=64)


def lively_model(config: ModelConfig = SMALL, seed: int = 0, scale: float = 1.0) -> Transformer:
    """A random model whose parameters are scaled up so that its argmax changes along the sequence."""
    torch.manual_seed(seed)
    model = Transformer(config)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(3.0 * scale)
            else:
                p.normal_(0.0, 0.3)
    return model.eval()


def with_kernel(model: Transformer, fused: bool) -> Transformer:
    """The same model (weights, mode) built with the fused attention kernel or with attention written out."""
    twin = Transformer(model.config.replace(fused_attention=fused))
    twin.load_state_dict(model.state_dict())
    return twin.train(model.training)


def random_batch(config: ModelConfig = SMALL, B: int = 4, S: int = 7, T: int = 6, seed: int = 0):
    """Source and target ids in [4, V) with some right padding (ids 0-3 are pad, bos, eos, unk)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, config.src_vocab_size, (B, S), generator=g)
    tgt = torch.randint(4, config.tgt_vocab_size, (B, T), generator=g)
    src[1 % B, S - 2:] = config.pad_id
    tgt[2 % B, T - 3:] = config.pad_id
    return src, tgt


_TRAINED = {}


def trained_model(norm_first: bool = False, steps: int = 80) -> Transformer:
    """SMALL briefly trained to reverse sequences: its outputs vary along the sequence and end with EOS,
    which random models (that repeat one token) do not. Cached: built once per test session."""
    if norm_first in _TRAINED:
        return _TRAINED[norm_first]
    from transformer_course.torch.loss import cross_entropy
    torch.manual_seed(0)
    model = Transformer(SMALL.replace(norm_first=norm_first, d_model=32, n_heads=4, d_ff=64))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.98), eps=1e-9)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        src = torch.randint(4, 19, (32, 6), generator=g)
        body = src.flip(1)
        bos = torch.full((32, 1), 1)
        eos = torch.full((32, 1), 2)
        tgt_in, tgt_out = torch.cat([bos, body], 1), torch.cat([body, eos], 1)
        loss = cross_entropy(model(src, tgt_in), tgt_out, pad_id=0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    _TRAINED[norm_first] = model.eval()
    return model.eval()
