"""Bahdanau et al. (2015): a bidirectional GRU encoder and a GRU decoder with additive attention, and the
plain RNN encoder-decoder (Cho et al. 2014) that squeezes the source into one fixed context vector.

`BahdanauEncoder` and `BahdanauDecoderStep` are the twins of the NumPy functions of the same names in
`transformer_course.numpy.bahdanau`; `BahdanauSeq2Seq` puts embeddings, the initial decoder state and an
output layer around them. `BahdanauSeq2Seq(..., attention=False)` is the plain model, for the with/without
attention comparison.

Deviations from the paper, for brevity: the output layer is one linear map of [s_t; c_t; E y_{t-1}] (the paper
uses a maxout layer on the same three inputs); PyTorch's default GRU initialisation (the paper: orthogonal
recurrent matrices). GRU gates follow torch.nn.GRU (reset, update, new).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..checks import check_id
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..utils import eval_mode
from .attention import additive_scores, masked_softmax
from .embedding import check_tokens

__all__ = ["BahdanauEncoder", "BahdanauDecoderStep", "BahdanauSeq2Seq"]


class BahdanauEncoder(nn.GRU):
    """A bidirectional GRU over right-padded sequences: annotations h_i = [->h_i; <-h_i]. Padding is skipped
    (packed sequences), so the backward direction starts at each sequence's last real position."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__(input_size, hidden_size, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, S, in), mask (B, S) True at real tokens -> annotations (B, S, 2D), zero at padding."""
        if x.dim() != 3:
            raise ValueError(f"x: expected shape (B, S, input_size), got {tuple(x.shape)}")
        B, S, _ = x.shape
        if mask is None:
            mask = torch.ones(B, S, dtype=torch.bool, device=x.device)  # (B, S)
        elif mask.shape != (B, S) or mask.dtype != torch.bool:
            raise ValueError(f"mask: expected a bool tensor of shape (B={B}, S={S}), got {mask.dtype} "
                             f"{tuple(mask.shape)}")
        lengths = mask.sum(1)                            # (B,): right padding
        if int(lengths.min()) < 1:
            raise ValueError("mask: expected at least one real position in every sequence, got an empty one")
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = super().forward(packed)
        annotations, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, 2D)
        return annotations


