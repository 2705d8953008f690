"""Training-step and decoding speed of transformer_course.torch against torch.nn.Transformer.

    python benchmarks/bench_model.py            # tiny + base-like training steps, decoding
    python benchmarks/bench_model.py --quick    # a fast smoke run (tiny only, few rounds)
    python benchmarks/bench_model.py --device cpu --threads 1 --clock cpu --json bench_model_cpu1
    python benchmarks/bench_model.py --tricks --device cpu --threads 1 --clock cpu --json bench_tricks_cpu1
    python benchmarks/bench_model.py --tricks --device cuda --json bench_tricks_cuda

Both models get the same sizes, the same embeddings + sinusoidal positions + tied output projection,
the same label-smoothed loss (0.1, padding ignored) and the same Adam; rounds alternate between the two
models and the table reports medians. Model-FLOP utilisation (MFU, as defined by Chowdhery et al. 2022) is
the model's matmul FLOPs per step (forward x 3) over the step time, divided by the hardware's peak FLOP/s for
the threads used: on a CPU, threads x clock x FLOPs per cycle of its vector units, read from /proc/cpuinfo
(benchmarks/_results.py, printed); elsewhere the measured matmul peak stands in, and the table says so.
`--json NAME` also writes transformer_course/results/NAME.json, which appendix B of the book prints.

With --tricks the comparison is our model against itself, each of appendix B's speed tricks on and off in the
same alternating rounds (so a busy moment slows every variant alike, and the ratios divide times of one run):
float32 eager with the fused attention kernel (the baseline), bfloat16 autocast, torch.compile, both, and the
written-out attention instead of the fused kernel. A second table times causal attention alone, forward and
backward, written out against F.scaled_dot_product_attention, for growing lengths.
"""
from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from _results import cpu_features, cpu_peak_flops, write_results
from torch import nn

from transformer_course.config import ModelConfig
from transformer_course.data.vocab import BOS_ID, EOS_ID
from transformer_course.torch.decoding import beam_search, greedy_decode
from transformer_course.torch.device import autocast, maybe_compile, pick_device
from transformer_course.torch.loss import fast_cross_entropy
from transformer_course.torch.positional import sinusoidal_encoding
from transformer_course.torch.transformer import Transformer

SIZES = {  # name: (config fields, batch, length)
    "tiny": (dict(d_model=128, n_heads=4, d_ff=512, n_encoder_layers=2, n_decoder_layers=2,
                  src_vocab_size=1000, tgt_vocab_size=1000), 64, 32),
    "base-like": (dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6,
                       src_vocab_size=8000, tgt_vocab_size=8000), 8, 64),
}


