"""The chapters' comparisons of variants, repeated over several seeds (too slow to run inside a chapter).

A chapter trains each variant once, with seed 0, to draw its figures; whether one variant really beats
another needs the spread over seeds. This script reruns each comparison exactly as its chapter sets it up,
for every seed given, and writes transformer_course/results/<experiment>.json with every seed's figures and their
mean, standard deviation, minimum and maximum. The chapter prints that file next to its own run.

    python benchmarks/experiments.py attention  --seeds 0 1 2 3 4   # chapter 2: with and without attention
    python benchmarks/experiments.py positions  --seeds 0 1 2 3 4   # chapter 6: sinusoidal, learned, RoPE, ALiBi
    python benchmarks/experiments.py positions_controls --seeds 0 1 2 3 4   # chapter 6: RoPE / ALiBi + sinusoids,
                                                                   # signed ALiBi (into positions.json, "controls")
    python benchmarks/experiments.py stability  --seeds 0 1 2 3 4   # chapter 7: post-LN / pre-LN x warm-up,
                                                                   # RAdam, pre-filled Adam, scaled branches/rates,
                                                                   # peak rates 1e-3 / 3e-3 / 1e-2
    python benchmarks/experiments.py heads      --seeds 0 1 2 3 4   # chapter 5: one head vs several, same width
    python benchmarks/experiments.py reversal_rates --seeds 0 1 2 3 4   # appendix A: NumPy reversal, factor 1 / 0.5
    python benchmarks/experiments.py open_generation --seeds 0 1 2   # chapter 8: decoding methods continuing the
                                                                   # book's own sentences
    python benchmarks/experiments.py scaling    --seeds 0 1 2   # chapter 3: with and without 1/sqrt(d), d = 16, 256
    python benchmarks/experiments.py classifier_controls --seeds 0 1 2 3 4   # chapter 7: the repeat classifier,
                                                                   # without attention / positions
    python benchmarks/experiments.py all        --seeds 0 1 2 3 4

One torch thread per run (as in the chapters); the wall time of each run is recorded too.
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _results import RESULTS, machine, summary, write_results
from torch import nn

from transformer_course import ModelConfig, set_seed
from transformer_course.config import POSITIONAL_KINDS
from transformer_course.data import PAD_ID, copy_task, make_dataloader, pad_sequences, reverse_task
from transformer_course.torch import attention as attention_module
from transformer_course.torch.attention import MultiHeadAttention
from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.decoding import greedy_decode
from transformer_course.torch.loss import cross_entropy
from transformer_course.torch.positional import SinusoidalPositions, alibi_bias
from transformer_course.torch.toy_tasks import (
    SORT_VOCAB,
    RepeatClassifier,
    Tagger,
    repeat_batch,
    silence_attention,
    sort_batch,
)
from transformer_course.torch.transformer import Transformer

# ---------------------------------------------------------------------------------------------------------
# chapter 2: reversing strings with and without attention (the settings of the chapter's training cell)
# ---------------------------------------------------------------------------------------------------------
REVERSE = dict(n_train=4000, n_val=0, n_test=1000, min_len=2, max_len=12, seed=0)
REVERSE_STEPS = 500
REVERSE_BANDS = {"2-6": (2, 6), "7-9": (7, 9), "10-12": (10, 12)}


def _train_seq2seq(model, data, src_vocab, tgt_vocab, steps, seed, batch_size=64, lr=3e-3):
    loader = make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=batch_size, seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    step, epoch = 0, 0
    while step < steps:
        loader.batch_sampler.set_epoch(epoch)
        epoch += 1
        for batch in loader:
            logits, _ = model(batch.src, batch.tgt_in)                      # (B, T, V)
            loss = cross_entropy(logits, batch.tgt_out, pad_id=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            step += 1
            if step == steps:
                break
    return model.eval()


def attention_run(seed: int) -> dict:
    """Exact match per length band of the test strings, for both models trained from `seed`."""
    data = reverse_task(**REVERSE)
    src_vocab, tgt_vocab = data.build_vocabs()
    out = {}
    for name, use_attention in (("without attention", False), ("with attention", True)):
        set_seed(seed)
        model = BahdanauSeq2Seq(len(src_vocab), len(tgt_vocab), emb=32, hidden=64, attention=use_attention)
        _train_seq2seq(model, data, src_vocab, tgt_vocab, REVERSE_STEPS, seed)
        hits = defaultdict(list)
        loader = make_dataloader(data.test, src_vocab, tgt_vocab, batch_size=250, shuffle=False)
        with torch.no_grad():
            for batch in loader:
                tokens, _ = model.generate(batch.src, max_len=batch.tgt_out.shape[1] + 5)
                for row, index in enumerate(batch.index.tolist()):
                    source, target = data.test[index]
                    hits[len(source)].append(tgt_vocab.decode(tokens[row].tolist()) == target)
        out[name] = {band: float(np.mean([h for n, hs in hits.items() if lo <= n <= hi for h in hs]))
                     for band, (lo, hi) in REVERSE_BANDS.items()}
    return out


# ---------------------------------------------------------------------------------------------------------
# chapter 6: copying strings with each kind of positions, tested beyond the training lengths
# ---------------------------------------------------------------------------------------------------------
TRAIN_MAX = 8
COPY_STEPS = 1500


def _copy_data():
    short = copy_task(n_train=4000, n_val=0, n_test=500, min_len=1, max_len=TRAIN_MAX, seed=0)
    longer = copy_task(n_train=0, n_val=0, n_test=1000, min_len=TRAIN_MAX + 1, max_len=2 * TRAIN_MAX, seed=1)
    return short, longer, *short.build_vocabs()


def _copy_model(positional: str, src_vocab, tgt_vocab, seed: int) -> Transformer:
    config = ModelConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), d_model=64, n_heads=4,
                         d_ff=128, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=32,
                         positional=positional)
    set_seed(seed)
    return Transformer(config)


def _train_and_score_copy(model: Transformer, short, longer, src_vocab, tgt_vocab, seed: int) -> dict:
    """Train `model` on the short strings (COPY_STEPS steps) and score greedy copies of seen and longer lengths."""
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    loader = make_dataloader(short.train, src_vocab, tgt_vocab, batch_size=64, seed=seed)
    step, epoch = 0, 0
    while step < COPY_STEPS:
        loader.batch_sampler.set_epoch(epoch)
        for batch in loader:
            for group in optimizer.param_groups:                     # linear warm-up, then constant
                group["lr"] = 3e-3 * min(1.0, (step + 1) / 100)
            loss = cross_entropy(model(batch.src, batch.tgt_in, batch.src_mask), batch.tgt_out, pad_id=0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == COPY_STEPS:
                break
        epoch += 1
    model.eval()
    pairs = short.test + longer.test
    src = torch.from_numpy(pad_sequences([src_vocab.encode(s) for s, _ in pairs]))   # (N, S)
    with torch.no_grad():
        predictions = [tgt_vocab.decode(row.tolist()) for row in greedy_decode(model, src, max_len=31)]
    exact = np.array([p == t for p, (_, t) in zip(predictions, pairs)])
    lengths = np.array([len(t) for _, t in pairs])
    hits, totals = np.zeros(2 * TRAIN_MAX), np.zeros(2 * TRAIN_MAX)
    for p, (_, t) in zip(predictions, pairs):
        if len(t) > TRAIN_MAX:
            for position, letter in enumerate(t):
                totals[position] += 1
                hits[position] += position < len(p) and p[position] == letter
    letters = hits / np.maximum(totals, 1)
    return {"exact_seen": float(exact[lengths <= TRAIN_MAX].mean()),
            "exact_longer": float(exact[lengths > TRAIN_MAX].mean()),
            "letters_pos9": float(letters[TRAIN_MAX]), "letters_pos10": float(letters[TRAIN_MAX + 1]),
            "letters_pos11_16": float(letters[TRAIN_MAX + 2:].mean()),
            "letters_by_position": [float(a) for a in letters]}


def positions_run(seed: int) -> dict:
    """Exact copies of seen and of longer lengths, and the share of letters right at every output position
    of the strings longer than any training string."""
    short, longer, src_vocab, tgt_vocab = _copy_data()
    return {positional: _train_and_score_copy(_copy_model(positional, src_vocab, tgt_vocab, seed), short, longer,
                                              src_vocab, tgt_vocab, seed)
            for positional in POSITIONAL_KINDS}


RIGHT_SLOPE_FACTOR = 2      # the signed ALiBi control: keys right of the query get twice head m's slope


def signed_alibi_bias(n_heads: int, n_queries: int, n_keys: int, offset: int = 0, device=None,
                      dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """ALiBi with a sign: -rho_m (pos_q - pos_k) for a key on the left, -2 rho_m (pos_k - pos_q) for one on the
    right (H, Tq, Tk). The decoder's causal mask hides every key on the right, so only the encoder changes."""
    left = alibi_bias(n_heads, n_queries, n_keys, offset, device, dtype)           # (H, Tq, Tk): -rho_m |distance|
    queries = torch.arange(offset, offset + n_queries, device=device)              # (Tq,)
    right = torch.arange(n_keys, device=device)[None, :] > queries[:, None]        # (Tq, Tk): key after the query
    return torch.where(right, RIGHT_SLOPE_FACTOR * left, left)                     # (H, Tq, Tk)


