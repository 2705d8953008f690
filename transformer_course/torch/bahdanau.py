"""Bahdanau et al. (2015): a bidirectional GRU encoder and a GRU decoder with additive attention, and the
plain RNN encoder-decoder (Cho et al. 2014) that squeezes the source into one fixed context vector.

`BahdanauSeq2Seq(..., attention=False)` is the plain model, for the with/without-attention comparison.
Deviations from the paper, for brevity: the output layer is one linear map of [s_i; c_i; E y_{i-1}] (the paper
uses a maxout layer on the same three inputs); PyTorch's default GRU initialisation (the paper: orthogonal
recurrent matrices). GRU gates follow torch.nn.GRU (reset, update, new).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .attention import masked_softmax
from .embedding import check_tokens

__all__ = ["BahdanauSeq2Seq"]


class BahdanauSeq2Seq(nn.Module):
    """RNN encoder-decoder; with attention=True the decoder attends to every annotation h_j at every step.

    forward(src, tgt_in, src_lengths=None) -> (logits (B, T, V_tgt), weights (B, T, S) or None).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, emb: int, hidden: int, attention: bool = True,
                 pad_id: int = 0, attn_size: int | None = None):
        super().__init__()
        for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("emb", emb), ("hidden", hidden)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        self.src_vocab, self.tgt_vocab, self.pad_id = src_vocab, tgt_vocab, pad_id
        self.hidden = hidden
        self.attention = attention
        A = attn_size or hidden
        self.src_embedding = nn.Embedding(src_vocab, emb)
        self.tgt_embedding = nn.Embedding(tgt_vocab, emb)
        self.encoder = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        if attention:
            self.W_s = nn.Linear(hidden, hidden)         # s_0 = tanh(W_s <-h_1): from the backward annotation
            self.W_a = nn.Parameter(torch.empty(hidden, A))      # e_ij = v_a . tanh(s_{i-1} W_a + h_j U_a)
            self.U_a = nn.Parameter(torch.empty(2 * hidden, A))
            self.v_a = nn.Parameter(torch.empty(A))
            for p in (self.W_a, self.U_a):
                nn.init.xavier_uniform_(p)
            nn.init.normal_(self.v_a, std=A ** -0.5)
        else:
            self.W_s = nn.Linear(2 * hidden, hidden)     # s_0 = tanh(W_s c): from the fixed context
        self.decoder_cell = nn.GRUCell(emb + 2 * hidden, hidden)  # input: [E y_{i-1}; c_i]
        self.W_out = nn.Linear(hidden + 2 * hidden + emb, tgt_vocab)  # [s_i; c_i; E y_{i-1}] -> logits

    # ------------------------------------------------------------------ encoder
    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor | None = None):
        """src (B, S) -> (annotations (B, S, 2h), fixed context (B, 2h), s_0 (B, h), mask (B, S))."""
        check_tokens(src, self.src_vocab, "src")
        B, S = src.shape
        mask = src != self.pad_id                        # (B, S)
        if src_lengths is None:
            src_lengths = mask.sum(1)                    # (B,): assumes right padding
        if src_lengths.shape != (B,):
            raise ValueError(f"src_lengths: expected shape (B={B},), got {tuple(src_lengths.shape)}")
        if int(src_lengths.min()) < 1:
            raise ValueError("src: every source needs at least one non-pad token")
        x = self.src_embedding(src)                      # (B, S) -> (B, S, E)
        packed = pack_padded_sequence(x, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)                  # h_n: (2, B, h), forward and backward finals
        annotations, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, 2h) = [->h_j; <-h_j]
        context = torch.cat([h_n[0], h_n[1]], dim=-1)    # (B, 2h): the whole source in one vector
        if self.attention:
            s0 = torch.tanh(self.W_s(annotations[:, 0, self.hidden:]))  # (B, h): <-h_1 read the whole source
        else:
            s0 = torch.tanh(self.W_s(context))           # (B, h)
        return annotations, context, s0, mask

    # ------------------------------------------------------------------ one decoder step
    def decode_step(self, y_prev: torch.Tensor, s_prev: torch.Tensor, annotations: torch.Tensor,
                    keys: torch.Tensor | None, context: torch.Tensor, mask: torch.Tensor):
        """y_prev (B,), s_prev (B, h) -> (logits (B, V), s (B, h), weights (B, S) or None).

        keys = annotations @ U_a, computed once per source (the h_j U_a term of the additive score).
        """
        e = self.tgt_embedding(y_prev)                   # (B,) -> (B, E)
        if self.attention:
            query = s_prev @ self.W_a                    # (B, h) -> (B, A)
            scores = torch.tanh(query[:, None, :] + keys) @ self.v_a  # (B, S, A) -> (B, S): additive_scores
            weights = masked_softmax(scores, mask)       # (B, S)
            c = (weights[:, :, None] * annotations).sum(1)  # (B, S, 1) * (B, S, 2h) -> (B, 2h)
        else:
            weights = None
            c = context                                  # (B, 2h): the same vector at every step
        s = self.decoder_cell(torch.cat([e, c], dim=-1), s_prev)  # (B, E + 2h) -> (B, h)
        logits = self.W_out(torch.cat([s, c, e], dim=-1))  # (B, h + 2h + E) -> (B, V)
        return logits, s, weights

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, src_lengths: torch.Tensor | None = None):
        """Teacher forcing: src (B, S), tgt_in (B, T) -> (logits (B, T, V), weights (B, T, S) or None)."""
        check_tokens(tgt_in, self.tgt_vocab, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in: expected batch size {src.shape[0]} (as src), got {tgt_in.shape[0]}")
        annotations, context, s, mask = self.encode(src, src_lengths)  # (B, S, 2h), (B, 2h), (B, h), (B, S)
        keys = annotations @ self.U_a if self.attention else None   # (B, S, A)
        all_logits, all_weights = [], []
        for t in range(tgt_in.shape[1]):
            logits, s, weights = self.decode_step(tgt_in[:, t], s, annotations, keys, context, mask)  # (B, V)
            all_logits.append(logits)
            all_weights.append(weights)
        logits = torch.stack(all_logits, dim=1)          # (B, T, V)
        weights = torch.stack(all_weights, dim=1) if self.attention else None  # (B, T, S)
        return logits, weights

    @torch.no_grad()
    def generate(self, src: torch.Tensor, max_len: int | None = None, bos_id: int = 1, eos_id: int = 2,
                 src_lengths: torch.Tensor | None = None):
        """Greedy decoding: src (B, S) -> (tokens (B, L) without BOS, EOS then pad; weights (B, L, S) or None)."""
        was_training = self.training
        self.eval()
        B, S = src.shape
        max_len = S + 50 if max_len is None else max_len
        if not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"max_len: expected a positive int, got {max_len!r}")
        annotations, context, s, mask = self.encode(src, src_lengths)
        keys = annotations @ self.U_a if self.attention else None   # (B, S, A)
        y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)  # (B,)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)     # (B,)
        tokens, all_weights = [], []
        for _ in range(max_len):
            logits, s, weights = self.decode_step(y, s, annotations, keys, context, mask)  # (B, V)
            y = logits.argmax(-1).masked_fill(finished, self.pad_id)  # (B,)
            tokens.append(y)
            all_weights.append(weights)
            finished |= y == eos_id
            if bool(finished.all()):
                break
        self.train(was_training)
        tokens = torch.stack(tokens, dim=1)              # (B, L)
        weights = torch.stack(all_weights, dim=1) if self.attention else None  # (B, L, S)
        return tokens, weights