class TorchReference(nn.Module):
    """torch.nn.Transformer with what a real model needs around it: embeddings x sqrt(D), sinusoidal
    positions, dropout, and an output projection tied to the target embedding (as our model)."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.c = c
        self.src_embedding = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embedding = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff,
                                          c.dropout, batch_first=True, norm_first=c.norm_first)

    def forward(self, src, tgt_in):
        S, T = src.shape[1], tgt_in.shape[1]
        scale = math.sqrt(self.c.d_model)
        x = self.dropout(self.src_embedding(src) * scale + self.pe[:S])
        y = self.dropout(self.tgt_embedding(tgt_in) * scale + self.pe[:T])
        causal = torch.ones(T, T, dtype=torch.bool, device=src.device).triu(1)  # True = masked (torch)
        src_pad, tgt_pad = src == self.c.pad_id, tgt_in == self.c.pad_id
        out = self.transformer(x, y, tgt_mask=causal, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                               memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return F.linear(out, self.tgt_embedding.weight)


def model_flops(c: ModelConfig, B: int, S: int, T: int) -> float:
    """Matmul FLOPs of one training step (forward x 3: the backward costs about twice the forward)."""
    D, F_, V = c.d_model, c.d_ff, c.tgt_vocab_size
    enc = c.n_encoder_layers * (8 * S * D * D + 4 * S * S * D + 4 * S * D * F_)
    dec = c.n_decoder_layers * (8 * T * D * D + 4 * T * T * D            # self-attention
                                + 4 * T * D * D + 4 * S * D * D + 4 * T * S * D  # cross-attention
                                + 4 * T * D * F_)
    out = 2 * T * D * V
    return 3.0 * B * (enc + dec + out)


def matmul_peak(device: torch.device, n: int, clock=time.perf_counter, dtype=torch.float32) -> float:
    """Best-of-10 FLOP/s of an n x n matmul: the machine's practical float32 peak (measured before and after
    the runs; the larger is used, so a busy moment does not inflate the utilisation). On a GPU one product of
    n = 1024, timed alone, leaves much of the card idle: MFU against it overstates the use of the hardware."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(10):
        _sync(device)
        start = clock()
        a @ b
        _sync(device)
        best = min(best, clock() - start)
    return 2 * n ** 3 / best


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def make_batch(c: ModelConfig, B: int, L: int, device, seed: int = 0):
    """Random ids with right padding: lengths uniform in [3L/4, L] (as a length-bucketed batch)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, c.src_vocab_size, (B, L), generator=g)
    tgt = torch.randint(4, c.tgt_vocab_size, (B, L + 1), generator=g)
    for row, n in enumerate(torch.randint(3 * L // 4, L + 1, (B,), generator=g).tolist()):
        src[row, n:] = c.pad_id
        tgt[row, n + 1:] = c.pad_id
    return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def train_step_fn(model, loss_fn, opt, batch, device, precision):
    src, tgt_in, tgt_out = batch

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast(device, precision):
            logits = model(src, tgt_in)
            loss = loss_fn(logits, tgt_out)
        loss.backward()
        opt.step()
    return step


def time_interleaved(fns: dict, rounds: int, steps: int, device, clock=time.perf_counter) -> dict:
    """Median seconds per call of each function, alternating the functions round by round."""
    for fn in fns.values():                              # warm-up (allocator, kernels, compile)
        fn()
        fn()
    times = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns) if r % 2 == 0 else list(reversed(fns))
        for name in order:
            _sync(device)
            start = clock()
            for _ in range(steps):
                fns[name]()
            _sync(device)
            times[name].append((clock() - start) / steps)
    return {name: statistics.median(ts) for name, ts in times.items()}


def bench_training(size: str, args, device) -> dict:
    """Median step times of both models for one size, with the step's FLOPs and tokens."""
    fields, B, L = SIZES[size]
    c = ModelConfig(dropout=args.dropout, max_len=max(L, 64), **fields)
    torch.manual_seed(0)
    ours = maybe_compile(Transformer(c).to(device), args.compile)
    ref = maybe_compile(TorchReference(c).to(device), args.compile)
    batch = make_batch(c, B, L, device)
    adam = dict(lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    fns = {
        "ours": train_step_fn(ours, lambda lo, y: fast_cross_entropy(lo, y, c.pad_id, 0.1),
                              torch.optim.Adam(ours.parameters(), **adam), batch, device, args.precision),
        "torch": train_step_fn(ref, lambda lo, y: F.cross_entropy(lo.reshape(-1, lo.shape[-1]), y.reshape(-1),
                                                                   ignore_index=c.pad_id, label_smoothing=0.1),
                               torch.optim.Adam(ref.parameters(), **adam), batch, device, args.precision),
    }
    rounds, steps = (args.rounds, args.steps) if size == "tiny" else (max(3, args.rounds // 2), 1)
    return {"size": size, "times": time_interleaved(fns, rounds, steps, device, args.clock_fn),
            "flops": model_flops(c, B, L, L), "tokens": B * 2 * L}


TRICKS = {  # name: (precision, compiled, fused attention)
    "fp32": ("fp32", False, True), "bf16": ("bf16", False, True), "compiled": ("fp32", True, True),
    "bf16+compiled": ("bf16", True, True), "explicit attention": ("fp32", False, False),
}


def bench_tricks(size: str, args, device) -> dict:
    """Median step times of our model with each trick on or off, in the same alternating rounds."""
    fields, B, L = SIZES[size]
    batch = None
    fns = {}
    for name, (precision, compiled, fused) in TRICKS.items():
        c = ModelConfig(dropout=args.dropout, max_len=max(L, 64), fused_attention=fused, **fields)
        torch.manual_seed(0)                             # every variant starts from the same weights
        model = Transformer(c).to(device)
        batch = batch or make_batch(c, B, L, device)
        fns[name] = train_step_fn(maybe_compile(model, compiled),
                                  lambda lo, y, pad=c.pad_id: fast_cross_entropy(lo, y, pad, 0.1),
                                  torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9),
                                  batch, device, precision)
    rounds, steps = (args.rounds, args.steps) if size == "tiny" else (max(3, args.rounds // 2), 1)
    return {"size": size, "times": time_interleaved(fns, rounds, steps, device, args.clock_fn),
            "flops": model_flops(c, B, L, L), "tokens": B * 2 * L}


def tricks_rows(result: dict, peak: float) -> list[str]:
    """Markdown rows of one size: step time, tokens/s, MFU, and time over the float32 baseline's."""
    times, flops, tokens = result["times"], result["flops"], result["tokens"]
    return [f"| {result['size']:9s} | {name:18s} | {times[name] * 1e3:9.2f} | {tokens / times[name]:10.0f} | "
            f"{100 * flops / times[name] / peak:4.1f}% | {times[name] / times['fp32']:7.2f} |" for name in times]


def bench_attention(lengths: list[int], args, device) -> list[dict]:
    """Causal attention alone, forward + backward, written out (the package's scaled_dot_product_attention
    with a boolean mask) against the fused kernel (is_causal=True): median seconds per length, alternating."""
    from transformer_course.torch.attention import scaled_dot_product_attention
    rows = []
    for n in lengths:
        torch.manual_seed(n)
        q, k, v = (torch.randn(8, 8, n, 64, device=device, requires_grad=True) for _ in range(3))  # (B, H, T, D_h)
        causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()   # (T, T), True = may attend

        def explicit(q=q, k=k, v=v, causal=causal):
            scaled_dot_product_attention(q, k, v, causal)[0].sum().backward()

        def fused(q=q, k=k, v=v):
            F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

        times = time_interleaved({"explicit": explicit, "fused": fused}, args.rounds, 1, device, args.clock_fn)
        rows.append({"length": n, "times": times})
    return rows


def training_rows(result: dict, peak: float) -> list[str]:
    """Markdown rows of one size: step time, tokens/s, MFU against `peak` FLOP/s, and ours/torch."""
    times, flops, tokens = result["times"], result["flops"], result["tokens"]
    ratio = times["ours"] / times["torch"]
    return [f"| {result['size']:9s} | {name:5s} | {times[name] * 1e3:9.1f} | {tokens / times[name]:10.0f} | "
            f"{100 * flops / times[name] / peak:4.1f}% | " + (f"{ratio:10.2f} |" if name == "ours" else "           |")
            for name in ("ours", "torch")]


def bench_decoding(args, device) -> dict:
    """Median times of every decoding method; cached greedy is also compared with a hand-written key/value loop."""
    fields, _, _ = SIZES["tiny"]
    c = ModelConfig(dropout=0.0, max_len=128, **fields)
    torch.manual_seed(0)
    model = Transformer(c).to(device).eval()
    with torch.no_grad():
        # EOS's (tied) output row is 0, so its logit is 0 while hundreds of others are positive: no row ends
        # early, every call decodes exactly 32 tokens, and the timings compare equal work
        model.tgt_embedding.E[EOS_ID] = 0.0
    src, _, _ = make_batch(c, 16, 32, device, seed=1)
    greedy = lambda cache: greedy_decode(model, src, max_len=32, use_cache=cache)  # noqa: E731
    reference = greedy(True)
    same = all(torch.equal(reference, out) for out in (greedy(False), naive_greedy(model, src, 32),
                                                         kv_reference_greedy(model, src, 32),
                                                         kv_reference_greedy(model, src, 32, stop_at_eos=True)))
    assert reference.shape == (16, 32), "a row ended early: the timings would compare unequal work"
    med = time_interleaved({"cache": lambda: greedy(True), "hand": lambda: kv_reference_greedy(model, src, 32),
                            "hand_eos": lambda: kv_reference_greedy(model, src, 32, stop_at_eos=True),
                            "decoder": lambda: greedy(False), "all": lambda: naive_greedy(model, src, 32),
                            "beam4": lambda: beam_search(model, src, beam_size=4, max_len=32)},
                           args.decode_rounds, 1, device, args.clock_fn)
    return {"seconds": med, "tokens": 16 * 32, "identical_tokens": bool(same),
            "cache_over_hand": med["cache"] / med["hand"], "cache_over_hand_eos": med["cache"] / med["hand_eos"]}


DECODING_ROWS = {"cache": "greedy, KV cache (greedy_decode)", "hand": "greedy, hand-written KV loop",
                 "hand_eos": "greedy, hand-written KV loop + EOS", "decoder": "greedy, recompute decoder",
                 "all": "greedy, recompute model(src, ys)", "beam4": "beam 4, KV cache"}


def decoding_rows(result: dict) -> list[str]:
    med, n = result["seconds"], result["tokens"]
    return [f"| {label:34s} | {med[key] * 1e3:9.1f} | {n / med[key]:8.0f} | {med[key] / med['cache']:20.2f} |"
            for key, label in DECODING_ROWS.items() if key in med] + \
        [f"identical tokens from every greedy loop: {result['identical_tokens']}"] + \
        ([f"cached greedy_decode / hand-written key/value loop: {result['cache_over_hand']:.2f} (argmax only), "
          f"{result['cache_over_hand_eos']:.2f} (with greedy_decode's EOS bookkeeping)"]
         if "cache_over_hand" in result else [])


@torch.inference_mode()
def naive_greedy(model, src, steps):
    """The textbook loop with no reuse at all: model(src, prefix) every step (encoder included)."""
    ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)
    for _ in range(steps):
        next_token = model(src, ys)[:, -1].argmax(-1)
        ys = torch.cat([ys, next_token[:, None]], dim=1)
    return ys[:, 1:]


@torch.inference_mode()
def kv_reference_greedy(model, src, steps, stop_at_eos=False):
    """The reference for cached greedy decoding: a minimal hand-written key/value loop over the model's own
    weights (post-LN, tied output, sinusoidal positions: the benchmark's configuration). Functional calls
    only, the projections concatenated once, no checks: what the package's `greedy_decode` +
    `Transformer.decode(..., cache=...)` do, without the structure that makes them readable. With stop_at_eos, it
    also keeps greedy_decode's contract (padding after a row's EOS, stopping when every row has ended)."""
    c = model.config
    if c.norm_first or not c.tie_output_embedding or c.positional != "sinusoidal":
        raise ValueError("model: the reference loop is written for post-LN, tied, sinusoidal models")
    B, (H, D), eps = src.shape[0], (c.n_heads, c.d_model), c.layer_norm_eps
    Dh = D // H
    src_mask = (src != c.pad_id)[:, None, None, :]       # (B, 1, 1, S)
    memory = model.encode(src)                           # (B, S, D): the same encoder for both
    layers = []
    for layer in model.decoder.layers:
        s, x = layer.self_attn, layer.cross_attn
        qkv_w = torch.cat([s.W_q.weight, s.W_k.weight, s.W_v.weight])  # (3D, D)
        qkv_b = torch.cat([s.W_q.bias, s.W_k.bias, s.W_v.bias])        # (3D,)
        cross_k = F.linear(memory, x.W_k.weight, x.W_k.bias).view(B, -1, H, Dh).transpose(1, 2)  # (B, H, S, Dh)
        cross_v = F.linear(memory, x.W_v.weight, x.W_v.bias).view(B, -1, H, Dh).transpose(1, 2)  # (B, H, S, Dh)
        keys = memory.new_empty(B, H, steps, Dh)         # (B, H, steps, Dh): the self-attention cache
        values = memory.new_empty(B, H, steps, Dh)
        layers.append((layer, qkv_w, qkv_b, cross_k, cross_v, keys, values))
    E, pe, scale = model.tgt_embedding.E, model.positions.pe, math.sqrt(D)
    token = torch.full((B,), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    out = []
    for t in range(steps):
        y = (E[token] * scale + pe[t])[:, None]          # (B, 1, D)
        for layer, qkv_w, qkv_b, cross_k, cross_v, keys, values in layers:
            q, k, v = F.linear(y, qkv_w, qkv_b).view(B, 1, 3, H, Dh).unbind(2)  # 3 x (B, 1, H, Dh)
            keys[:, :, t] = k[:, 0]
            values[:, :, t] = v[:, 0]
            h = F.scaled_dot_product_attention(q.transpose(1, 2), keys[:, :, :t + 1], values[:, :, :t + 1])
            h = F.linear(h.transpose(1, 2).reshape(B, 1, D), layer.self_attn.W_o.weight, layer.self_attn.W_o.bias)
            y = F.layer_norm(y + h, (D,), layer.norm1.gamma, layer.norm1.beta, eps)
            q = F.linear(y, layer.cross_attn.W_q.weight, layer.cross_attn.W_q.bias).view(B, 1, H, Dh).transpose(1, 2)
            h = F.scaled_dot_product_attention(q, cross_k, cross_v, attn_mask=src_mask)  # (B, H, 1, Dh)
            h = F.linear(h.transpose(1, 2).reshape(B, 1, D), layer.cross_attn.W_o.weight, layer.cross_attn.W_o.bias)
            y = F.layer_norm(y + h, (D,), layer.norm2.gamma, layer.norm2.beta, eps)
            h = F.linear(F.relu(F.linear(y, layer.ffn.W_1.weight, layer.ffn.W_1.bias)), layer.ffn.W_2.weight,
                         layer.ffn.W_2.bias)
            y = F.layer_norm(y + h, (D,), layer.norm3.gamma, layer.norm3.beta, eps)
        token = F.linear(y[:, 0], E).argmax(-1)          # (B,)
        if stop_at_eos:
            token = token.masked_fill(finished, c.pad_id)
            finished |= token == EOS_ID
        out.append(token)
        if stop_at_eos and bool(finished.all()):
            break
    return torch.stack(out, dim=1)                       # (B, steps)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny config only, few rounds: a smoke run")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    parser.add_argument("--threads", type=int, default=None, help="intra-op CPU threads (default: torch's)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; medians are reported")
    parser.add_argument("--decode-rounds", type=int, default=21,
                        help="interleaved rounds of the decoding table (a call takes milliseconds: more rounds, "
                             "steadier medians)")
    parser.add_argument("--steps", type=int, default=3, help="training steps per round (tiny)")
    parser.add_argument("--dropout", type=float, default=0.1, help="the same dropout for both models")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--compile", action="store_true", help="torch.compile both models")
    parser.add_argument("--sizes", default="tiny,base-like", help="comma-separated: tiny, base-like")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                        help="wall: elapsed time; cpu: this process's CPU time, which a machine shared with other "
                             "jobs does not inflate (meaningful on CPU with --threads 1 only)")
    parser.add_argument("--no-decoding", action="store_true", help="time training steps only")
    parser.add_argument("--tricks", action="store_true",
                        help="our model against itself: bf16, compile, both, written-out attention (see above)")
    parser.add_argument("--lengths", default="128,512,2048",
                        help="--tricks: comma-separated lengths of the attention-only table")
    parser.add_argument("--json", metavar="NAME", help="also write transformer_course/results/NAME.json")
    args = parser.parse_args(argv)
    if args.tricks and (args.compile or args.precision != "fp32"):
        parser.error("--tricks: times every precision and compiled and eager itself; leave out --precision "
                     "and --compile")
    if args.quick:
        args.rounds, args.decode_rounds, args.steps, args.sizes = 3, 3, 1, "tiny"
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    if args.clock == "cpu" and (device.type != "cpu" or torch.get_num_threads() != 1):
        parser.error("--clock cpu: needs --device cpu and --threads 1 (CPU time adds up every thread's time)")
    args.clock_fn = time.process_time if args.clock == "cpu" else time.perf_counter
    matmul = matmul_peak(device, 512 if args.quick else 1024, args.clock_fn)
    print(f"device {device}, {torch.get_num_threads()} CPU threads, torch {torch.__version__}, "
          f"precision {args.precision}, compile {args.compile}, dropout {args.dropout}, "
          f"{args.rounds} interleaved rounds (medians; {args.decode_rounds} for decoding), {args.clock} clock")
    bench = bench_tricks if args.tricks else bench_training
    results = [bench(size.strip(), args, device) for size in args.sizes.split(",")]
    matmul = max(matmul, matmul_peak(device, 512 if args.quick else 1024, args.clock_fn))
    hardware = cpu_peak_flops(torch.get_num_threads()) if device.type == "cpu" else None
    peak = hardware["peak_flops"] if hardware else matmul
    print(f"measured matmul peak (the larger of two measurements, before and after the training runs) "
          f"{matmul / 1e9:.1f} GFLOP/s")
    if hardware:
        print(f"hardware peak for MFU: {hardware['threads']} thread(s) x {hardware['mhz']:.0f} MHz x "
              f"{hardware['flops_per_cycle']} FLOPs/cycle ({hardware['vector_bits']}-bit FMA units) = "
              f"{peak / 1e9:.1f} GFLOP/s")
    else:
        print("no CPU peak known for this device: MFU is against the measured matmul peak")
    print("tokens = source + target positions")
    if args.tricks:
        print("\n| config    | variant            | step (ms) |   tokens/s |   MFU | / fp32  |")
        print("|-----------|--------------------|-----------|------------|-------|---------|")
        for result in results:
            for row in tricks_rows(result, peak):
                print(row)
        attention = bench_attention([int(n) for n in args.lengths.split(",")], args, device)
        print("\ncausal attention alone, forward + backward, B = 8, H = 8, D_h = 64, float32")
        print("| length | written out (ms) | fused (ms) | written out / fused |")
        print("|--------|------------------|------------|---------------------|")
        for row in attention:
            t = row["times"]
            print(f"| {row['length']:6d} | {t['explicit'] * 1e3:16.2f} | {t['fused'] * 1e3:10.2f} | "
                  f"{t['explicit'] / t['fused']:19.2f} |")
    else:
        print("\n| config    | model | step (ms) |   tokens/s |   MFU | ours/torch |")
        print("|-----------|-------|-----------|------------|-------|------------|")
        for result in results:
            for row in training_rows(result, peak):
                print(row)
    decoding = None
    if not args.no_decoding:
        decoding = bench_decoding(args, device)
        print("\ngreedy decoding of 32 tokens, batch 16, tiny config (source length <= 32, random weights)")
        print("| method                             | time (ms) | tokens/s | time / cached greedy |")
        print("|------------------------------------|-----------|----------|----------------------|")
        for row in decoding_rows(decoding):
            print(row)
    if args.json:
        setting = {key: getattr(args, key) for key in ("device", "rounds", "steps", "dropout", "precision",
                                                        "compile", "clock", "tricks")}
        path = write_results(args.json, "bench_model.py", argv,
                             {"setting": {**setting, "threads": torch.get_num_threads()},
                              "cpu_features": cpu_features(),
                              "matmul_peak_flops": matmul, "hardware_peak": hardware, "peak_flops_for_mfu": peak,
                              "training": results, "decoding": decoding,
                              **({"attention": attention} if args.tricks else {})})
        print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
