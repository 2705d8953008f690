"""Benchmark of the NumPy Transformer: (1) it learns the reverse task (time and held-out token accuracy);
(2) one full forward + backward pass next to the PyTorch twin's on the same configuration (CPU).

    python benchmarks/bench_numpy.py                 # both parts
    python benchmarks/bench_numpy.py --skip-train    # only the speed comparison
    python benchmarks/bench_numpy.py --skip-train --threads 1 --clock cpu --json bench_numpy   # appendix B's run

Timings depend on the machine and its load: they are printed as measured, with the thread counts used.
`--threads N` fixes the BLAS threads of NumPy and the intra-op threads of torch (0: each library's default).
On a loaded machine one thread is often faster: the matrices are small and waiting threads spin. The two
models alternate round by round (a busy moment slows both alike), and `--clock cpu` (with `--threads 1`)
times this process's CPU time, which other jobs on a shared machine do not inflate; medians are reported.
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import time


def _set_blas_threads(argv: list[str]) -> None:
    """OpenBLAS reads its thread count when NumPy loads it, so --threads must be applied before `import numpy`."""
    for flag, value in itertools.pairwise(argv):
        if flag == "--threads" and value.isdigit() and int(value) > 0 and "numpy" not in sys.modules:
            for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[name] = value


if __name__ == "__main__":
    _set_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402

from transformer_course.config import ModelConfig, TrainConfig  # noqa: E402
from transformer_course.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID  # noqa: E402
from transformer_course.numpy import (  # noqa: E402
    cross_entropy_backward,
    cross_entropy_forward,
    greedy_decode,
    init_transformer,
    transformer_backward,
    transformer_forward,
)
from transformer_course.training.callbacks import ProgressBar  # noqa: E402
from transformer_course.training.numpy_trainer import train_numpy  # noqa: E402

PAD, BOS, EOS, FIRST_SYMBOL = PAD_ID, BOS_ID, EOS_ID, UNK_ID  # no unknown tokens here: symbols start at 3


# ---------------------------------------------------------------- the reverse task

def make_sequences(rng: np.random.Generator, n: int, n_symbols: int, min_len: int, max_len: int) -> list[tuple]:
    """n random symbol sequences (as tuples of ids >= FIRST_SYMBOL) of random lengths."""
    lengths = rng.integers(min_len, max_len + 1, size=n)
    return [tuple(rng.integers(FIRST_SYMBOL, FIRST_SYMBOL + n_symbols, size=L).tolist()) for L in lengths]


def to_batch(seqs: list[tuple], max_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """src = seq (right-padded); tgt_in = BOS reversed(seq); tgt_out = reversed(seq) EOS."""
    B = len(seqs)
    src = np.full((B, max_len), PAD, dtype=np.int64)     # (B, S)
    tgt = np.full((B, max_len + 2), PAD, dtype=np.int64)  # (B, T + 1)
    for i, seq in enumerate(seqs):
        src[i, :len(seq)] = seq
        tgt[i, :len(seq) + 2] = (BOS, *seq[::-1], EOS)
    return src, tgt[:, :-1], tgt[:, 1:]


def training_batches(rng: np.random.Generator, held_out: set, batch_size: int, n_symbols: int, min_len: int,
                     max_len: int):
    """An endless stream of fresh batches; any sequence of the held-out set is dropped, never trained on."""
    while True:
        seqs = [s for s in make_sequences(rng, batch_size, n_symbols, min_len, max_len) if s not in held_out]
        yield to_batch(seqs, max_len)


def token_accuracy(params: dict, config: ModelConfig, seqs: list[tuple], max_len: int) -> tuple[float, float]:
    """Greedy decoding of every held-out source: (token accuracy over reversed(seq) EOS, exact-match rate)."""
    src, _, tgt_out = to_batch(seqs, max_len)
    pred = greedy_decode(src, params, config, max_len=max_len + 1, bos_id=BOS, eos_id=EOS)  # (N, <= max_len + 1)
    padded = np.full(tgt_out.shape, PAD, dtype=np.int64)
    padded[:, :pred.shape[1]] = pred[:, :tgt_out.shape[1]]
    real = tgt_out != PAD
    correct = (padded == tgt_out) & real
    return float(correct.sum() / real.sum()), float(np.all(correct | ~real, axis=1).mean())


def run_training(args) -> list[tuple[str, str]]:
    rng = np.random.default_rng(args.seed)
    V = FIRST_SYMBOL + args.symbols
    config = ModelConfig(src_vocab_size=V, tgt_vocab_size=V, d_model=args.d_model, n_heads=args.heads,
                         d_ff=args.d_ff, n_encoder_layers=args.layers, n_decoder_layers=args.layers,
                         dropout=args.dropout, max_len=args.max_len + 2, pad_id=PAD)
    train_config = TrainConfig(batch_size=args.batch_size, max_steps=args.steps, warmup_steps=args.warmup,
                               lr_factor=args.lr_factor, label_smoothing=args.label_smoothing,
                               clip_grad_norm=1.0, seed=args.seed)
    held_out = sorted(set(make_sequences(np.random.default_rng(args.seed + 1), args.n_test, args.symbols,
                                         args.min_len, args.max_len)))
    params = init_transformer(rng, config)
    batches = training_batches(rng, set(held_out), args.batch_size, args.symbols, args.min_len, args.max_len)
    history = train_numpy(params, config, batches, train_config, rng=rng,
                          callbacks=[ProgressBar(enabled=args.progress, desc="numpy train")])
    start = time.perf_counter()
    acc, exact = token_accuracy(params, config, held_out, args.max_len)
    eval_seconds = time.perf_counter() - start
    return [
        ("task", f"reverse, lengths {args.min_len}-{args.max_len}, {args.symbols} symbols"),
        ("model", f"D={config.d_model} H={config.n_heads} F={config.d_ff} layers={args.layers}+{args.layers} "
                  f"dropout={config.dropout}"),
        ("training", f"{len(history['step'])} steps x {args.batch_size} sequences, final loss "
                     f"{np.mean(history['loss'][-20:]):.4f}"),
        ("training time", f"{history['time_s']:.1f} s "
                          f"({1000 * history['time_s'] / len(history['step']):.1f} ms/step)"),
        ("held-out sequences", f"{len(held_out)} (never in training)"),
        ("held-out token accuracy (greedy)", f"{100 * acc:.2f} %"),
        ("held-out exact match", f"{100 * exact:.2f} %"),
        ("evaluation time", f"{eval_seconds:.1f} s"),
    ]


# ---------------------------------------------------------------- forward + backward, NumPy vs PyTorch

def _median_times(fns: dict, repeats: int, clock=time.perf_counter) -> dict:
    """Median seconds per call of each function, after a warm-up call of each (allocations, caches, lazy init);
    the functions alternate round by round, so a busy moment slows them alike."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for r in range(repeats):
        for name in (list(fns) if r % 2 == 0 else list(reversed(fns))):
            start = clock()
            fns[name]()
            times[name].append(clock() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def run_speed(args, measured: dict) -> list[tuple[str, str]]:
    """Rows of the printed table; the times (seconds) also go into `measured`."""
    config = ModelConfig(src_vocab_size=args.vocab, tgt_vocab_size=args.vocab, d_model=128, n_heads=4, d_ff=512,
                         n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=128)  # the "course" preset
    B, S, T = args.speed_batch, args.speed_len, args.speed_len
    rng = np.random.default_rng(0)
    params = init_transformer(rng, config)
    src = rng.integers(1, args.vocab, size=(B, S))
    tgt = rng.integers(1, args.vocab, size=(B, T + 1))
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]

    def numpy_step():
        logits, cache = transformer_forward(src, tgt_in, params, config)
        _, loss_cache = cross_entropy_forward(logits, tgt_out, config.pad_id, 0.1)
        transformer_backward(cross_entropy_backward(1.0, loss_cache), cache)

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = [("speed config", f"course preset (D=128 H=4 F=512 2+2 layers), V={args.vocab}, B={B}, S=T={S}, "
                             f"float32, forward + loss + backward, median of {args.repeats} alternating rounds, "
                             f"{args.clock} clock")]
    measured["clock"] = args.clock
    try:
        import torch

        from transformer_course.torch.convert import numpy_to_torch
        from transformer_course.torch.transformer import Transformer
    except ImportError as error:                         # the PyTorch twin may not exist yet
        t_numpy = _median_times({"numpy": numpy_step}, args.repeats, clock)["numpy"]
        measured["numpy_seconds"] = t_numpy
        rows.append(("NumPy forward+backward", f"{1000 * t_numpy:.1f} ms"))
        rows.append(("PyTorch forward+backward", f"skipped (cannot import the PyTorch twin: {error})"))
        return rows
    if args.threads:
        torch.set_num_threads(args.threads)
    model = numpy_to_torch(params, Transformer(config))
    src_t, tgt_in_t, tgt_out_t = (torch.from_numpy(a) for a in (src, tgt_in, tgt_out))

    def torch_step():
        model.zero_grad(set_to_none=True)
        logits = model(src_t, tgt_in_t)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.tgt_vocab_size), tgt_out_t.reshape(-1),
                                                 ignore_index=config.pad_id, label_smoothing=0.1)
        loss.backward()

    medians = _median_times({"numpy": numpy_step, "torch": torch_step}, args.repeats, clock)
    t_numpy, t_torch = medians["numpy"], medians["torch"]
    measured.update(numpy_seconds=t_numpy, torch_seconds=t_torch, torch_threads=torch.get_num_threads(),
                    numpy_over_torch=t_numpy / t_torch)
    rows.append(("NumPy forward+backward", f"{1000 * t_numpy:.1f} ms"))
    rows.append(("PyTorch forward+backward (CPU)", f"{1000 * t_torch:.1f} ms ({torch.get_num_threads()} threads)"))
    rows.append(("NumPy / PyTorch", f"{t_numpy / t_torch:.2f}x (goal <= 2x)"))
    return rows