def positions_controls_run(seed: int) -> dict:
    """The two causes chapter 6 gives for RoPE's and ALiBi's weaker copies, separated: RoPE and ALiBi with the
    sinusoids also added to the embeddings (absolute positions reach cross-attention), and ALiBi whose encoder
    bias has a sign. Same data, sizes, steps and seeds as `positions_run`; the same initial weights as its RoPE
    or ALiBi model (the sinusoids and the bias have no parameters)."""
    short, longer, src_vocab, tgt_vocab = _copy_data()
    out = {}
    for name, positional, added, signed in (("rope + sinusoidal", "rope", True, False),
                                            ("alibi + sinusoidal", "alibi", True, False),
                                            ("alibi, signed", "alibi", False, True)):
        model = _copy_model(positional, src_vocab, tgt_vocab, seed)
        if added:                                        # x + PE before the layers, as the sinusoidal model does
            model.positions = SinusoidalPositions(model.config.d_model, model.config.max_len)
        attention_module.alibi_bias = signed_alibi_bias if signed else alibi_bias   # the encoder's bias
        try:
            out[name] = _train_and_score_copy(model, short, longer, src_vocab, tgt_vocab, seed)
        finally:
            attention_module.alibi_bias = alibi_bias
    return out


# ---------------------------------------------------------------------------------------------------------
# chapter 7: a six-layer encoder sorting tokens, post-LN or pre-LN, with or without warm-up
# ---------------------------------------------------------------------------------------------------------
STABILITY_VARIANTS = (("post-LN", False), ("pre-LN", True))
STABILITY_SWEEP = {"1e-3": 1e-3, "3e-3": 3e-3}           # peak rates besides the chapter's 1e-2
STABILITY_PREFILL = 100     # batches Adam sees at learning rate 0 before the run, in the pre-filled variant


def _scale_branches(model: Tagger) -> None:
    """Multiplies the output of the i-th of the stack's 2N sublayers by 1/sqrt(i), a fixed factor: each residual
    branch starts small against the stream it is added to (the idea of Admin, Liu et al. 2020, not its recipe)."""
    for k, layer in enumerate(model.encoder.layers):
        s_attn, s_ffn = (2 * k + 1) ** -0.5, (2 * k + 2) ** -0.5
        layer.self_attn.register_forward_hook(lambda m, args, out, s=s_attn: (out[0] * s, out[1]))  # (out, weights)
        layer.ffn.register_forward_hook(lambda m, args, out, s=s_ffn: out * s)                    # (B, S, D)


