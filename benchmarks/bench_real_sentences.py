"""Benchmark: translating real sentences (the Ding dictionary's examples or Multi30k) with the command line.

    python benchmarks/bench_real_sentences.py                               # the defaults, de->en, seed 0
    python benchmarks/bench_real_sentences.py --runs "drop3=--set dropout=0.3" "v4k=--vocab-size 4000"
    python benchmarks/bench_real_sentences.py --seeds 0 1 2 --jobs 2 --threads 1 --save
    python benchmarks/bench_real_sentences.py --seeds 0 1 2 --jobs 2 --threads 1 --steps 2000 4000 6000 8000 \
        --runs "defaults=--train-set patience=0" --save --results real_sentences_steps
    python benchmarks/bench_real_sentences.py --task multi30k --corpus multi30k --seeds 0 1 2 --jobs 3 \
        --runs "course=--src-lang de --tgt-lang en --device cuda" --save --results multi30k

Each run is one `transformer-course train --task TASK --threads T --no-progress --out DIR [FLAGS]` in a
fresh process (the defaults when FLAGS are empty), then `transformer-course evaluate` of the trained model on the
validation split (what every choice of recipe is made on) and on the test split (reported, never tuned on), with
greedy search. A run is `NAME=FLAGS`. The table gives the steps, the training time (wall clock, from the run's
history), why training stopped, and sacreBLEU and chrF (sacrebleu's defaults, on detokenised text) on both
splits. The Ding sentences (--task trans-de-en, the default) need the dictionary: `apt-get install trans-de-en`
(or --corpus PATH); Multi30k (--task multi30k) needs --corpus, the folder of its task-1 files (train.de.gz, ...:
github.com/multi30k/dataset, data/task1/raw; `train --task multi30k --download` fetches them).

Timings depend on the machine and on what else runs: with --jobs 2 and --threads 1 two runs share the two cores.
The scores do not depend on the timing when the run ends by its step count or by its stop rule, not by
--max-minutes.

With --steps S1 S2 ..., each run is trained to S1 steps, scored, resumed to S2 (`train --resume --max-steps S2`;
a resumed run continues exactly where it stopped), scored again, and so on: what more steps buy, on the
validation split only (the test split is scored once, at the end). Give the runs `--train-set patience=0`, or
the stop rule may end a run before the next mark.

With --rescore nothing is trained: the finished runs in --keep DIR are scored again, for a benchmark stopped
before its last run ended (give the --runs, --seeds, --threads and --jobs it ran with; "process_s" is then None).
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


BASE = [sys.executable, "-m", "transformer_course"]


def _run(command: list[str], what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{what}: exit {result.returncode}\n{result.stderr[-2000:]}")
    return result.stdout


def evaluate(out: Path, split: str, what: str) -> dict:
    """BLEU and chrF of the run in `out` (its model.pt) on one split, greedy search."""
    return _scores(_run(BASE + ["evaluate", "--checkpoint", str(out), "--split", split, "--show-errors", "0"],
                        f"{what}: evaluate"))


def run_one(name: str, flags: list[str], seed: int, threads: int, corpus: str | None, workdir: Path,
            steps: list[int] | None = None, task: str = "trans-de-en", rescore: bool = False) -> dict:
    out = workdir / f"{name}-seed{seed}"
    what = f"{name} seed {seed}"
    data = ["--task", task] + (["--corpus", corpus] if corpus else [])
    command = BASE + ["train", *data, "--seed", str(seed), "--threads", str(threads), "--no-progress",
                      "--out", str(out), *flags]
    started = time.perf_counter()
    by_steps = []
    for i, mark in enumerate([] if rescore else steps or [None]):
        extra = ([] if mark is None else ["--max-steps", str(mark)]) + (["--resume"] if i else [])
        _run(command + extra, what)
        if mark is not None:
            by_steps.append({"step": mark, "val": evaluate(out, "val", what)})
    wall = None if rescore else time.perf_counter() - started      # rescoring: only the run's own clock
    history = json.loads((out / "history.json").read_text(encoding="utf-8"))
    row = {"name": name, "flags": shlex.join(flags), "seed": seed, "steps": history["step"][-1],
           "train_s": history["time_s"], "process_s": wall, "stop_reason": history["stop_reason"],
           "command": shlex.join(command[1:]), "curve": curve(history)}
    if by_steps:
        row["by_steps"] = by_steps
    row["val"] = by_steps[-1]["val"] if by_steps else evaluate(out, "val", what)
    row["test"] = evaluate(out, "test", what)
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
    parser.add_argument("--task", choices=("trans-de-en", "multi30k"), default="trans-de-en",
                        help="the corpus: the Ding sentences (default) or Multi30k")
    parser.add_argument("--corpus", default=None,
                        help="trans-de-en: the Ding dictionary file (default: /usr/share/trans/de-en); "
                             "multi30k: the folder of its files (required)")
    parser.add_argument("--keep", default=None, metavar="DIR", help="keep the runs' folders under DIR")
    parser.add_argument("--steps", nargs="+", type=int, default=None, metavar="S",
                        help="train each run to S1 steps, score it on the validation split, resume to S2, ...")
    parser.add_argument("--rescore", action="store_true",
                        help="train nothing: score the finished runs in --keep DIR again (with the same --runs "
                             "and --seeds), e.g. after the benchmark was stopped before its last run ended")
    parser.add_argument("--save", action="store_true", help="write transformer_course/results/RESULTS.json")
    parser.add_argument("--results", default="real_sentences",
                        help="name of the results file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.task == "multi30k" and not args.corpus:
        parser.error("--corpus: expected the folder of Multi30k's files with --task multi30k")
    runs = []
    for spec in args.runs:
        name, sep, flags = spec.partition("=")
        if not sep or not name:
            parser.error(f"--runs: expected NAME=FLAGS, got {spec!r}")
        runs.append((name, shlex.split(flags)))
    if args.steps and (sorted(set(args.steps)) != args.steps or args.steps[0] < 1):
        parser.error(f"--steps: expected increasing positive step counts, got {args.steps}")
    if args.rescore and (not args.keep or args.steps):
        parser.error("--rescore: expected --keep DIR (the runs to score) and no --steps")
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="real-sentences-"))
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = [(name, flags, seed) for name, flags in runs for seed in args.seeds]
    rows = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, name, flags, seed, args.threads, args.corpus, workdir, args.steps, args.task,
                               args.rescore)
                   for name, flags, seed in jobs]
        for future in as_completed(futures):         # each row as soon as its run ends
            rows.append(future.result())
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    order = {(name, seed): i for i, (name, _, seed) in enumerate(jobs)}
    rows.sort(key=lambda row: order[row["name"], row["seed"]])
    print()
    print(table(rows))
    for row in rows:
        if "by_steps" in row:
            print(f"{row['name']} seed {row['seed']}: val BLEU / chrF at " + ", ".join(
                f"{mark['step']}: {mark['val']['bleu']:.2f} / {mark['val']['chrf']:.2f}" for mark in row["by_steps"]))
    if args.save:
        import torch
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        write_results(args.results, "bench_real_sentences.py", argv,
                      {"task": args.task, "threads": args.threads, "jobs": args.jobs, "gpu": gpu, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
