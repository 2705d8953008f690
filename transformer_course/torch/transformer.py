"""The encoder-decoder Transformer of Vaswani et al. (2017), built from the modules of this package."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from .decoder import Decoder, DecoderCache
from .embedding import Embedding, output_projection
from .encoder import Encoder
from .masks import causal_mask, combine_masks, padding_mask
from .positional import LearnedPositions, SinusoidalPositions, check_length

__all__ = ["Transformer"]


class Transformer(nn.Module):
    """Embeddings (x sqrt(D)) + positions -> dropout -> encoder / decoder -> linear -> logits.

    Paper defaults from `config`: post-LN (`norm_first=True` for pre-LN), sinusoidal positions
    (`positional="learned"` for learned ones added to the embeddings, "rope" or "alibi" for a position term
    inside every self-attention), the decoder embedding tied to the output projection
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
        if c.attention_positional is None:
            positions = SinusoidalPositions if c.positional == "sinusoidal" else LearnedPositions
            self.positions = positions(c.d_model, c.max_len)
        else:
            self.positions = None                        # nothing added to the embeddings: RoPE / ALiBi
        # by keyword: two dropouts and eleven hyper-parameters in a row are easy to swap unnoticed
        layers = dict(d_model=c.d_model, n_heads=c.n_heads, d_ff=c.d_ff, dropout=c.dropout,
                      attention_dropout=c.attention_dropout, norm_first=c.norm_first, eps=c.layer_norm_eps,
                      positional=c.attention_positional, max_len=c.max_len, fused=c.fused_attention)
        self.encoder = Encoder(c.n_encoder_layers, **layers)
        self.decoder = Decoder(c.n_decoder_layers, **layers)
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

    def _add_positions(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x (B, T, D) + the position vectors of positions offset .. offset + T - 1; with RoPE or ALiBi nothing
        is added (the self-attention layers hold the position term), but the same length limit holds."""
        if self.positions is None:
            check_length(x, offset, self.config.max_len)
            return x                                     # (B, T, D)
        return self.positions(x, offset)                 # (B, T, D)

    # ------------------------------------------------------------------ the two halves
    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None,
               need_weights: bool = False) -> torch.Tensor | tuple[torch.Tensor, list]:
        """src (B, S) -> memory (B, S, D); with need_weights, (memory, [weights (B, H, S, S) per encoder layer])."""
        c = self.config
        if src_mask is None:
            src_mask = self.make_src_mask(src)           # (B, 1, S)
        x = self.src_embedding(src, "src")               # (B, S) -> (B, S, D)
        x = self._add_positions(x)                       # (B, S, D)
        x = F.dropout(x, c.dropout, self.training)       # (B, S, D): on embeddings + positions (section 5.4)
        memory, weights = self.encoder(x, src_mask, need_weights)  # (B, S, D)
        return (memory, weights) if need_weights else memory

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor | None = None,
               tgt_mask: torch.Tensor | None = None, need_weights: bool = False,
               cache: DecoderCache | None = None) -> torch.Tensor | tuple[torch.Tensor, dict]:
        """tgt_in (B, T), memory (B, S, D) -> logits (B, T, V_tgt) (and the weights with need_weights).

        src_mask must be given when the source had padding (encode's default is `make_src_mask(src)`).
        weights = {"self": [(B, H, T, T)], "cross": [(B, H, T, S)]}. While generating, `cache` (from
        `new_cache`, eval mode) holds the keys and values of the positions decoded so far: tgt_in then holds only
        the positions after them (usually the newest token), and the logits are theirs.
        """
        c = self.config
        B, T = tgt_in.shape
        if memory.dim() != 3 or memory.shape[0] != B or memory.shape[2] != c.d_model:
            raise ValueError(f"memory: expected shape (B={B}, S, d_model={c.d_model}), got {tuple(memory.shape)}")
        self._check_memory_dtype(memory)
        past = 0 if cache is None else cache.length      # the new positions are past .. past + T - 1
        if tgt_mask is None and cache is None:
            tgt_mask = self.make_tgt_mask(tgt_in)        # (B, T, T)
        elif tgt_mask is None and T > 1:                 # several new positions: causal, shifted by the past
            tgt_mask = torch.ones(T, past + T, dtype=torch.bool, device=tgt_in.device).tril(past)[None]  # (1, T, t)
        y = self.tgt_embedding(tgt_in, "tgt_in")         # (B, T) -> (B, T, D)
        y = self._add_positions(y, past)                 # (B, T, D)
        y = F.dropout(y, c.dropout, self.training)       # (B, T, D)
        y, weights = self.decoder(y, memory, tgt_mask, src_mask, need_weights, cache)  # (B, T, D)
        W = self.tgt_embedding.E if c.tie_output_embedding else self.W_out.weight  # (V, D) both
        logits = output_projection(y, W)                 # (B, T, D) -> (B, T, V)
        return (logits, weights) if need_weights else logits

    def _check_memory_dtype(self, memory: torch.Tensor) -> None:
        """memory must have the weights' dtype, or a half precision that autocast gives encode's output: torch
        does not convert it (float64 memory from NumPy would fail in the first cross-attention matmul with
        "mat1 and mat2 must have the same dtype", which names neither the argument nor the fix)."""
        dtype = self.tgt_embedding.E.dtype
        if memory.dtype != dtype and memory.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError(f"memory: expected a tensor of the model's dtype {dtype} (or float16/bfloat16 under "
                            f"autocast), got {memory.dtype}; convert it with memory.to({dtype})")

    def new_cache(self) -> DecoderCache:
        """An empty key/value cache for `decode` while generating (see `decoding.greedy_decode`)."""
        return DecoderCache(len(self.decoder.layers))

    # ------------------------------------------------------------------ the whole model
    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None,
                need_weights: bool = False) -> torch.Tensor | tuple[torch.Tensor, dict]:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V_tgt). Masks are built from pad_id when None.

        With need_weights=True returns (logits, weights), weights = {"encoder": [(B, H, S, S)] per layer,
        "decoder_self": [(B, H, T, T)], "decoder_cross": [(B, H, T, S)]}; attention is then written out
        (the fused kernel never forms the weights).
        """
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"tgt_in: expected batch size {src.shape[0]} (as src), got {tgt_in.shape[0]}")
        if src_mask is None:
            src_mask = self.make_src_mask(src)           # (B, 1, S)
        if not need_weights:
            memory = self.encode(src, src_mask)          # (B, S, D)
            return self.decode(tgt_in, memory, src_mask, tgt_mask)  # (B, T, V)
        memory, enc_weights = self.encode(src, src_mask, need_weights=True)  # (B, S, D)
        logits, dec_weights = self.decode(tgt_in, memory, src_mask, tgt_mask, need_weights=True)  # (B, T, V)
        weights = {"encoder": enc_weights, "decoder_self": dec_weights["self"],
                   "decoder_cross": dec_weights["cross"]}
        return logits, weights