def _scaled_rate_groups(model: Tagger, lr: float) -> list[dict]:
    """Parameter groups for the optimiser: the i-th of the stack's 2N sublayers at lr / sqrt(i), everything else
    (embedding, LayerNorms, output layer) at lr. The control of `_scale_branches`: the same factors on the step
    size, none on the forward pass."""
    groups, scaled = [], set()
    for k, layer in enumerate(model.encoder.layers):
        for i, sub in ((2 * k + 1, layer.self_attn), (2 * k + 2, layer.ffn)):
            params = list(sub.parameters())
            scaled.update(id(p) for p in params)
            groups.append({"params": params, "lr": lr * i ** -0.5})
    groups.append({"params": [p for p in model.parameters() if id(p) not in scaled], "lr": lr})
    return groups


def _sort_loss(model: Tagger, generator: torch.Generator) -> torch.Tensor:
    x, y = sort_batch(generator)                                             # (B, S), (B, S)
    return F.cross_entropy(model(x).reshape(-1, SORT_VOCAB), y.reshape(-1))


def _train_tagger(seed: int, norm_first: bool, warmup: int, steps: int, peak_lr: float,
                  optimizer=torch.optim.Adam, prefill: int = 0, scale_branches: bool = False,
                  scale_rates: bool = False) -> dict:
    """One run of chapter 7's tagger: the loss of every step and the mean of the last 10. prefill > 0: first
    that many batches (from another generator) at learning rate 0, so that Adam's running estimates of the
    gradient's mean and size have settled before the first step; scale_branches: see `_scale_branches`;
    scale_rates: see `_scaled_rate_groups`."""
    set_seed(seed)
    model = Tagger(6, 32, norm_first)
    if scale_branches:
        _scale_branches(model)
    params = _scaled_rate_groups(model, peak_lr) if scale_rates else model.parameters()
    opt = optimizer(params, lr=peak_lr, betas=(0.9, 0.98), eps=1e-9)
    if prefill:
        opt.param_groups[0]["lr"] = 0.0                  # the estimates move, the weights do not
        extra = torch.Generator().manual_seed(seed + 1000)
        for _ in range(prefill):
            opt.zero_grad()
            _sort_loss(model, extra).backward()
            opt.step()
        opt.param_groups[0]["lr"] = peak_lr
    ramp = (lambda s, w=warmup: min(1.0, (s + 1) / w)) if warmup else (lambda s: 1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, ramp)
    data = torch.Generator().manual_seed(seed + 1)       # the same batches for every variant
    losses = []
    for _ in range(steps):
        loss = _sort_loss(model, data)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(loss.item())
    return {"last10": float(np.mean(losses[-10:])), "curve": losses}


def stability_run(seed: int, steps: int = 100, peak_lr: float = 1e-2) -> dict:
    """Loss curve and mean loss of the last 10 of 100 steps for each variant (the same batches for all runs):
    the four variants at peak_lr ("post-LN, no warm-up", ...); post-LN without an explicit warm-up, at peak_lr,
    under RAdam ("post-LN, RAdam"), under Adam with pre-filled estimates ("post-LN, Adam pre-filled") and under
    Adam with scaled residual branches ("post-LN, scaled branches") or, as its control, with the same factors on
    the sublayers' learning rates ("post-LN, scaled rates"); and the four variants at the peak rates of
    STABILITY_SWEEP ("post-LN, no warm-up, peak 1e-3", ...)."""
    out = {}
    for rate_name, rate in (("", peak_lr), *((f", peak {k}", v) for k, v in STABILITY_SWEEP.items())):
        for name, norm_first in STABILITY_VARIANTS:
            for warmup in (0, 50):
                label = f"{name}, {'warm-up 50' if warmup else 'no warm-up'}{rate_name}"
                out[label] = _train_tagger(seed, norm_first, warmup, steps, rate)
        if not rate_name:
            out["post-LN, RAdam"] = _train_tagger(seed, False, 0, steps, peak_lr, torch.optim.RAdam)
            out["post-LN, Adam pre-filled"] = _train_tagger(seed, False, 0, steps, peak_lr, prefill=STABILITY_PREFILL)
            out["post-LN, scaled branches"] = _train_tagger(seed, False, 0, steps, peak_lr, scale_branches=True)
            out["post-LN, scaled rates"] = _train_tagger(seed, False, 0, steps, peak_lr, scale_rates=True)
    return out


# ---------------------------------------------------------------------------------------------------------
# chapter 5: one head vs several heads of the same total width, on a task that needs K lookups at once
# ---------------------------------------------------------------------------------------------------------
LOOKUP = dict(V=32, T=8, D=16, steps=600, batch_size=64, lr=1e-2, n_test=2000)
LOOKUP_LONG, LOOKUP_EVERY = 3000, 100       # the same runs continued to 3000 steps, tested every 100


class Lookups(nn.Module):
    """One attention layer and a linear read-out: the last position (a query token) attends over the sequence,
    and the read-out predicts the first K tokens from that one output vector."""

    def __init__(self, V: int, T: int, D: int, H: int, K: int):
        super().__init__()
        self.V, self.K = V, K
        self.tokens = nn.Embedding(V + 1, D)                 # the V symbols and the query token (id V)
        self.positions = nn.Embedding(T + 1, D)
        self.attention = MultiHeadAttention(D, H)
        self.read_out = nn.Linear(D, K * V)

    def forward(self, x):
        B, T = x.shape
        h = self.tokens(x) + self.positions(torch.arange(T))    # (B, T, D)
        out, _ = self.attention(h[:, -1:], h)                   # (B, 1, D): the query position only
        return self.read_out(out[:, 0]).view(B, self.K, self.V)  # (B, K, V)


def lookup_batch(generator, B: int, V: int, T: int, K: int):
    """(B, T + 1) random symbols and the query token; the targets (B, K) are the first K symbols."""
    x = torch.randint(0, V, (B, T), generator=generator)          # (B, T)
    return torch.cat([x, torch.full((B, 1), V)], 1), x[:, :K]