def print_table(rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    print("-" * (width + 60))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("-" * (width + 60))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-train", action="store_true", help="only the forward+backward comparison")
    parser.add_argument("--skip-speed", action="store_true", help="only the training run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--symbols", type=int, default=10, help="distinct symbols in the sequences")
    parser.add_argument("--min-len", type=int, default=3)
    parser.add_argument("--max-len", type=int, default=10)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2, help="encoder layers = decoder layers")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--lr-factor", type=float, default=1.0)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--n-test", type=int, default=1000, help="held-out sequences")
    parser.add_argument("--progress", action="store_true", help="show a tqdm bar while training")
    parser.add_argument("--vocab", type=int, default=1000, help="vocabulary of the speed comparison")
    parser.add_argument("--speed-batch", type=int, default=32)
    parser.add_argument("--speed-len", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                        help="wall: elapsed time; cpu: this process's CPU time (needs --threads 1)")
    parser.add_argument("--json", metavar="NAME", help="also write transformer_course/results/NAME.json")
    args = parser.parse_args(argv)
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu: needs --threads 1 (CPU time adds up every thread's time)")

    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    rows = [("machine", f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores visible, "
                        f"numpy {np.__version__}, BLAS threads: {blas_threads}")]
    if not args.skip_train:
        rows += run_training(args)
    measured = {"blas_threads": blas_threads}
    if not args.skip_speed:
        rows += run_speed(args, measured)
    print_table(rows)
    if args.json:
        from _results import cpu_features, write_results
        print("wrote", write_results(args.json, "bench_numpy.py", argv, {"rows": dict(rows), "speed": measured,
                                                                          "cpu_features": cpu_features()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
