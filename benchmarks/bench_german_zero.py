"""Benchmark: German "null" (zero) on the numbers up to 99,999, three recipes, over seeds.

    python benchmarks/bench_german_zero.py --save                       # every variant x 3 seeds, 2 at a time
    python benchmarks/bench_german_zero.py --variants stop-rule --save  # one variant; the file keeps the others
    python benchmarks/bench_german_zero.py --seeds 0 1 2 3 --jobs 1

Each run is `transformer-course train --task numbers --src-lang en --tgt-lang de --max-number 99999
--threads 1 --seed S` plus the variant's flags, in a fresh process:
  sinusoidal   --set positional=sinusoidal --max-steps 3000   (a fixed 3000 steps, the course preset's)
  rope         --set positional=rope --max-steps 3000         (rotary positions instead, chapter 6)
  stop-rule    --set positional=sinusoidal                    (the default: train until every validation and
                                                               everyday number is right at 3 successive
                                                               evaluations, at most 8000 steps)
Read letter by letter, German "null" is the only number word with a doubled letter, so the decoder must count:
after "nul" write "l", after "null" stop. For each trained model the script reads those two next-letter
probabilities with "null" as the teacher-forced target and reports the margin of each decision (probability of
the right letter minus that of the wrong one), with the greedy translation of "zero", the coverage of the
everyday numbers, the held-out exact match and the steps trained. A 3000-step run takes about 7 minutes on one
thread;
`--jobs` runs that many at once (at most one per core, or they slow each other down many times over).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _results import RESULTS, summary, write_results
from bench_train import run_cell

VARIANTS = {"sinusoidal": ["--set", "positional=sinusoidal", "--max-steps", "3000"],
            "rope": ["--set", "positional=rope", "--max-steps", "3000"],
            "stop-rule": ["--set", "positional=sinusoidal"]}


def null_margins(run_dir: Path) -> dict:
    """P(next letter) after "nul" and after "null" (teacher-forced), for the model trained in run_dir."""
    import torch

    from transformer_course.data.vocab import EOS_ID
    from transformer_course.training.checkpoint import model_from_checkpoint

    model, src_vocab, tgt_vocab, _ = model_from_checkpoint(run_dir / "model.pt")
    source = torch.tensor([src_vocab.encode("zero")])                    # (1, S)
    target = torch.tensor([tgt_vocab.encode("null", add_bos=True)])      # (1, 6): <bos> n u l l <eos>
    with torch.no_grad():
        next_letter = model(source, target[:, :-1]).softmax(-1)[0]      # (5, V): after each prefix
    letter_l = tgt_vocab.encode("l", add_eos=False)[0]
    after_nul, after_null = next_letter[3], next_letter[4]
    return {"p_l_after_nul": float(after_nul[letter_l]), "p_stop_after_nul": float(after_nul[EOS_ID]),
            "p_stop_after_null": float(after_null[EOS_ID]), "p_l_after_null": float(after_null[letter_l]),
            "margin_nul": float(after_nul[letter_l] - after_nul[EOS_ID]),
            "margin_null": float(after_null[EOS_ID] - after_null[letter_l])}


def run(variant: str, seed: int, workdir: Path) -> dict:
    cell_dir = workdir / f"{variant}-{seed}"
    cell_dir.mkdir()
    row = run_cell("en-de", 99_999, 1, [*VARIANTS[variant], "--seed", str(seed)], cell_dir)
    zero = next((out for src, out, _ in row["coverage_errors"] if src == "zero"), "null")
    row.update(variant=variant, seed=seed, zero=zero, **null_margins(cell_dir / "en-de-99999"))
    print(f"{variant:10s} seed {seed}: 'zero' -> {zero!r}, coverage {row['coverage']:.4f}, exact "
          f"{row['exact_match']:.4f}, margins {row['margin_nul']:+.3f} / {row['margin_null']:+.3f}, "
          f"{row['train_s']:.0f} s", flush=True)
    return row


def table(rows: list[dict]) -> str:
    head = ["variant", "seed", "'zero' ->", "P(l) after nul", "P(stop) after nul", "P(stop) after null",
            "P(l) after null", "coverage", "held-out exact", "steps", "train s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['variant']} | {r['seed']} | {r['zero']} | {r['p_l_after_nul']:.3f} | "
                     f"{r['p_stop_after_nul']:.3f} | {r['p_stop_after_null']:.3f} | {r['p_l_after_null']:.3f} | "
                     f"{r['coverage']:.4f} | {r['exact_match']:.4f} | {r['steps']} | {r['train_s']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="which recipes (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds (default: 0 1 2)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once, one thread each (default: 2)")
    parser.add_argument("--save", action="store_true", help="write transformer_course/results/german_zero.json")
    args = parser.parse_args(argv)
    cells = [(v, s) for v in args.variants for s in args.seeds]
    with tempfile.TemporaryDirectory(prefix="bench-german-zero-") as workdir, ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda cell: run(*cell, Path(workdir)), cells))
    if args.save:                                # keep the saved rows of the variants and seeds not run now
        saved = load_saved()
        rows = [r for r in saved if (r["variant"], r["seed"]) not in set(cells) and r["variant"] in VARIANTS] + rows
        rows.sort(key=lambda r: (list(VARIANTS).index(r["variant"]), r["seed"]))
    print()
    print(table(rows))
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in rows)]
    summaries = {v: {key: summary([r[key] for r in rows if r["variant"] == v])
                     for key in ("margin_nul", "margin_null", "coverage", "exact_match", "steps", "train_s")}
                 for v in variants}
    for v, s in summaries.items():
        right = sum(r["zero"] == "null" for r in rows if r["variant"] == v)
        print(f"{v:10s} 'null' right in {right} of {s['coverage']['n']} seeds; margin after 'nul' / 'null': "
              f"mean {s['margin_nul']['mean']:+.3f} / {s['margin_null']['mean']:+.3f}, "
              f"min {s['margin_nul']['min']:+.3f} / {s['margin_null']['min']:+.3f}")
    if args.save:
        import torch
        torch.set_num_threads(1)                 # the machine record names the runs' thread count
        path = write_results("german_zero", "bench_german_zero.py", argv,
                             {"threads": 1, "jobs": args.jobs, "variants": VARIANTS,
                              "seeds": sorted({r["seed"] for r in rows}), "rows": rows,
                              "summary": summaries})
        print(f"wrote {path}")
    return 0


def load_saved() -> list[dict]:
    """The rows of transformer_course/results/german_zero.json, if any (each row names its variant and command)."""
    import json
    path = RESULTS / "german_zero.json"
    return json.loads(path.read_text(encoding="utf-8"))["rows"] if path.exists() else []


if __name__ == "__main__":
    sys.exit(main())