def lookup_accuracy(H: int, K: int, seed: int, V: int, T: int, D: int, steps: int, batch_size: int, lr: float,
                    n_test: int, every: int | None = None) -> dict:
    """Share of test sequences whose K symbols are all predicted right after `steps` of Adam from `seed`
    ("accuracy"), the position (0-based) each head gives its largest mean weight on the test set ("positions"),
    and with `every`, the accuracy at steps 0, every, 2 every, ... ("curve"): one run, tested along the way."""
    set_seed(seed)
    model = Lookups(V, T, D, H, K)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(1000 + seed)
    x_test, y_test = lookup_batch(torch.Generator().manual_seed(99), n_test, V, T, K)   # the same test set for all

    def accuracy() -> float:
        with torch.no_grad():
            return (model(x_test).argmax(-1) == y_test).all(1).float().mean().item()

    curve = []
    for step in range(steps + 1):
        if every and step % every == 0:
            curve.append(accuracy())
        if step == steps:
            break
        x, y = lookup_batch(data, batch_size, V, T, K)
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        h = model.tokens(x_test) + model.positions(torch.arange(x_test.shape[1]))   # (B, T + 1, D)
        _, weights = model.attention(h[:, -1:], h, need_weights=True)               # (B, H, 1, T + 1)
        per_symbol = (model(x_test).argmax(-1) == y_test).float().mean(0).tolist()   # (K,): each lookup alone
    mean_weights = weights[:, :, 0].mean(0)                                           # (H, T + 1)
    return {"accuracy": accuracy(), "positions": mean_weights.argmax(-1).tolist(), "curve": curve,
            "per symbol": per_symbol, "top weight": mean_weights.max(-1).values.tolist()}


def heads_run(seed: int) -> dict:
    """Exact accuracy for K = 2 and 4 lookups and H = 1, 2, 4 heads of the same total width D after the
    chapter's 600 steps; the same runs continued to 3000 steps ("... lookups, 3000 steps") with their test
    accuracy every 100 steps ("curves, ... lookups", from step 0); for the one-head model after 3000 steps, the
    share of each symbol predicted right and the head's largest mean weight on one position; and the positions
    the four heads of the H = 4 model read on the four-lookup task after 600 steps ("positions", 0-based)."""
    short = LOOKUP["steps"]
    result: dict = {"positions": None}
    for K in (2, 4):
        runs = {H: lookup_accuracy(H, K, seed, **{**LOOKUP, "steps": LOOKUP_LONG}, every=LOOKUP_EVERY)
                for H in (1, 2, 4)}
        result[f"{K} lookups"] = {f"H = {H}": run["curve"][short // LOOKUP_EVERY] for H, run in runs.items()}
        result[f"{K} lookups, {LOOKUP_LONG} steps"] = {f"H = {H}": run["accuracy"] for H, run in runs.items()}
        result[f"curves, {K} lookups"] = {f"H = {H}": run["curve"] for H, run in runs.items()}
        result[f"one head, {K} lookups, {LOOKUP_LONG} steps"] = {key: runs[1][key] for key in ("per symbol",
                                                                                              "top weight")}
    result["positions"] = lookup_accuracy(4, 4, seed, **LOOKUP)["positions"]   # after the chapter's 600 steps
    return result                                       # positions: per seed only, a pattern, not a number


def reversal_rates_run(seed: int) -> dict:
    """Appendix A's NumPy Transformer on string reversal (the page's data, model and 1000 steps), from `seed`
    (initialisation, batch order), at the page's Noam factor 1 and at 0.5: the steps of the second half whose
    loss is 0.5 above its 25-step moving average ("late spikes", the page's count), the mean loss of the last
    50 steps, the share of steps clipped, and the held-out token accuracy and exact match of greedy decoding;
    and how many late spikes fall on the same step at both factors (both runs see the same batches in order)."""
    from transformer_course.config import TrainConfig
    from transformer_course.data.batching import Seq2SeqDataset, numpy_batches
    from transformer_course.numpy import greedy_decode as numpy_greedy_decode
    from transformer_course.numpy import init_transformer
    from transformer_course.training.numpy_trainer import train_numpy

    data = reverse_task(n_train=3000, n_val=0, n_test=200, min_len=2, max_len=6, alphabet="abcdefgh", seed=0)
    src_vocab, tgt_vocab = data.build_vocabs()
    cfg = ModelConfig(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), d_model=32, n_heads=2,
                      d_ff=64, n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=16)
    test_set = Seq2SeqDataset(data.test, src_vocab, tgt_vocab)
    src_test = pad_sequences(test_set.sources)                               # (N, S)
    result, spike_steps = {}, {}
    for factor in (1.0, 0.5):
        train_cfg = TrainConfig(batch_size=32, max_steps=1000, warmup_steps=100, lr_factor=factor,
                                label_smoothing=0.1, clip_grad_norm=1.0, seed=seed)
        params = init_transformer(np.random.default_rng(seed), cfg)             # float32, as on the page
        batches = numpy_batches(data.train, src_vocab, tgt_vocab, batch_size=32, seed=seed, epochs=None,
                                as_tuples=True)
        history = train_numpy(params, cfg, batches, train_cfg, rng=np.random.default_rng(seed), callbacks=[])
        loss, steps = np.array(history["loss"]), np.array(history["step"])    # (steps,) each
        smooth = np.convolve(loss, np.ones(25) / 25, mode="valid")            # (steps - 24,)
        late = steps[24:] >= 500
        spike_steps[factor] = set(steps[24:][late & (loss[24:] - smooth > 0.5)].tolist())
        pred = numpy_greedy_decode(src_test, params, cfg, max_len=8, bos_id=1, eos_id=2)   # (N, <= 8)
        n_tok = n_right = n_exact = 0
        for row, target in zip(pred, test_set.targets):
            reference = target[1:]                                           # reversed string + EOS
            guess = list(row[:len(reference)]) + [0] * max(0, len(reference) - len(row))
            hits = [a == b for a, b in zip(guess, reference)]
            n_tok, n_right, n_exact = n_tok + len(hits), n_right + sum(hits), n_exact + all(hits)
        result[f"factor {factor:g}"] = {
            "late spikes": len(spike_steps[factor]),
            "final loss": float(loss[-50:].mean()),
            "clipped share": float((np.array(history["grad_norm"]) > train_cfg.clip_grad_norm).mean()),
            "token accuracy": float(n_right / n_tok), "exact match": n_exact / len(test_set)}
    result["late spikes at the same step"] = len(spike_steps[1.0] & spike_steps[0.5])   # same batches, same order
    return result


# ---------------------------------------------------------------------------------------------------------
# chapter 8: open-ended generation: a small model continues sentences of the book's own prose
# ---------------------------------------------------------------------------------------------------------
BOOK = Path(__file__).resolve().parent.parent / "book"
OPEN_PROMPT_WORDS = 4                    # the source: a sentence's first 4 words; the target: the rest of it
OPEN_STEPS = 800
OPEN_MAX_LEN = 40                        # tokens a continuation may take
OPEN_EXAMPLES = 3                        # continuations stored per method and seed (the first held-out prompts)
OPEN_METHODS = {"greedy": {}, "beam (4)": {"beam_size": 4}, "τ = 0.7": {"temperature": 0.7},
                "τ = 1": {"temperature": 1.0}, "τ = 1, k_top = 10": {"top_k": 10},
                "τ = 1, p_top = 0.9": {"top_p": 0.9}}


def book_sentences() -> list[str]:
    """The sentences of the book's prose (Markdown cells and .md pages), 8 to 40 words each, without code, math,
    roles or directives; in the order of the files."""
    import re

    texts = [p.read_text() for p in sorted(BOOK.glob("*.md"))]
    for path in sorted(BOOK.glob("*.ipynb")):
        texts += ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"]
    sentences = []
    for text in texts:
        text = re.sub(r"```.*?```|\$\$.*?\$\$", " ", text, flags=re.S)            # code blocks, directives, math
        text = " ".join(line for line in text.splitlines() if not re.match(r"\s*(:::|#|\||<|-{3})", line))
        text = re.sub(r"\{[a-z:-]+\}`[^`]*`|\$[^$]*\$|`[^`]*`", "", text)           # roles, inline math and code
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)                        # links: their text
        text = re.sub(r"[*_]{1,2}|\(\s*\)", "", text)
        text = re.sub(r"\s+([,.;:)])", r"\1", re.sub(r"\s+", " ", text))
        text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text):
            sentence = sentence.strip(" -")
            if 8 <= len(sentence.split()) <= 40 and re.search(r"[a-z]", sentence):
                sentences.append(sentence)
    return sentences


