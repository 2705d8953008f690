"""Decoding: greedy (the twin of `transformer_course.numpy.decoding`), beam search and sampling, with or without
the key/value cache.

Both take any model with the Transformer's decoding interface: `config` (pad_id, src/tgt_vocab_size,
max_len), `make_src_mask(src)`, `encode(src, src_mask)`, `decode(tgt_in, memory, src_mask)`, and for the
cache `new_cache()` and `decode(tgt_in, memory, src_mask, cache=cache)`. With the cache (the default), each
step feeds only the newest token: the decoder's self-attention keys/values of earlier positions are kept,
and the cross-attention keys/values are computed once per source. Without it, every step re-runs the decoder
over the whole prefix, as the NumPy twin does (the quadratic baseline the cache removes).
Returned tokens exclude BOS; a sequence ends with its EOS and is followed by pad_id.
"""
from __future__ import annotations

import math
import numbers

import torch

from ..checks import check_id, check_int, check_max_len
from ..special_tokens import BOS_ID, EOS_ID
from ..utils import eval_mode
from .embedding import check_tokens

__all__ = ["length_penalty", "greedy_decode", "beam_search", "sampling_probs", "sample_decode"]


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al. 2016; alpha is the book's lambda); scores are
    log p(Y) / lp(Y)."""
    return ((5.0 + length) / 6.0) ** alpha


def _check_decoding_inputs(model, src, max_len, bos_id, eos_id) -> int:
    """The NumPy twin's checks of greedy_decode's inputs; returns max_len (default: S + 50)."""
    config = model.config
    check_tokens(src, config.src_vocab_size, "src")
    check_id("bos_id", bos_id, config.tgt_vocab_size)
    check_id("eos_id", eos_id, config.tgt_vocab_size)
    return check_max_len(max_len, src.shape[1], config.max_len)


@torch.inference_mode()
def greedy_decode(model, src: torch.Tensor, max_len: int | None = None, bos_id: int = BOS_ID, eos_id: int = EOS_ID,
                  src_mask: torch.Tensor | None = None, use_cache: bool = True) -> torch.Tensor:
    """Pick the most probable token at every step: src (B, S) -> tokens (B, L), L <= max_len (default S + 50)."""
    max_len = _check_decoding_inputs(model, src, max_len, bos_id, eos_id)
    if src_mask is None:
        src_mask = model.make_src_mask(src)              # (B, 1, S)
    B = src.shape[0]
    pad_id = model.config.pad_id
    with eval_mode(model):
        memory = model.encode(src, src_mask)             # (B, S, D)
        ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)        # (B,)
        cache = model.new_cache() if use_cache else None
        for _ in range(max_len):
            if cache is not None:
                logits = model.decode(ys[:, -1:], memory, src_mask, cache=cache)  # (B, 1, V): the newest position
            else:
                logits = model.decode(ys, memory, src_mask)  # (B, t, V): every position again
            next_token = logits[:, -1].argmax(-1)        # (B,)
            next_token = next_token.masked_fill(finished, pad_id)  # (B,): finished rows only pad
            ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, t + 1)
            finished |= next_token == eos_id
            if bool(finished.all()):
                break
    return ys[:, 1:]                                     # (B, L): without BOS


@torch.inference_mode()
def beam_search(model, src: torch.Tensor, beam_size: int = 4, alpha: float = 0.6, max_len: int | None = None,
                bos_id: int = BOS_ID, eos_id: int = EOS_ID, src_mask: torch.Tensor | None = None,
                use_cache: bool = True, return_scores: bool = False):
    """Batched beam search with GNMT's length penalty: src (B, S) -> tokens (B, L) [, scores (B,)].

    Each step expands the n_beam alive hypotheses of every source (n_beam = beam_size, the book's beam width) by
    every token and keeps the 2 n_beam best by log probability: those ending in EOS among the top n_beam finish
    (score log P / lp); the n_beam best others stay alive. A source is done when it has n_beam finished
    hypotheses and its best alive one scores no better than its worst finished one (the usual heuristic; with
    beam_size=1 this is exactly greedy decoding). At max_len the alive hypotheses of unfinished sources compete
    too. The first step decodes one BOS per source, then the caches (cross-attention keys/values included) are
    copied to the n_beam beams. `alpha` is the length penalty's exponent (the book's lambda).
    """
    max_len = _check_decoding_inputs(model, src, max_len, bos_id, eos_id)
    V = model.config.tgt_vocab_size
    n_beam = check_int("beam_size", beam_size, 1, V, f" (at most the target vocabulary size {V})")
    if alpha < 0:
        raise ValueError(f"alpha: expected alpha >= 0, got {alpha!r}")
    if src_mask is None:
        src_mask = model.make_src_mask(src)              # (B, 1, S)
    with eval_mode(model):
        device = src.device
        B = src.shape[0]
        pad_id = model.config.pad_id
        neg_inf = float("-inf")
        memory = model.encode(src, src_mask)                 # (B, S, D)
        cache = model.new_cache() if use_cache else None
        alive_seq = torch.empty(B, 1, 0, dtype=torch.long, device=device)   # (B, n_alive = 1, t = 0)
        alive_logp = torch.zeros(B, 1, device=device)                       # (B, n_alive)
        fin_seq = torch.full((B, n_beam, 0), pad_id, dtype=torch.long, device=device)  # (B, n_beam, t)
        fin_score = torch.full((B, n_beam), neg_inf, device=device)              # (B, n_beam)
        fin_len = torch.zeros(B, n_beam, dtype=torch.long, device=device)        # (B, n_beam)
        done = torch.zeros(B, dtype=torch.bool, device=device)              # (B,)
        batch_base = torch.arange(B, device=device)[:, None]                # (B, 1)
        for t in range(max_len):
            n_alive = alive_seq.shape[1]
            logp = _next_log_probs(model, alive_seq, memory, src_mask, cache, bos_id)    # (B, n_alive, V)
            cand = (alive_logp[:, :, None] + logp).view(B, n_alive * V)                   # (B, n_alive * V)
            top_logp, top_idx = cand.topk(min(2 * n_beam, n_alive * V), dim=-1)                # (B, 2*n_beam)
            beam_idx = top_idx // V                                                     # (B, 2*n_beam): which parent
            token = top_idx % V                                                         # (B, 2*n_beam): which token
            cand_seq = torch.cat([alive_seq.gather(1, beam_idx[:, :, None].expand(-1, -1, t)),
                                  token[:, :, None]], dim=2)                            # (B, 2*n_beam, t + 1)
            is_eos = token == eos_id                                                    # (B, 2*n_beam)
            # 1. hypotheses that end here: EOS among the n_beam best candidates, for sources not yet done
            rank = torch.arange(top_idx.shape[1], device=device)                        # (2*n_beam,)
            ends = is_eos & (rank < n_beam) & ~done[:, None]                                 # (B, 2*n_beam)
            new_score = torch.where(ends, top_logp / length_penalty(t + 1, alpha), neg_inf)  # (B, 2*n_beam)
            fin_seq = torch.cat([fin_seq, torch.full((B, n_beam, 1), pad_id, dtype=torch.long, device=device)], 2)
            pool_seq = torch.cat([fin_seq, cand_seq], dim=1)                            # (B, 3*n_beam, t + 1)
            pool_score = torch.cat([fin_score, new_score], dim=1)                       # (B, 3*n_beam)
            pool_len = torch.cat([fin_len, torch.full_like(new_score, t + 1, dtype=torch.long)], 1)  # (B, 3*n_beam)
            fin_score, keep = pool_score.topk(n_beam, dim=-1)                                # (B, n_beam)
            fin_seq = pool_seq.gather(1, keep[:, :, None].expand(-1, -1, t + 1))        # (B, n_beam, t + 1)
            fin_len = pool_len.gather(1, keep)                                          # (B, n_beam)
            # 2. hypotheses that go on: the n_beam best not ending in EOS
            alive_logp, pick = torch.where(is_eos, neg_inf, top_logp).topk(n_beam, dim=-1)   # (B, n_beam)
            alive_seq = cand_seq.gather(1, pick[:, :, None].expand(-1, -1, t + 1))      # (B, n_beam, t + 1)
            # (B*n_beam,): the rows of the flattened caches that the surviving hypotheses continue
            parent = (batch_base * n_alive + beam_idx.gather(1, pick)).view(B * n_beam)
            if t == 0:                                       # one row per source -> n_beam rows: copy the source side
                memory = memory.index_select(0, parent)      # (B*n_beam, S, D)
                src_mask = src_mask.index_select(0, parent)  # (B*n_beam, 1, S)
            if cache is not None:
                cache.reorder(parent, include_static=(t == 0))
            # 3. a source is done when its best alive hypothesis, scored at its current length, is no better than
            #    its worst finished one. For alpha = 0 stopping loses nothing against running this beam to max_len
            #    (a longer hypothesis only loses log-probability); for alpha > 0 it is a heuristic, since the
            #    length penalty can still lift a longer one above it
            best_alive = alive_logp[:, 0] / length_penalty(t + 1, alpha)                # (B,)
            done |= (fin_score[:, -1] > neg_inf) & (best_alive <= fin_score[:, -1])
            if bool(done.all()):
                break
        # sources still open at max_len: their alive hypotheses compete with the finished ones
        L = alive_seq.shape[2]
        open_score = torch.where(done[:, None], neg_inf, alive_logp / length_penalty(L, alpha))  # (B, n_beam)
        tokens, best_score = _best_hypotheses(torch.cat([fin_seq, alive_seq], dim=1),           # (B, 2*n_beam, L)
                                              torch.cat([fin_score, open_score], dim=1),         # (B, 2*n_beam)
                                              torch.cat([fin_len, torch.full_like(fin_len, L)], dim=1))
    return (tokens, best_score) if return_scores else tokens


def _next_log_probs(model, alive_seq: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor, cache,
                    bos_id: int) -> torch.Tensor:
    """Log probabilities of the next token after each alive hypothesis (B, n_alive, t): (B, n_alive, V). With a
    cache only the newest token is decoded (BOS at the first step); without, the whole prefix after BOS."""
    B, n_alive, t = alive_seq.shape
    if cache is not None:
        # (B, n_alive, 1): the newest token of every alive hypothesis (BOS at the first step)
        last = alive_seq[:, :, -1:] if t > 0 else torch.full((B, 1, 1), bos_id, device=alive_seq.device)
        logits = model.decode(last.reshape(B * n_alive, 1), memory, src_mask, cache=cache)  # (B*n_alive, 1, V)
    else:
        bos = torch.full((B, n_alive, 1), bos_id, dtype=torch.long, device=alive_seq.device)  # (B, n_alive, 1)
        prefix = torch.cat([bos, alive_seq], dim=2).reshape(B * n_alive, t + 1)             # (B*n_alive, t + 1)
        logits = model.decode(prefix, memory, src_mask)                                    # (B*n_alive, t + 1, V)
    return torch.log_softmax(logits[:, -1].float(), dim=-1).view(B, n_alive, -1)          # (B, n_alive, V)


def _best_hypotheses(pool_seq: torch.Tensor, pool_score: torch.Tensor,
                     pool_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The best-scoring hypothesis of each source: pool_seq (B, N, L), pool_score and pool_len (B, N) ->
    tokens (B, L') cut after the longest chosen one, scores (B,)."""
    rows = torch.arange(pool_seq.shape[0], device=pool_seq.device)                      # (B,)
    best_score, best = pool_score.max(dim=-1)                                           # (B,)
    tokens = pool_seq[rows, best]                                                       # (B, L)
    return tokens[:, : int(pool_len[rows, best].max())], best_score                     # (B, L'), (B,)


