"""Chapter 7's two small encoder tasks, shared by the chapter and by `benchmarks/experiments.py` (which reruns
them over several seeds), so that both train exactly the same models on exactly the same data.

- **Sorting** (the warm-up study): a sequence of `SORT_LENGTH` tokens; the target at position i is the i-th
  smallest token. `sort_batch` draws a batch, `Tagger` predicts one token per position.
- **Repeat detection** (the classifier): 4 to `REPEAT_LENGTH` distinct tokens, padded; label 1 when one token was
  copied over another. `repeat_batch` draws a batch, `RepeatClassifier` pools the encoder's output over the real
  tokens into two logits; its switches take the positions or the attention away for the chapter's controls.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .embedding import Embedding
from .encoder import Encoder
from .masks import padding_mask
from .positional import SinusoidalPositions

__all__ = ["sort_batch", "Tagger", "repeat_batch", "silence_attention", "RepeatClassifier"]   # and the constants

SORT_VOCAB, SORT_LENGTH = 16, 10     # output classes (ids 0-3 are kept for the special tokens of chapter 8), length
REPEAT_VOCAB, REPEAT_LENGTH, REPEAT_PAD = 20, 8, 0   # ids 1..19 are tokens, 0 pads


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return value


def sort_batch(generator: torch.Generator, batch_size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the sorting task: token ids 4..15, and the target at position i, the i-th smallest token of
    the sequence. Returns (tokens, targets), each (batch_size, SORT_LENGTH)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    _positive_int("batch_size", batch_size)
    x = torch.randint(4, SORT_VOCAB, (batch_size, SORT_LENGTH), generator=generator)   # (B, S)
    return x, x.sort(dim=1).values                                                     # (B, S), (B, S)


class Tagger(nn.Module):
    """Embedding + sinusoidal positions -> Encoder (4 heads, d_ff = 4 d_model) -> one prediction per position."""

    def __init__(self, n_layers: int, d_model: int, norm_first: bool):
        super().__init__()
        self.embed = Embedding(SORT_VOCAB, d_model)
        self.positions = SinusoidalPositions(d_model, max_len=64)
        self.encoder = Encoder(n_layers, d_model, n_heads=4, d_ff=4 * d_model, norm_first=norm_first)
        self.out = nn.Linear(d_model, SORT_VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.encoder(self.positions(self.embed(tokens)))     # (B, S, D)
        return self.out(h)                                           # (B, S, V)


def repeat_batch(n: int, rng: np.random.Generator, min_len: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """n sequences of min_len..REPEAT_LENGTH distinct tokens from 1..19, padded with 0, and their labels: 1 when
    one token was copied over another position (so it occurs twice), 0 when all tokens differ. Half of the labels
    are 1 on average. Returns (ids (n, REPEAT_LENGTH), labels (n,))."""
    _positive_int("n", n)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    if isinstance(min_len, bool) or not isinstance(min_len, int) or not 2 <= min_len <= REPEAT_LENGTH:
        raise ValueError(f"min_len: expected an int in [2, {REPEAT_LENGTH}] (a copy needs two positions), "
                         f"got {min_len!r}")
    S = REPEAT_LENGTH
    ids = rng.random((n, REPEAT_VOCAB - 1)).argsort(axis=1)[:, :S] + 1   # (n, S) distinct tokens per row
    lengths = rng.integers(min_len, S + 1, size=n)                        # (n,)
    y = rng.integers(0, 2, size=n)                                        # (n,)
    src = rng.integers(0, lengths)                                        # which token is copied ...
    dst = (src + rng.integers(1, lengths)) % lengths                      # ... onto another position
    rows = np.flatnonzero(y)
    ids[rows, dst[rows]] = ids[rows, src[rows]]
    ids[np.arange(S)[None] >= lengths[:, None]] = REPEAT_PAD              # (n, S)
    return torch.from_numpy(ids), torch.from_numpy(y)


def silence_attention(layer: nn.Module) -> torch.utils.hooks.RemovableHandle:
    """Makes an encoder layer's self-attention sublayer output zeros: the residual then adds nothing, and every
    position sees only itself. Returns the hook's handle (handle.remove() restores the layer)."""
    if not hasattr(layer, "self_attn"):
        raise TypeError(f"layer: expected an EncoderLayer (with a self_attn sublayer), got {type(layer).__name__}")
    return layer.self_attn.register_forward_hook(lambda m, args, out: (torch.zeros_like(out[0]), out[1]))


class RepeatClassifier(nn.Module):
    """Embedding (+ sinusoidal positions) -> Encoder -> mean over the real tokens -> linear head (2 logits).
    positions=False drops the positional encoding; attention=False silences every layer's self-attention (an
    FFN-only stack, each position seeing only itself)."""

    def __init__(self, d_model: int = 32, n_layers: int = 2, n_heads: int = 4, positions: bool = True,
                 attention: bool = True):
        super().__init__()
        self.embed = Embedding(REPEAT_VOCAB, d_model)
        self.positions = SinusoidalPositions(d_model, max_len=64) if positions else nn.Identity()
        self.encoder = Encoder(n_layers, d_model, n_heads, 4 * d_model, dropout=0.0)
        self.head = nn.Linear(d_model, 2)
        if not attention:
            for layer in self.encoder.layers:
                silence_attention(layer)

    def forward(self, tokens: torch.Tensor, need_weights: bool = False):
        mask = padding_mask(tokens, REPEAT_PAD)                         # (B, 1, S): True = real token
        h, weights = self.encoder(self.positions(self.embed(tokens)), mask, need_weights)  # (B, S, D)
        real = mask.transpose(1, 2).float()                             # (B, S, 1)
        pooled = (h * real).sum(dim=1) / real.sum(dim=1)                # (B, D): mean over real tokens
        logits = self.head(pooled)                                      # (B, 2)
        return (logits, weights) if need_weights else logits