def _save_open_examples(seed: int, examples: dict) -> None:
    """Writes the first continuations of a seed under its key of results/open_generation_examples.json (a lock:
    seeds may run in parallel processes); `_summarise` averages numbers only."""
    import fcntl
    import os

    path = RESULTS / "open_generation_examples.json"
    lock = os.open(RESULTS, os.O_RDONLY)                 # the folder itself is the lock
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        per_seed = json.loads(path.read_text())["per_seed"] if path.exists() else {}
        per_seed[str(seed)] = examples
        seeds = sorted(map(int, per_seed))
        payload = {"command": shlex.join(["python", "benchmarks/experiments.py", "open_generation", "--seeds",
                                          *map(str, seeds)]),
                   "date": datetime.date.today().isoformat(), "machine": machine(), "seeds": seeds,
                   "per_seed": {str(s): per_seed[str(s)] for s in seeds}}
        path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    finally:
        os.close(lock)                                   # closing releases the lock


def _repeated_ngrams(rows: list[list[str]], n: int) -> float:
    """Share of the n-grams of each continuation that already occurred earlier in the same continuation."""
    repeats = total = 0
    for words in rows:
        grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
        repeats, total = repeats + len(grams) - len(set(grams)), total + len(grams)
    return repeats / max(total, 1)


def _distinct_ngrams(rows: list[list[str]], n: int) -> float:
    """Distinct-n: different n-grams over all n-grams, pooled over all continuations."""
    grams = [tuple(words[i:i + n]) for words in rows for i in range(len(words) - n + 1)]
    return len(set(grams)) / max(len(grams), 1)


def _mean_log_prob(model, src: torch.Tensor, rows: list[list[int]]) -> float:
    """The model's own mean log probability per token (tau = 1, EOS included where written) of continuations."""
    from transformer_course.data import BOS_ID

    tgt = torch.from_numpy(pad_sequences([[BOS_ID] + r for r in rows]))             # (N, L + 1)
    with torch.no_grad():
        logp = model(src, tgt[:, :-1]).log_softmax(-1)                              # (N, L, V)
    picked = logp.gather(-1, tgt[:, 1:, None])[..., 0]                              # (N, L)
    real = tgt[:, 1:] != PAD_ID                                                     # (N, L)
    return float(picked[real].mean())


