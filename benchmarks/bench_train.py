"""Benchmark: the command line's default recipe on every number-translation pair, held-out scores per stratum.

    python benchmarks/bench_train.py                          # the whole matrix (about 30 minutes, 2 threads)
    python benchmarks/bench_train.py --pairs en-fr en-de --ranges 9999
    python benchmarks/bench_train.py --extra "--max-steps 3000"   # any other `train` flags, for tuning
    python benchmarks/bench_train.py --save                   # also write transformer_course/results/train_matrix.json
    python benchmarks/bench_train.py --pairs en-fr --ranges 9999 --save --results gpu_training \
        --variants "bf16=--preset gpu --device cuda" "fp32=--preset gpu --device cuda --precision fp32"

Each cell of the matrix is one `transformer-course train --task numbers --src-lang A --tgt-lang B
--max-number N --threads T --no-progress --out DIR` in a fresh process, with no tuning flag: the defaults are
what is measured. The matrix: English <-> French, German, Spanish and digits, both directions, numbers up to
9,999; English -> French and English -> German up to 99,999. The stop rule of the numbers task decides each
run's length (config.STOP_RULES: every validation and everyday number right at 3 successive evaluations, at most
8000 steps). The table gives the steps, the training time (wall clock, from the run's history: data building and
the final evaluation excluded), held-out exact match overall and per stratum (3-, 4-, 5-digit numbers; a stratum
counts with >= 20 pairs), coverage of the everyday numbers (all trained on) and chrF. Timings depend on the machine:
run it on an idle one, with as many threads as it has cores. Goals (issue tracker): >= 99.5% overall, >= 99% in
every stratum, 100% coverage, within 5 minutes.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_results

PAIRS_9999 = ["en-fr", "fr-en", "en-de", "de-en", "en-es", "es-en", "en-digits", "digits-en"]
PAIRS_99999 = ["en-fr", "en-de"]
STRATA = ("3 digits", "4 digits", "5 digits")


def run_cell(pair: str, max_number: int, threads: int, extra: list[str], workdir: Path, variant: str = "") -> dict:
    """Train one pair with the defaults (and `extra` flags) in a fresh process; return its scores and times."""
    src, tgt = pair.split("-")
    out = workdir / f"{pair}-{max_number}{'-' + variant if variant else ''}"
    command = [sys.executable, "-m", "transformer_course", "train", "--task", "numbers", "--src-lang", src,
               "--tgt-lang", tgt, "--max-number", str(max_number), "--threads", str(threads), "--no-progress",
               "--out", str(out), *extra]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{pair} {max_number}: exit {result.returncode}\n{result.stderr[-2000:]}")
    import torch
    checkpoint = torch.load(out / "model.pt", map_location="cpu", weights_only=True)
    history = json.loads((out / "history.json").read_text(encoding="utf-8"))
    test = checkpoint["extra"]["test"]
    return {"pair": pair, "max_number": max_number, "variant": variant, "steps": history["step"][-1],
            "train_s": history["time_s"],
            "process_s": wall, "stop_reason": history["stop_reason"], "exact_match": test["exact_match"],
            "strata": test["strata"], "coverage": test["coverage"], "chrf": test["chrf"], "bleu": test["bleu"],
            "coverage_errors": test["coverage_errors"],
            "curve": [{k: e[k] for k in ("step", "exact_match", "coverage", "loss") if k in e}
                      for e in history["eval"]],
            "command": shlex.join(command[1:])}


def table(rows: list[dict]) -> str:
    head = ["variant", "pair", "range", "steps", "train s", "exact", *STRATA, "coverage", "chrF"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        strata = [f"{r['strata'][s]['exact_match']:.4f} ({r['strata'][s]['n']})" if s in r["strata"] else "-"
                  for s in STRATA]
        lines.append(f"| {r['variant'] or 'defaults'} | {r['pair']} | 0..{r['max_number']:,} | {r['steps']} | "
                     f"{r['train_s']:.0f} | "
                     f"{r['exact_match']:.4f} | " + " | ".join(strata) + f" | {r['coverage']:.4f} | {r['chrf']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=None, help="e.g. en-fr de-en (default: the matrix)")
    parser.add_argument("--ranges", nargs="+", type=int, default=None, help="max numbers (default: 9999 99999)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default: 2)")
    parser.add_argument("--extra", default="", help="more `train` flags, quoted (tuning only: not the defaults)")
    parser.add_argument("--variants", nargs="+", default=None, metavar="NAME=FLAGS",
                        help="train every cell once per variant, each with its own `train` flags (after --extra)")
    parser.add_argument("--save", action="store_true",
                        help="write the rows, the command and the machine to transformer_course/results/NAME.json")
    parser.add_argument("--results", default="train_matrix", metavar="NAME",
                        help="the results file --save writes (default: train_matrix)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.results):
        parser.error(f"--results: expected a file name without folder or suffix (letters, digits, _ and -), "
                     f"got {args.results!r}")
    variants = {"": []}
    if args.variants:
        if not all("=" in v and v.split("=", 1)[0] for v in args.variants):
            parser.error(f"--variants: expected NAME=FLAGS for each variant, got {args.variants}")
        variants = {v.split("=", 1)[0]: shlex.split(v.split("=", 1)[1]) for v in args.variants}

    cells = []
    for max_number in args.ranges or (9999, 99_999):
        for pair in args.pairs or (PAIRS_9999 if max_number <= 9999 else PAIRS_99999):
            cells.append((pair, max_number))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-train-") as workdir:
        for (pair, max_number), (variant, flags) in ((c, v) for c in cells for v in variants.items()):
            row = run_cell(pair, max_number, args.threads, shlex.split(args.extra) + flags, Path(workdir), variant)
            rows.append(row)
            print(f"{variant + ': ' if variant else ''}{pair} 0..{max_number}:"
                  f" exact {row['exact_match']:.4f}, coverage {row['coverage']:.4f}, "
                  f"{row['steps']} steps in {row['train_s']:.0f} s ({row['process_s']:.0f} s with data and "
                  "evaluation)", flush=True)
            for src, out, ref in row["coverage_errors"][:5]:
                print(f"  everyday number wrong: {src!r} -> {out!r} (reference {ref!r})", flush=True)
    import platform

    import torch
    print(f"\n{platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} threads"
          + (f", extra flags: {args.extra}" if args.extra else "")
          + (f", variants: {' '.join(args.variants)}" if args.variants else "")
          + ("" if args.extra or args.variants else ", default recipe"))
    print(table(rows))
    if args.save:
        torch.set_num_threads(args.threads)   # the machine record names the cells' thread count
        path = write_results(args.results, "bench_train.py", argv,
                             {"threads": args.threads, "extra": args.extra, "variants": args.variants, "rows": rows})
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