class BahdanauDecoderStep(nn.Module):
    """One step t of Bahdanau's decoder: additive attention over the annotations, then a GRU cell.

        e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i);  alpha_t = softmax(e_t);  c_t = sum_i alpha_ti h_i;
        s_t = GRU([E y_{t-1}; c_t], s_{t-1})

    W_a (D, A), U_a (2D, A) Xavier uniform, v_a (A,) ~ N(0, 1/A) (the NumPy twin's `init_additive_scores`).
    """

    def __init__(self, emb: int, hidden: int, annotation_size: int, attn_size: int | None = None):
        super().__init__()
        A = attn_size or hidden
        self.W_a = nn.Parameter(torch.empty(hidden, A))
        self.U_a = nn.Parameter(torch.empty(annotation_size, A))
        self.v_a = nn.Parameter(torch.empty(A))
        self.cell = nn.GRUCell(emb + annotation_size, hidden)
        nn.init.xavier_uniform_(self.W_a)
        nn.init.xavier_uniform_(self.U_a)
        nn.init.normal_(self.v_a, std=A ** -0.5)

    def forward(self, y_prev: torch.Tensor, s_prev: torch.Tensor, annotations: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """y_prev = E y_{t-1} (B, emb), s_prev = s_{t-1} (B, D), annotations h_i (B, S, 2D), mask (B, S)
        -> (s_t (B, D), context c_t (B, 2D), weights alpha_ti (B, S))."""
        scores = additive_scores(s_prev[:, None, :], annotations, self.W_a, self.U_a, self.v_a)  # (B, 1, S)
        weights = masked_softmax(scores[:, 0], mask)     # (B, S)
        context = (weights[:, None, :] @ annotations)[:, 0]  # (B, 1, S) @ (B, S, 2D) -> (B, 2D)
        cell_in = torch.cat([y_prev, context], dim=-1)   # (B, emb + 2D)
        s_new = self.cell(cell_in, s_prev)               # (B, D)
        return s_new, context, weights

    def project_keys(self, annotations: torch.Tensor) -> torch.Tensor:
        """U_a h_i for every annotation (B, S, 2D) -> (B, S, A): the same at every step, so computed once per
        source (Bahdanau et al., appendix A.1.2)."""
        return annotations @ self.U_a                    # (B, S, A)

    def forward_cached(self, y_prev: torch.Tensor, s_prev: torch.Tensor, annotations: torch.Tensor,
                       keys: torch.Tensor, mask: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The fast path of `forward` that training and generation run: keys = project_keys(annotations)."""
        scores = torch.tanh((s_prev @ self.W_a)[:, None, :] + keys) @ self.v_a  # (B, S, A) -> (B, S)
        weights = masked_softmax(scores, mask)           # (B, S)
        context = (weights[:, None, :] @ annotations)[:, 0]  # (B, 2D)
        s_new = self.cell(torch.cat([y_prev, context], dim=-1), s_prev)  # (B, D)
        return s_new, context, weights


class BahdanauSeq2Seq(nn.Module):
    """RNN encoder-decoder; with attention=True the decoder attends to every annotation h_i at every step.

    forward(src, tgt_in) -> (logits (B, T, V_tgt), weights (B, T, S) or None). Sources are right-padded
    with pad_id.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, emb: int, hidden: int, attention: bool = True,
                 pad_id: int = PAD_ID, attn_size: int | None = None):
        super().__init__()
        for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("emb", emb), ("hidden", hidden)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        self.src_vocab, self.tgt_vocab, self.pad_id = src_vocab, tgt_vocab, pad_id
        self.hidden = hidden
        self.attention = attention
        self.src_embedding = nn.Embedding(src_vocab, emb)
        self.tgt_embedding = nn.Embedding(tgt_vocab, emb)
        self.encoder = BahdanauEncoder(emb, hidden)
        if attention:
            self.W_s = nn.Linear(hidden, hidden)         # s_0 = tanh(W_s <-h_1): from the backward annotation
            self.decoder = BahdanauDecoderStep(emb, hidden, 2 * hidden, attn_size)
        else:
            self.W_s = nn.Linear(2 * hidden, hidden)     # s_0 = tanh(W_s c): from the fixed context
            self.decoder = nn.GRUCell(emb + 2 * hidden, hidden)  # input: [E y_{t-1}; c]
        self.W_out = nn.Linear(hidden + 2 * hidden + emb, tgt_vocab)  # [s_t; c_t; E y_{t-1}] -> logits

    # ------------------------------------------------------------------ encoder
    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """src (B, S) -> (annotations (B, S, 2D), fixed context (B, 2D), s_0 (B, D), mask (B, S))."""
        check_tokens(src, self.src_vocab, "src")
        mask = src != self.pad_id                        # (B, S)
        x = self.src_embedding(src)                      # (B, S) -> (B, S, E)
        annotations = self.encoder(x, mask)              # (B, S, 2D) = [->h_i; <-h_i]
        last = mask.sum(1) - 1                           # (B,): each source's last real position, its <eos>
        forward_final = annotations[torch.arange(src.shape[0]), last, :self.hidden]  # (B, D): ->h_{S+1}, at <eos>
        context = torch.cat([forward_final, annotations[:, 0, self.hidden:]], dim=-1)  # (B, 2D): [->h_{S+1}; <-h_1]
        if self.attention:
            s0 = torch.tanh(self.W_s(annotations[:, 0, self.hidden:]))  # (B, D): <-h_1 read the whole source
        else:
            s0 = torch.tanh(self.W_s(context))           # (B, D)
        return annotations, context, s0, mask

    # ------------------------------------------------------------------ one decoder step
    def decode_step(self, y_prev: torch.Tensor, s_prev: torch.Tensor, annotations: torch.Tensor,
                    keys: torch.Tensor | None, context: torch.Tensor, mask: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """y_prev (B,), s_prev (B, D) -> (logits (B, V), s (B, D), weights (B, S) or None).

        keys = decoder.project_keys(annotations), computed once per source (None without attention).
        """
        embedded = self.tgt_embedding(y_prev)            # (B,) -> (B, E): E y_{t-1}
        if self.attention:
            # s (B, D), c (B, 2D), weights (B, S)
            s, c, weights = self.decoder.forward_cached(embedded, s_prev, annotations, keys, mask)
        else:
            s = self.decoder(torch.cat([embedded, context], dim=-1), s_prev)   # (B, D)
            c, weights = context, None                   # the same c at every step
        logits = self.W_out(torch.cat([s, c, embedded], dim=-1))  # (B, D + 2D + E) -> (B, V)
        return logits, s, weights

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing: src (B, S), tgt_in (B, T) -> (logits (B, T, V), weights (B, T, S) or None)."""
        check_tokens(tgt_in, self.tgt_vocab, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"tgt_in: expected batch size {src.shape[0]} (as src), got {tgt_in.shape[0]}")
        annotations, context, s, mask = self.encode(src)  # (B, S, 2D), (B, 2D), (B, D), (B, S)
        keys = self.decoder.project_keys(annotations) if self.attention else None  # (B, S, A)
        all_logits, all_weights = [], []
        for t in range(tgt_in.shape[1]):
            logits, s, weights = self.decode_step(tgt_in[:, t], s, annotations, keys, context, mask)  # (B, V)
            all_logits.append(logits)
            all_weights.append(weights)
        logits = torch.stack(all_logits, dim=1)          # (B, T, V)
        weights = torch.stack(all_weights, dim=1) if self.attention else None  # (B, T, S)
        return logits, weights

    @torch.no_grad()
    def generate(self, src: torch.Tensor, max_len: int | None = None, bos_id: int = BOS_ID,
                 eos_id: int = EOS_ID) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Greedy decoding: src (B, S) -> (tokens (B, L) without BOS, EOS then pad; weights (B, L, S) or None)."""
        check_tokens(src, self.src_vocab, "src")
        B, S = src.shape
        max_len = S + 50 if max_len is None else max_len
        if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
            raise ValueError(f"max_len: expected a positive int, got {max_len!r}")
        check_id("bos_id", bos_id, self.tgt_vocab)
        check_id("eos_id", eos_id, self.tgt_vocab)
        with eval_mode(self):
            annotations, context, s, mask = self.encode(src)
            keys = self.decoder.project_keys(annotations) if self.attention else None  # (B, S, A)
            next_token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)  # (B,)
            finished = torch.zeros(B, dtype=torch.bool, device=src.device)              # (B,)
            tokens, all_weights = [], []
            for _ in range(max_len):
                logits, s, weights = self.decode_step(next_token, s, annotations, keys, context, mask)  # (B, V)
                next_token = logits.argmax(-1).masked_fill(finished, self.pad_id)  # (B,): finished rows only pad
                tokens.append(next_token)
                all_weights.append(weights)
                finished |= next_token == eos_id
                if bool(finished.all()):
                    break
        tokens = torch.stack(tokens, dim=1)              # (B, L)
        weights = torch.stack(all_weights, dim=1) if self.attention else None  # (B, L, S)
        return tokens, weights