def open_generation_run(seed: int) -> dict:
    """A 1+1-layer Transformer trained from `seed` (OPEN_STEPS steps of Adam) to continue a sentence of the book
    from its first words; every 10th sentence held out. For each decoding method over the held-out prompts:
    repeated word 3-grams, distinct-2, mean log probability per token, mean length in words and the share that hits
    OPEN_MAX_LEN; the same numbers for the book's own continuations ("book"). The first continuations go to
    results/open_generation_examples.json."""
    from transformer_course.data import BOS_ID, EOS_ID, Vocab
    from transformer_course.torch.decoding import beam_search, sample_decode

    sentences = book_sentences()
    pairs = [(" ".join(s.split()[:OPEN_PROMPT_WORDS]), " ".join(s.split()[OPEN_PROMPT_WORDS:])) for s in sentences]
    test, train = pairs[::10], [p for i, p in enumerate(pairs) if i % 10]
    vocab = Vocab.build([text for pair in train for text in pair], "word", max_size=1500)
    config = ModelConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=64, n_heads=4, d_ff=256,
                         n_encoder_layers=1, n_decoder_layers=1, dropout=0.1, max_len=96)
    set_seed(seed)
    model = Transformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    loader = make_dataloader(train, vocab, vocab, batch_size=64, seed=seed)
    step, epoch = 0, 0
    while step < OPEN_STEPS:
        loader.batch_sampler.set_epoch(epoch)
        epoch += 1
        model.train()
        for batch in loader:
            for group in optimizer.param_groups:                     # linear warm-up, then constant
                group["lr"] = 3e-3 * min(1.0, (step + 1) / 100)
            loss = cross_entropy(model(batch.src, batch.tgt_in, batch.src_mask), batch.tgt_out, pad_id=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == OPEN_STEPS:
                break
    model.eval()
    src = torch.from_numpy(pad_sequences([vocab.encode(s) for s, _ in test]))      # (N, S): the prompts
    outputs = {"book": [vocab.encode(t) for _, t in test]}                          # ids, EOS last
    for name, settings in OPEN_METHODS.items():
        if name == "greedy":
            ids = greedy_decode(model, src, max_len=OPEN_MAX_LEN)
        elif name.startswith("beam"):
            ids = beam_search(model, src, alpha=0.6, max_len=OPEN_MAX_LEN, **settings)
        else:
            ids = sample_decode(model, src, max_len=OPEN_MAX_LEN, generator=torch.Generator().manual_seed(seed),
                                **settings)
        rows = [row.tolist() for row in ids]                                        # (N, L) as lists
        outputs[name] = [row[:row.index(EOS_ID) + 1] if EOS_ID in row else [t for t in row if t != PAD_ID]
                         for row in rows]
    result = {"vocabulary": len(vocab), "train sentences": len(train), "held-out prompts": len(test)}
    examples = {"prompts": [s for s, _ in test[:OPEN_EXAMPLES]]}
    with torch.no_grad():
        result["held-out loss"] = float(cross_entropy(model(src, torch.from_numpy(pad_sequences(
            [[BOS_ID] + r[:-1] for r in outputs["book"]]))), torch.from_numpy(pad_sequences(outputs["book"])),
            pad_id=PAD_ID))
    for name, rows in outputs.items():
        words = [vocab.decode(r).split() for r in rows]
        result[name] = {"repeated 3-grams": _repeated_ngrams(words, 3), "distinct-2": _distinct_ngrams(words, 2),
                        "log p per token": _mean_log_prob(model, src, rows),
                        "words": float(np.mean([len(w) for w in words])),
                        "hit the length limit": float(np.mean([EOS_ID not in r for r in rows]))}
        examples[name] = [vocab.decode(r) for r in rows[:OPEN_EXAMPLES]]
    _save_open_examples(seed, examples)
    return result


# ---------------------------------------------------------------------------------------------------------
# chapter 3: one attention layer trained with and without the 1/sqrt(d) scaling, at two widths d
# ---------------------------------------------------------------------------------------------------------
SCALING = dict(V=16, T=8, steps=600, batch_size=64, lr=1e-3, n_test=2000, every=20, widths=(16, 256))


class KeyValueRetrieval(nn.Module):
    """One attention head of width d: T (key, value) pairs of symbols, x_j = key_emb[k_j] + value_emb[v_j]; the
    query is the key_emb of one of the keys; a linear read-out predicts the value stored under it. W_q, W_k, W_v
    start as the package's MultiHeadAttention starts them (Glorot-uniform weights, zero biases)."""

    def __init__(self, V: int, d: int, scaled: bool):
        super().__init__()
        self.key_emb, self.value_emb = nn.Embedding(V, d), nn.Embedding(V, d)   # components of variance 1
        self.W_q, self.W_k, self.W_v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        for linear in (self.W_q, self.W_k, self.W_v):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)
        self.read_out = nn.Linear(d, V)
        self.factor = 1 / d**0.5 if scaled else 1.0

    def forward(self, keys, values, query):
        x = self.key_emb(keys) + self.value_emb(values)                    # (B, T, d)
        q = self.W_q(self.key_emb(query))[:, None]                         # (B, 1, d)
        scores = q @ self.W_k(x).transpose(1, 2) * self.factor             # (B, 1, T)
        weights = scores.softmax(-1)                                       # (B, 1, T)
        return self.read_out((weights @ self.W_v(x))[:, 0]), weights[:, 0]   # (B, V), (B, T)


def retrieval_batch(generator, B: int, V: int, T: int):
    """T distinct keys and T random values per row, and one of the keys as the query; the target is its value."""
    keys = torch.rand(B, V, generator=generator).argsort(1)[:, :T]           # (B, T) distinct keys
    values = torch.randint(0, V, (B, T), generator=generator)               # (B, T)
    pick = torch.randint(0, T, (B,), generator=generator)                   # (B,)
    rows = torch.arange(B)
    return keys, values, keys[rows, pick], values[rows, pick]


