"""A toy-scale version of Table 3 of Vaswani et al. (2017): vary one thing at a time and retrain.

    python benchmarks/ablations.py             # the run chapter 9 prints: 12 variants x 5 seeds, 400 steps each
    python benchmarks/ablations.py --steps 800 --seeds 0 1 2 --only base heads=1

Every variant trains the chapter 9 model (d_model 64, 4 heads, 2 + 2 layers, dropout 0.1, label smoothing 0.1,
sinusoidal positions) on English -> French number words (0..1999, split by number) with one change, for a
short budget on purpose: at full convergence every variant reaches ~100% and the table would say nothing.
Printed per variant: parameters, held-out exact match (greedy, the split's test numbers, never trained on), validation
perplexity (teacher forced, no smoothing), training time, and the paper's numbers for the matching row of
its Table 3 (EN-DE newstest2013 dev BLEU and perplexity per wordpiece, base model = 25.8 BLEU, 4.92 PPL); the
nearest row is the paper's change in the same direction (half / double the heads, fewer / more layers).
Every variant runs with the same seeds (at least three); the table gives the mean and the standard deviation
over seeds, and the results file transformer_course/results/ablations.json keeps every seed's figures: the spread
between seeds is the noise level against which the differences between variants must be read. One more row,
a learning-rate factor of 1.0 instead of chapter 9's 0.5, has no counterpart in the paper.
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time

from _results import summary, write_results

# name -> (ModelConfig overrides, TrainConfig overrides, the paper's Table 3 row: (label, BLEU, PPL) or None)
VARIANTS = {
    "base": ({}, {}, ("base", 25.8, 4.92)),
    "heads=1": ({"n_heads": 1}, {}, ("(A) h=1", 24.9, 5.29)),
    "heads=2": ({"n_heads": 2}, {}, ("(A) h=4", 25.5, 5.00)),
    "heads=8": ({"n_heads": 8}, {}, ("(A) h=16", 25.8, 4.91)),
    "layers=1": ({"n_encoder_layers": 1, "n_decoder_layers": 1}, {}, ("(C) N=2", 23.7, 6.11)),
    "layers=4": ({"n_encoder_layers": 4, "n_decoder_layers": 4}, {}, ("(C) N=8", 25.5, 4.88)),
    "dropout=0.0": ({"dropout": 0.0}, {}, ("(D) P_drop=0.0", 24.6, 5.77)),
    "dropout=0.3": ({"dropout": 0.3}, {}, ("(D) P_drop=0.2", 25.5, 4.95)),
    "smoothing=0.0": ({}, {"label_smoothing": 0.0}, ("(D) eps_ls=0.0", 25.3, 4.67)),
    "smoothing=0.2": ({}, {"label_smoothing": 0.2}, ("(D) eps_ls=0.2", 25.7, 5.47)),
    "learned positions": ({"positional": "learned"}, {}, ("(E) learned", 25.7, 4.92)),
    "lr factor 1.0": ({}, {"lr_factor": 1.0}, None),
}

# the chapter 9 model and recipe (the paper's recipe, sizes for a CPU)
BASE_MODEL = dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, max_len=64)
BASE_TRAIN = dict(batch_size=32, warmup_steps=300, lr_factor=0.5, label_smoothing=0.1, average_last=1,
                  device="cpu")


def run_variant(name: str, steps: int, seed: int, max_number: int) -> dict:
    from transformer_course.config import get_preset, train_recipe
    from transformer_course.data.loader import make_dataloader
    from transformer_course.data.tasks import number_translation
    from transformer_course.training.evaluate import evaluate, evaluate_pairs
    from transformer_course.training.run import VAL_BATCH_SIZE, prepare_run
    from transformer_course.training.trainer import train

    model_over, train_over, _ = VARIANTS[name]
    data = number_translation("en", "fr", max_number=max_number, seed=0)     # same split for every variant
    src_vocab, tgt_vocab = data.build_vocabs()
    model_config = get_preset("course").replace(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab),
                                                **{**BASE_MODEL, **model_over})
    # the chapter's recipe with the numbers task's stop rule off: every variant gets the same number of steps
    train_config = train_recipe("course", "numbers", max_steps=steps, eval_every=steps, stop_when_perfect=0,
                                monitor="loss", seed=seed, **{**BASE_TRAIN, **train_over})
    # the model and batches `transformer-course train` would build (its evaluation is not needed: the stop rule is off)
    model, train_loader, _ = prepare_run(data, (src_vocab, tgt_vocab), model_config, train_config)
    val_loader = make_dataloader(data.val, src_vocab, tgt_vocab, batch_size=VAL_BATCH_SIZE, shuffle=False)
    start = time.perf_counter()
    train(model, train_loader, train_config, callbacks=[])
    train_s = time.perf_counter() - start
    val = evaluate(model, val_loader)
    test = evaluate_pairs(model, data.test, src_vocab, tgt_vocab)
    return {"params": sum(p.numel() for p in model.parameters()), "exact_match": test["exact_match"],
            "perplexity": val["perplexity"], "bleu": test["bleu"], "time_s": train_s, "n_test": len(data.test),
            "split": data.info["split"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400, help="training steps per variant (default: 400)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                        help="seeds, at least 3 (default: 0 1 2 3 4)")
    parser.add_argument("--max-number", type=int, default=1999, help="numbers 0..N (default: 1999)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    parser.add_argument("--only", nargs="+", default=None, choices=sorted(VARIANTS), metavar="VARIANT",
                        help=f"run only these variants (default: all of {list(VARIANTS)})")
    args = parser.parse_args(argv)
    if len(set(args.seeds)) < 3:
        parser.error(f"--seeds: a comparison of variants needs at least 3 seeds, got {args.seeds}")

    print("command:", shlex.join(["python", "benchmarks/ablations.py", *(sys.argv[1:] if argv is None else argv)]))
    print(f"task: English -> French number words 0..{args.max_number}; {args.steps} steps per variant; "
          f"seeds {args.seeds}; {args.threads} thread(s)", flush=True)
    names = args.only or list(VARIANTS)
    variants = {}
    from transformer_course.training.run import cpu_settings

    with cpu_settings(args.threads):                 # the settings `transformer-course train` uses
        for name in names:
            results = [run_variant(name, args.steps, seed, args.max_number) for seed in args.seeds]
            paper = VARIANTS[name][2]
            variants[name] = {
                "params": results[0]["params"],
                "paper_row": None if paper is None else {"row": paper[0], "bleu": paper[1], "ppl": paper[2]},
                "per_seed": {str(seed): r for seed, r in zip(args.seeds, results)},
                "summary": {key: summary([r[key] for r in results]) for key in ("exact_match", "perplexity", "time_s")},
            }
            em = variants[name]["summary"]["exact_match"]
            print(f"  done: {name:18s} exact match {em['mean']:.3f} +- {em['std']:.3f} "
                  f"({statistics.fmean(r['time_s'] for r in results):.0f} s per seed)", flush=True)

    print()
    print("| variant | params | held-out exact match, mean (std) | val perplexity, mean (std) | nearest paper row "
          "| paper BLEU | paper PPL |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for name, v in variants.items():
        em, ppl, paper = v["summary"]["exact_match"], v["summary"]["perplexity"], v["paper_row"]
        paper_cells = ("| - | - | - |" if paper is None
                       else f"| {paper['row']} | {paper['bleu']:.1f} | {paper['ppl']:.2f} |")
        print(f"| {name} | {v['params']:,} | {em['mean']:.3f} ({em['std']:.3f}) | {ppl['mean']:.3f} ({ppl['std']:.3f}) "
              + paper_cells)
    path = write_results("ablations", "ablations.py", argv,
                         {"task": f"English -> French number words 0..{args.max_number}", "steps": args.steps,
                          "n_test": next(iter(next(iter(variants.values()))["per_seed"].values()))["n_test"],
                          "seeds": args.seeds, "variants": variants})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
