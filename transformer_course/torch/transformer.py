"""The encoder-decoder Transformer of Vaswani et al. (2017), built from the modules of this package."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from .decoder import Decoder, DecoderCache
from .embedding import Embedding, check_tokens
from .encoder import Encoder
from .masks import causal_mask, combine_masks, padding_mask
from .positional import LearnedPositions, SinusoidalPositions

__all__ = ["Transformer"]


class Transformer(nn.Module):
    """Embeddings (x sqrt(D)) + positions -> dropout -> encoder / decoder -> linear -> logits.

    Paper defaults from `config`: post-LN (`norm_first=True` for pre-LN), sinusoidal positions
    (`positional="learned"` for learned ones), the decoder embedding tied to the output projection
    (`tie_output_embedding`; the output layer has no bias in either case). Source and target positions share
    one table. Initialisation: Xavier uniform projections, N(0, D^-0.5) embeddings, zero biases.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        if not isinstance(config, ModelConfig):
            raise TypeError(f"config: expected a ModelConfig, got {type(config).__name__}")
        self.config = config
        c = config
        self.src_embedding = Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embedding = Embedding(c.tgt_vocab_size, c.d_model)
        positions = SinusoidalPositions if c.positional == "sinusoidal" else LearnedPositions
        self.positions = positions(c.d_model, c.max_len)
        self.dropout = nn.Dropout(c.dropout)             # on embeddings + positions (paper section 5.4)
        self.encoder = Encoder(c.n_encoder_layers, c.d_model, c.n_heads, c.d_ff, c.dropout,
                               c.attention_dropout, c.norm_first, c.layer_norm_eps)
        self.decoder = Decoder(c.n_decoder_layers, c.d_model, c.n_heads, c.d_ff, c.dropout,
                               c.attention_dropout, c.norm_first, c.layer_norm_eps)
        if c.tie_output_embedding:
            self.W_out = None                            # logits = x E_tgt^T (Press & Wolf 2017)
        else:
            self.W_out = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
            nn.init.xavier_uniform_(self.W_out.weight)

    # ------------------------------------------------------------------ masks
    def make_src_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, S): every query may attend to every real source token."""
        return padding_mask(src, self.config.pad_id)     # (B, 1, S)

    def make_tgt_mask(self, tgt_in: torch.Tensor) -> torch.Tensor:
        """(B, T, T): causal AND not padding."""
        T = tgt_in.shape[1]
        return combine_masks(causal_mask(T, tgt_in.device), padding_mask(tgt_in, self.config.pad_id))  # (B, T, T)

    # ------------------------------------------------------------------ the two halves
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None, need_weights: bool = False):
        """src (B, S) -> memory (B, S, D); with need_weights, (memory, [weights (B, H, S, S) per layer])."""
        check_tokens(src, self.config.src_vocab_size, "src")
        if src_mask is None:
            src_mask = self.make_src_mask(src)           # (B, 1, S)
        x = self.src_embedding(src, "src")               # (B, S) -> (B, S, D)
        x = self.dropout(self.positions(x))              # (B, S, D)
        memory, weights = self.encoder(x, src_mask, need_weights)  # (B, S, D)
        return (memory, weights) if need_weights else memory

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
               cache: DecoderCache | None = None, tgt_mask: torch.Tensor | None = None,
               need_weights: bool = False):
        """tgt_in (B, T), memory (B, S, D) -> logits (B, T, V_tgt) (and the weights with need_weights).

        src_mask must be given when the source had padding (encode's default is `make_src_mask(src)`).
        With a `cache` (see `new_cache`), tgt_in holds only the new positions; earlier ones are in the cache.
        """
        check_tokens(tgt_in, self.config.tgt_vocab_size, "tgt_in")
        B, T = tgt_in.shape
        if memory.dim() != 3 or memory.shape[0] != B or memory.shape[2] != self.config.d_model:
            raise ValueError(f"memory: expected shape (B={B}, S, d_model={self.config.d_model}), "
                             f"got {tuple(memory.shape)}")
        offset = cache.length if cache is not None else 0
        if tgt_mask is None:
            if cache is None:
                tgt_mask = self.make_tgt_mask(tgt_in)    # (B, T, T)
            elif T > 1:                                  # several new positions: causal, shifted by the past
                tgt_mask = torch.ones(T, offset + T, dtype=torch.bool, device=tgt_in.device).tril(offset)[None]
            # one new position may attend to every cached one: no mask at all
        y = self.tgt_embedding(tgt_in, "tgt_in")         # (B, T) -> (B, T, D)
        y = self.dropout(self.positions(y, offset))      # (B, T, D)
        y, weights = self.decoder(y, memory, tgt_mask, src_mask, need_weights, cache)  # (B, T, D)
        logits = self.project(y)                         # (B, T, V)
        return (logits, weights) if need_weights else logits

    def project(self, y: torch.Tensor) -> torch.Tensor:
        """The pre-softmax linear map (B, T, D) -> (B, T, V_tgt)."""
        if self.W_out is None:
            return F.linear(y, self.tgt_embedding.E)     # (B, T, D) @ (D, V) -> (B, T, V)
        return self.W_out(y)                             # (B, T, V)

    def new_cache(self) -> DecoderCache:
        """An empty key/value cache for incremental decoding (see `decoding.greedy_decode`)."""
        return DecoderCache(len(self.decoder.layers))

    # ------------------------------------------------------------------ the whole model
    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None, need_weights: bool = False):
        """src (B, S), tgt_in (B, T) -> logits (B, T, V_tgt).

        With need_weights=True returns (logits, weights), weights = {"encoder": [(B, H, S, S)] per layer,
        "decoder_self": [(B, H, T, T)], "decoder_cross": [(B, H, T, S)]}; this uses the explicit attention path.
        """
        check_tokens(src, self.config.src_vocab_size, "src")
        check_tokens(tgt_in, self.config.tgt_vocab_size, "tgt_in")
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"tgt_in: expected batch size {src.shape[0]} (as src), got {tgt_in.shape[0]}")
        if src_mask is None:
            src_mask = self.make_src_mask(src)           # (B, 1, S)
        if need_weights:
            memory, enc_weights = self.encode(src, src_mask, need_weights=True)  # (B, S, D)
            logits, dec_weights = self.decode(tgt_in, memory, src_mask, tgt_mask=tgt_mask,
                                              need_weights=True)  # (B, T, V)
            return logits, {"encoder": enc_weights, "decoder_self": dec_weights["self"],
                            "decoder_cross": dec_weights["cross"]}
        memory = self.encode(src, src_mask)              # (B, S, D)
        return self.decode(tgt_in, memory, src_mask, tgt_mask=tgt_mask)  # (B, T, V)