def scaling_run(seed: int) -> dict:
    """For d in SCALING["widths"], scaled and unscaled: the mean training loss of each window of `every` steps
    ("loss"), the largest attention weight at initialisation (mean over the test set), and the test accuracy
    after the last step. The same batches for all four runs of a seed."""
    V, T, steps, every = (SCALING[key] for key in ("V", "T", "steps", "every"))
    test = retrieval_batch(torch.Generator().manual_seed(99), SCALING["n_test"], V, T)
    result = {}
    for d in SCALING["widths"]:
        for scaled in (True, False):
            set_seed(seed)
            model = KeyValueRetrieval(V, d, scaled)
            optimizer = torch.optim.Adam(model.parameters(), lr=SCALING["lr"])
            data = torch.Generator().manual_seed(1000 + seed)
            with torch.no_grad():
                initial_max = model(*test[:3])[1].max(-1).values.mean().item()
            losses = []
            for _ in range(steps):
                keys, values, query, target = retrieval_batch(data, SCALING["batch_size"], V, T)
                loss = F.cross_entropy(model(keys, values, query)[0], target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            with torch.no_grad():
                accuracy = (model(*test[:3])[0].argmax(-1) == test[3]).float().mean().item()
            result[f"d = {d}, {'scaled' if scaled else 'unscaled'}"] = {
                "loss": [float(np.mean(losses[i:i + every])) for i in range(0, steps, every)],
                "initial max weight": initial_max, "accuracy": accuracy}
    return result


# ---------------------------------------------------------------------------------------------------------
# chapter 7: the repeat classifier and its controls (attention removed, positions removed, heads zeroed)
# ---------------------------------------------------------------------------------------------------------
REPEAT = dict(steps=800, batch=64, lr=1e-3, n_test=2000, every=50)   # the task itself: toy_tasks.repeat_batch


def _repeat_accuracy(model: nn.Module, ids: torch.Tensor, y: torch.Tensor) -> float:
    """Share of the sequences ids (n, S) whose label y (n,) the model predicts, in evaluation mode."""
    model.eval()
    with torch.no_grad():
        acc = (model(ids).argmax(-1) == y).float().mean().item()
    model.train()
    return acc


CLASSIFIER_CONTROLS = {"full": {}, "no attention": {"attention": False}, "no positions": {"positions": False}}


def classifier_controls_run(seed: int) -> dict:
    """Chapter 7's repeat classifier (800 steps of Adam at 1e-3, batches of 64) from `seed`, in the variants of
    CLASSIFIER_CONTROLS, with the held-out accuracy every 50 steps; and the trained full model with one layer's
    self-attention silenced at test time. Weights from set_seed(seed); held-out set and batches from
    np.random.default_rng(7 + seed) (seed 0: the chapter's)."""
    out = {}
    for name, kwargs in CLASSIFIER_CONTROLS.items():
        data_rng = np.random.default_rng(7 + seed)
        ids_test, y_test = repeat_batch(REPEAT["n_test"], data_rng)   # (n_test, S), (n_test,)
        set_seed(seed)
        model = RepeatClassifier(**kwargs)
        opt = torch.optim.Adam(model.parameters(), lr=REPEAT["lr"])
        curve = []
        for step in range(1, REPEAT["steps"] + 1):
            x, y = repeat_batch(REPEAT["batch"], data_rng)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % REPEAT["every"] == 0:
                curve.append(_repeat_accuracy(model, ids_test, y_test))
        out[name] = {"accuracy": curve[-1], "curve": curve}
        if name == "full":
            for k, layer in enumerate(model.encoder.layers, start=1):
                handle = silence_attention(layer)
                zeroed = _repeat_accuracy(model, ids_test, y_test)
                out[f"full, layer {k} attention zeroed at test"] = {"accuracy": zeroed}
                handle.remove()
    return out


# ---------------------------------------------------------------------------------------------------------
# chapter 9: the warm-up and gradient clipping, each taken away, on the chapter's own task, model and recipe
# ---------------------------------------------------------------------------------------------------------
WARMUP_CLIPPING = dict(max_number=1999, steps=600, warmup=300, lr_factor=0.5, clip=1.0, every=20)
WARMUP_CLIPPING_VARIANTS = {"warm-up, clipping": (True, True), "no warm-up": (False, True),
                            "no clipping": (True, False), "neither": (False, False)}   # (warm-up, clipping)


def warmup_clipping_run(seed: int) -> dict:
    """Chapter 9's model (d_model 64, 4 heads, 2 + 2 layers) on its task (English -> French numbers 0..1999, split
    seed 0), trained from `seed` for WARMUP_CLIPPING["steps"] steps of the chapter's recipe (Adam, label smoothing
    0.1, dropout 0.1, batches of 32) in four variants: with or without the warm-up (without: the schedule's peak
    rate from step 1, then the same 1/sqrt(step) decay) and with or without clipping at norm 1.0. Every variant
    of a seed starts from the same weights and reads the same batches with the same dropout masks. Per variant:
    the mean training loss (smoothed targets, dropout on) of each window of `every` steps, the share of steps
    whose gradient norm was above the clip, and the validation loss (no smoothing, dropout off) and greedy exact
    match at the end."""
    from transformer_course.config import get_preset, train_recipe
    from transformer_course.data import number_translation
    from transformer_course.training import prepare_run
    from transformer_course.training.schedule import noam_lr

    s = WARMUP_CLIPPING
    data = number_translation("en", "fr", max_number=s["max_number"], seed=0)
    vocabs = data.build_vocabs()
    model_config = get_preset("course").replace(
        src_vocab_size=len(vocabs[0]), tgt_vocab_size=len(vocabs[1]), d_model=64, n_heads=4, d_ff=256,
        n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, max_len=64)
    out = {}
    for name, (warm, clip) in WARMUP_CLIPPING_VARIANTS.items():
        config = train_recipe("course", "numbers", batch_size=32, max_steps=s["steps"], warmup_steps=s["warmup"],
                              lr_factor=s["lr_factor"], label_smoothing=0.1, clip_grad_norm=s["clip"],
                              stop_when_perfect=0, device="cpu", seed=seed)
        model, loader, evaluate_fn = prepare_run(data, vocabs, model_config, config)   # the seed's weights
        optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(config.adam_beta1, config.adam_beta2),
                                     eps=config.adam_eps)

        def rate(k, warm=warm):                           # k optimiser steps taken so far: the rate of step k + 1
            return noam_lr(k + 1 if warm else max(k + 1, s["warmup"]), model_config.d_model, s["warmup"],
                           s["lr_factor"])

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
        torch.manual_seed(seed)                           # the same dropout masks in every variant
        model.train()
        losses, norms, step, epoch = [], [], 0, 0
        while step < s["steps"]:
            loader.batch_sampler.set_epoch(epoch)
            epoch += 1
            for batch in loader:
                logits = model(batch.src, batch.tgt_in, src_mask=batch.src_mask)      # (B, T, V)
                loss = cross_entropy(logits, batch.tgt_out, PAD_ID, config.label_smoothing)
                optimizer.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), s["clip"] if clip else float("inf"))
                optimizer.step()
                scheduler.step()
                losses.append(loss.item())
                norms.append(norm.item())                 # before clipping
                step += 1
                if step == s["steps"]:
                    break
        model.eval()
        metrics = evaluate_fn(model)
        every = s["every"]
        out[name] = {"loss": [float(np.mean(losses[i:i + every])) for i in range(0, s["steps"], every)],
                     "share_above_clip": float(np.mean(np.array(norms) > s["clip"])),
                     "max_grad_norm": float(np.max(norms)),
                     "val_loss": metrics["loss"], "exact_match": metrics["exact_match"]}
    return out


# ---------------------------------------------------------------------------------------------------------
# appendix B: the roofline of a cached decoding step (time per step against the batch, next to its two bounds)
# ---------------------------------------------------------------------------------------------------------
DECODE_BATCHES = (1, 4, 16, 64)
DECODE_SOURCE_LEN, DECODE_PREFIX, DECODE_STEPS, DECODE_ROUNDS = 16, 4, 8, 3


