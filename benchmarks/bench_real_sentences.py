"""Benchmark: translating real sentences (the Ding dictionary's examples, German <-> English) with the command line.

    python benchmarks/bench_real_sentences.py                               # the defaults, de->en, seed 0
    python benchmarks/bench_real_sentences.py --runs "drop3=--set dropout=0.3" "v4k=--vocab-size 4000"
    python benchmarks/bench_real_sentences.py --seeds 0 1 2 --jobs 2 --threads 1 --save

Each run is one `transformer-course train --task trans-de-en --threads T --no-progress --out DIR [FLAGS]` in a
fresh process (the defaults when FLAGS are empty), then `transformer-course evaluate` of the trained model on the
validation split (what every choice of recipe is made on) and on the test split (reported, never tuned on), with
greedy search. A run is `NAME=FLAGS`. The table gives the steps, the training time (wall clock, from the run's
history), why training stopped, and sacreBLEU and chrF (sacrebleu's defaults, on detokenised text) on both
splits. Needs the dictionary: `apt-get install trans-de-en` (or --corpus PATH).

Timings depend on the machine and on what else runs: with --jobs 2 and --threads 1 two runs share the two cores.
The scores do not depend on the timing when the run ends by its step count or by its stop rule, not by
--max-minutes.
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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from _results import write_results


def _scores(report: str) -> dict:
    """BLEU and chrF (with signatures) from the report `evaluate` prints."""
    bleu = re.search(r"^BLEU\s+([\d.]+)\s+\((.*)\)$", report, re.MULTILINE)
    chrf = re.search(r"^chrF\s+([\d.]+)\s+\((.*)\)$", report, re.MULTILINE)
    return {"bleu": float(bleu.group(1)), "bleu_signature": bleu.group(2),
            "chrf": float(chrf.group(1)), "chrf_signature": chrf.group(2)}


def run_one(name: str, flags: list[str], seed: int, threads: int, corpus: str | None, workdir: Path) -> dict:
    out = workdir / f"{name}-seed{seed}"
    base = [sys.executable, "-m", "transformer_course"]
    data = ["--task", "trans-de-en"] + (["--corpus", corpus] if corpus else [])
    command = base + ["train", *data, "--seed", str(seed), "--threads", str(threads), "--no-progress",
                      "--out", str(out), *flags]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{name} seed {seed}: exit {result.returncode}\n{result.stderr[-2000:]}")
    wall = time.perf_counter() - started
    history = json.loads((out / "history.json").read_text(encoding="utf-8"))
    row = {"name": name, "flags": shlex.join(flags), "seed": seed, "steps": history["step"][-1],
           "train_s": history["time_s"], "process_s": wall, "stop_reason": history["stop_reason"],
           "command": shlex.join(command[1:]), "curve": curve(history)}
    for split in ("val", "test"):
        evaluation = subprocess.run(base + ["evaluate", "--checkpoint", str(out), "--split", split,
                                            "--show-errors", "0"], capture_output=True, text=True)
        if evaluation.returncode != 0:
            raise SystemExit(f"{name} seed {seed}: evaluate exit {evaluation.returncode}\n"
                             f"{evaluation.stderr[-2000:]}")
        row[split] = _scores(evaluation.stdout)
    return row


def curve(history: dict) -> dict:
    """The validation loss and token accuracy at each evaluation of a run (what more steps bought)."""
    return {"step": [e["step"] for e in history["eval"]],
            "loss": [round(e["loss"], 3) for e in history["eval"]],
            "token_accuracy": [round(e["token_accuracy"], 3) for e in history["eval"]]}


def table(rows: list[dict]) -> str:
    lines = [f"{'run':<14} {'seed':>4} {'steps':>6} {'train s':>8} {'stop':<10} {'val BLEU':>8} {'val chrF':>8} "
             f"{'test BLEU':>9} {'test chrF':>9}  flags"]
    for r in rows:
        lines.append(f"{r['name']:<14} {r['seed']:>4} {r['steps']:>6} {r['train_s']:>8.0f} {r['stop_reason']:<10} "
                     f"{r['val']['bleu']:>8.2f} {r['val']['chrf']:>8.2f} {r['test']['bleu']:>9.2f} "
                     f"{r['test']['chrf']:>9.2f}  {r['flags']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", default=["defaults="], metavar="NAME=FLAGS",
                        help="runs to make: a name, '=', and `train` flags (default: the defaults)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--threads", type=int, default=2, help="threads of each run (default: 2)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (default: 1)")
    parser.add_argument("--corpus", default=None, help="the Ding dictionary file (default: /usr/share/trans/de-en)")
    parser.add_argument("--keep", default=None, metavar="DIR", help="keep the runs' folders under DIR")
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/real_sentences.json")
    args = parser.parse_args(argv)
    runs = []
    for spec in args.runs:
        name, sep, flags = spec.partition("=")
        if not sep or not name:
            parser.error(f"--runs: expected NAME=FLAGS, got {spec!r}")
        runs.append((name, shlex.split(flags)))
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="real-sentences-"))
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = [(name, flags, seed) for name, flags in runs for seed in args.seeds]
    rows = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, name, flags, seed, args.threads, args.corpus, workdir)
                   for name, flags, seed in jobs]
        for future in as_completed(futures):         # each row as soon as its run ends
            rows.append(future.result())
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    order = {(name, seed): i for i, (name, _, seed) in enumerate(jobs)}
    rows.sort(key=lambda row: order[row["name"], row["seed"]])
    print()
    print(table(rows))
    if args.save:
        import torch
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        write_results("real_sentences", "bench_real_sentences.py", argv,
                      {"threads": args.threads, "jobs": args.jobs, "gpu": gpu, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