def _check_sampling(temperature, top_k, top_p, vocab_size: int) -> None:
    """Temperature > 0 (finite), top_k in [1, V] or None, top_p in (0, 1] or None."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or math.isnan(temperature):
        raise TypeError(f"temperature: expected a number > 0, got {temperature!r}")
    if temperature == 0:
        raise ValueError("temperature: expected a number > 0, got 0 (temperature 0 means always the most probable "
                         "token: use greedy_decode)")
    if not 0 < temperature < math.inf:
        raise ValueError(f"temperature: expected a finite number > 0, got {temperature!r}")
    if top_k is not None:
        check_int("top_k", top_k, 1, vocab_size, f" (at most the vocabulary size {vocab_size}) or None")
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise TypeError(f"top_p: expected a number in (0, 1] or None, got {type(top_p).__name__} {top_p!r}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p: expected a number in (0, 1] or None, got {top_p!r}")


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None, exclude: tuple[int, ...] = ()) -> torch.Tensor:
    """The distribution sampling draws from: logits (..., V) -> probabilities (..., V).

    The token ids in `exclude` get probability 0 first (sample_decode excludes <pad> and <bos>); then
    softmax(z / temperature), then top-k keeps the k most probable tokens, then top-p (nucleus sampling,
    Holtzman et al. 2020) keeps the smallest set of most probable tokens whose probability reaches top_p; the
    kept probabilities are renormalised to sum to 1. Nothing excluded, both limits off (None) and temperature 1:
    the model's own distribution.
    """
    if not isinstance(logits, torch.Tensor) or logits.ndim < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits: expected a tensor of shape (..., V) with V >= 1, got "
                         f"{getattr(logits, 'shape', type(logits).__name__)}")
    V = logits.shape[-1]
    _check_sampling(temperature, top_k, top_p, V)
    exclude = sorted({check_id("exclude", token, V) for token in exclude})
    if len(exclude) == V:
        raise ValueError(f"exclude: expected to leave at least one of the {V} tokens, got all of them")
    z = logits.float() / temperature                                     # (..., V)
    if exclude:
        z = z.index_fill(-1, torch.tensor(exclude, device=z.device), float("-inf"))   # (..., V): never drawn
    probs = torch.softmax(z, dim=-1)                                     # (..., V)
    sorted_probs, order = probs.sort(dim=-1, descending=True)            # (..., V): most probable first
    keep = torch.ones_like(sorted_probs, dtype=torch.bool)               # (..., V), in sorted order
    if top_k is not None:
        keep[..., top_k:] = False
    if top_p is not None:
        # a token stays if the tokens before it hold less than top_p: the first one always stays, and the
        # set stops at the first token that brings the total to top_p or beyond
        mass_before = sorted_probs.cumsum(-1) - sorted_probs             # (..., V)
        keep &= mass_before < top_p
    kept = torch.where(keep, sorted_probs, 0.0)                          # (..., V)
    kept = kept / kept.sum(-1, keepdim=True)
    return torch.zeros_like(probs).scatter(-1, order, kept)              # (..., V): back in vocabulary order


@torch.inference_mode()
def sample_decode(model, src: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None, generator: torch.Generator | None = None, max_len: int | None = None,
                  bos_id: int = BOS_ID, eos_id: int = EOS_ID, src_mask: torch.Tensor | None = None,
                  use_cache: bool = True) -> torch.Tensor:
    """Draw every token from `sampling_probs` of the model's logits: src (B, S) -> tokens (B, L).

    <pad> (config.pad_id) and <bos> (bos_id) are never drawn: they are never valid outputs, yet a model trained
    with label smoothing gives them a little probability at every step. Their probability is set to 0 before the
    temperature, top-k and top-p apply (fairseq's generator likewise never selects <pad>). <unk> stays samplable:
    a model may have to write it. Each row of the batch samples on its own; finished rows are padded as in
    greedy_decode. `generator` (a torch.Generator on src's device) makes the draws reproducible; None uses
    torch's global generator. temperature -> 0 approaches greedy decoding, and top_k=1 is greedy decoding
    exactly wherever greedy's arg max is neither <pad> nor <bos>.
    """
    max_len = _check_decoding_inputs(model, src, max_len, bos_id, eos_id)
    _check_sampling(temperature, top_k, top_p, model.config.tgt_vocab_size)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator or None, got {type(generator).__name__}")
    if src_mask is None:
        src_mask = model.make_src_mask(src)              # (B, 1, S)
    B = src.shape[0]
    pad_id = model.config.pad_id
    never = tuple({pad_id, bos_id} - {eos_id})           # never valid outputs (EOS stays, should it share an id)
    with eval_mode(model):
        memory = model.encode(src, src_mask)             # (B, S, D)
        ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)        # (B,)
        cache = model.new_cache() if use_cache else None
        for _ in range(max_len):
            if cache is not None:
                logits = model.decode(ys[:, -1:], memory, src_mask, cache=cache)  # (B, 1, V)
            else:
                logits = model.decode(ys, memory, src_mask)  # (B, t, V)
            probs = sampling_probs(logits[:, -1], temperature, top_k, top_p, exclude=never)  # (B, V)
            next_token = torch.multinomial(probs, 1, generator=generator)[:, 0]  # (B,)
            next_token = next_token.masked_fill(finished, pad_id)  # (B,)
            ys = torch.cat([ys, next_token[:, None]], dim=1)  # (B, t + 1)
            finished |= next_token == eos_id
            if bool(finished.all()):
                break
    return ys[:, 1:]                                     # (B, L): without BOS