def decode_configs() -> dict[str, ModelConfig]:
    """Appendix B's tiny model (D = 128, 2+2 layers, |V| = 1000) and the paper's base sizes with |V| = 8000."""
    from transformer_course.config import get_preset
    tiny = ModelConfig(src_vocab_size=1000, tgt_vocab_size=1000, d_model=128, n_heads=4, d_ff=512,
                       n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=512)
    base = get_preset("paper-base").replace(src_vocab_size=8000, tgt_vocab_size=8000, dropout=0.0)
    return {"tiny": tiny, "base": base}


def decode_step_weights(c: ModelConfig) -> int:
    """Matrix weights a cached step reads: per decoder layer 4 D^2 (self-attention) + 2 D^2 (cross-attention's
    query and output) + 2 D F, and the (V, D) output layer (appendix B's count)."""
    return c.n_decoder_layers * (6 * c.d_model ** 2 + 2 * c.d_model * c.d_ff) + c.tgt_vocab_size * c.d_model


def _median_cpu_seconds(fn, repeats: int) -> float:
    fn()
    runs = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return float(np.median(runs))


def decode_roofline_run(seed: int) -> dict:
    """One thread, CPU time: the copy bandwidth (64 MiB, median of 5) and the 768 x 768 matmul rate (best of 10),
    measured as appendix B measures them, and the median time of one cached decoding step (after DECODE_PREFIX
    steps, the mean of DECODE_STEPS) of random-weight models from `seed` for each batch in DECODE_BATCHES, the
    batches and models interleaved over DECODE_ROUNDS rounds."""
    source_block, copy_target = torch.randn(16 * 2**20), torch.empty(16 * 2**20)     # 64 MiB of float32 each
    bandwidth = 8 * source_block.numel() / _median_cpu_seconds(lambda: copy_target.copy_(source_block), 5)
    a_mat, b_mat = torch.randn(768, 768), torch.randn(768, 768)
    matmul_rate = 2 * 768 ** 3 / min(_median_cpu_seconds(lambda: a_mat @ b_mat, 1) for _ in range(10))
    torch.manual_seed(seed)
    models = {name: Transformer(c).eval() for name, c in decode_configs().items()}

    def step_seconds(model, batch):
        src = torch.randint(4, model.config.src_vocab_size, (batch, DECODE_SOURCE_LEN))   # (B, S)
        with torch.inference_mode():
            src_mask = model.make_src_mask(src)                                         # (B, 1, S)
            memory = model.encode(src, src_mask)                                        # (B, S, D)
            cache, token = model.new_cache(), torch.full((batch, 1), 4)                 # token: (B, 1)
            for _ in range(DECODE_PREFIX):
                model.decode(token, memory, src_mask, cache=cache)                      # (B, 1, V)
            start = time.process_time()
            for _ in range(DECODE_STEPS):
                model.decode(token, memory, src_mask, cache=cache)
            return (time.process_time() - start) / DECODE_STEPS

    rounds = defaultdict(list)
    for _ in range(DECODE_ROUNDS):
        for name, model in models.items():
            for batch in DECODE_BATCHES:
                rounds[name, batch].append(step_seconds(model, batch))
    return {"bandwidth": bandwidth, "matmul_rate": matmul_rate,
            **{name: {"weights": decode_step_weights(model.config),
                      "step_seconds": [float(np.median(rounds[name, b])) for b in DECODE_BATCHES]}
               for name, model in models.items()}}


EXPERIMENTS = {"attention": attention_run, "positions": positions_run, "stability": stability_run,
               "heads": heads_run, "positions_controls": positions_controls_run,
               "reversal_rates": reversal_rates_run, "open_generation": open_generation_run,
               "scaling": scaling_run, "classifier_controls": classifier_controls_run,
               "warmup_clipping": warmup_clipping_run,
               "decode_roofline": decode_roofline_run}
MERGED_INTO = {"positions_controls": ("positions", "controls")}   # written under a key of another experiment's file


def _merge_results(name: str, key: str, argv: list[str], results: dict) -> Path:
    """Add `results` (with command, date and machine) under `key` of transformer_course/results/<name>.json,
    leaving every other entry of that file as it was."""
    path = RESULTS / f"{name}.json"
    payload = json.loads(path.read_text())
    payload[key] = {"command": shlex.join(["python", "benchmarks/experiments.py", *argv]),
                    "date": datetime.date.today().isoformat(), "machine": machine(), **results}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path


def _summarise(per_seed: dict[int, dict]) -> dict:
    """Nested dicts of per-seed numbers -> the same nesting with a summary (mean, std, min, max) per number;
    a list (a curve) becomes a summary per entry."""
    first = next(iter(per_seed.values()))
    out = {}
    for key, value in first.items():
        if key == "positions":                           # which position each head reads: not averaged
            continue
        values = [r[key] for r in per_seed.values()]
        if isinstance(value, dict):
            out[key] = _summarise({s: r[key] for s, r in per_seed.items()})
        elif isinstance(value, list):
            out[key] = [summary(list(column)) for column in zip(*values)]
        else:
            out[key] = summary(values)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", choices=[*EXPERIMENTS, "all"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="at least 3 (default 0-4)")
    args = parser.parse_args(argv)
    if len(set(args.seeds)) < 3:
        parser.error(f"--seeds: a ranking needs at least 3 seeds, got {args.seeds}")
    torch.set_num_threads(1)
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    for name in names:
        per_seed, seconds = {}, {}
        for seed in args.seeds:
            start = time.perf_counter()
            per_seed[seed] = EXPERIMENTS[name](seed)
            seconds[seed] = time.perf_counter() - start
            print(f"{name} seed {seed}: {per_seed[seed]} ({seconds[seed]:.0f} s)", flush=True)
        argv, results = [name, "--seeds", *map(str, args.seeds)], {
            "seeds": args.seeds, "per_seed": {str(s): r for s, r in per_seed.items()},
            "summary": _summarise(per_seed), "seconds_per_seed": seconds}
        if name in MERGED_INTO:
            path = _merge_results(*MERGED_INTO[name], argv, results)
        else:
            path = write_results(name, "experiments.py", argv, results)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
