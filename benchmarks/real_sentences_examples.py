"""Translations and attention of one model trained on real sentences, for the chapter "Real sentences".

    python benchmarks/real_sentences_examples.py --checkpoint RUN_DIR --save
    python benchmarks/real_sentences_examples.py --task multi30k --corpus multi30k --checkpoint RUN_DIR \
        --save --results multi30k_examples
    python benchmarks/real_sentences_examples.py --task multi30k --corpus multi30k --pretrained multi30k-de-en \
        --beam-size 4 --save --results multi30k_examples

RUN_DIR is a folder written by `transformer-course train --task trans-de-en` (German -> English), for example
the seed-0 run of `bench_real_sentences.py --keep DIR`, or by `train --task multi30k --src-lang de --tgt-lang en`
with --task multi30k. The script translates the 1,000 test sentences with
greedy search, scores each with sacreBLEU's sentence-level chrF, and keeps (with --save, in
transformer_course/results/real_sentences_examples.json):
- corpus BLEU and chrF of the whole test split (they must equal what `evaluate` printed for the run);
- the share of the validation split's German words (lower-cased, `\\w+`) that no training sentence has, as the
  chapter counts it for the Ding sentences: how many new words the corpus throws at the model;
- how many translations are exactly the reference, and the share of sentences by chrF band;
- a few translations by rule, not by hand: the three of 4 to 8 source words with the highest chrF, the three
  nearest the median chrF and the three with the lowest chrF (ties broken by the SHA-256 split key);
- for the best of those, the decoder's cross-attention (last layer, mean over heads) while it reads its own
  translation back, rounded to 2 decimals: what the chapter draws;
- with --beam-size N, the same test sentences translated by beam search, scored the same way, and sacreBLEU's
  paired bootstrap test (1,000 resamples of the test sentences, sacreBLEU's fixed seed) of beam search against
  greedy search: each one's BLEU and chrF, their means and 95% intervals over the resamples, the p-value of the
  difference, and how many translations the beam changed.
--pretrained NAME reads a shipped model (transformer_course/checkpoints) instead of a run folder.
The sentences are the Ding dictionary's (GPL-2+) or Multi30k's: the file quotes only the few it shows.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys

import sacrebleu
import torch
from _results import write_results

from transformer_course.data.corpora import load_multi30k
from transformer_course.data.ding import ding_split_key, load_ding
from transformer_course.training.checkpoint import load_pretrained, model_from_checkpoint, pretrained_info
from transformer_course.training.evaluate import translate
from transformer_course.viz.widgets import translate_with_weights

N_SHOW = 3


def cross_attention(model, src_vocab, tgt_vocab, source: str, output: str) -> dict:
    """The last decoder layer's cross-attention, mean over heads, while the model writes `output` for `source`."""
    translation, source_tokens, output_tokens, weights = translate_with_weights(model, src_vocab, tgt_vocab, source)
    if translation != output:
        raise AssertionError(f"{source!r}: one sentence alone translated as {translation!r}, in a batch {output!r}")
    cross = weights["decoder_cross"][-1][0].mean(0)                                 # (T, S)
    return {"source_tokens": source_tokens, "output_tokens": output_tokens,        # rows: the token written
            "weights": [[round(w, 2) for w in row] for row in cross.tolist()]}


def beam_against_greedy(model, src_vocab, tgt_vocab, sources, references, greedy, beam_size: int) -> dict:
    """Beam search's translations of the test sentences, scored, and sacreBLEU's paired bootstrap test of beam
    against greedy: each of the 1,000 resamples draws the same sentences for both systems."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    beam = translate(model, sources, src_vocab, tgt_vocab, beam_size=beam_size)
    test = PairedTest([("greedy", greedy), (f"beam {beam_size}", beam)], {"BLEU": BLEU(), "chrF": CHRF()},
                      references=[references], test_type="bs", n_samples=1000)
    _, results = test()
    out = {"beam_size": beam_size, "changed": sum(g != b for g, b in zip(greedy, beam)), "n": len(sources),
           "n_resamples": 1000}
    for metric, key in (("BLEU", "bleu"), ("chrF2", "chrf")):
        base, system = results[metric]
        # sacreBLEU's paired bootstrap: each system's mean and 95% interval over the same resamples of the test
        # sentences, and the p-value that the difference is chance
        out[key] = {"greedy": round(base.score, 2), "beam": round(system.score, 2),
                    "greedy_mean": round(float(base.mean), 2), "greedy_ci": round(float(base.ci), 2),
                    "beam_mean": round(float(system.mean), 2), "beam_ci": round(float(system.ci), 2),
                    "p_value": round(float(system.p_value), 4)}
    print(f"beam {beam_size}: {out['changed']} of {out['n']} translations changed; BLEU {out['bleu']}; "
          f"chrF {out['chrf']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="a de->en run folder or its model.pt")
    source.add_argument("--pretrained", help="a shipped de->en model, e.g. multi30k-de-en")
    parser.add_argument("--beam-size", type=int, default=1,
                        help="also translate with beam search of this width and test it against greedy (default: "
                             "%(default)s, greedy only)")
    parser.add_argument("--task", choices=("trans-de-en", "multi30k"), default="trans-de-en",
                        help="the corpus the model was trained on (default: %(default)s)")
    parser.add_argument("--corpus", default=None,
                        help="trans-de-en: the Ding dictionary file (default: /usr/share/trans/de-en); "
                             "multi30k: the folder of its files (required)")
    parser.add_argument("--save", action="store_true", help="write transformer_course/results/RESULTS.json")
    parser.add_argument("--results", default="real_sentences_examples",
                        help="name of the results file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.task == "multi30k" and not args.corpus:
        parser.error("--corpus: expected the folder of Multi30k's files with --task multi30k")
    torch.set_num_threads(1)                     # one thread: the same sums in the same order on every machine
    if args.beam_size < 1:
        parser.error(f"--beam-size: expected an integer >= 1, got {args.beam_size}")
    if args.pretrained:
        model, src_vocab, tgt_vocab = load_pretrained(args.pretrained)
        command = pretrained_info(args.pretrained)["metadata"]["command"]
    else:
        path = args.checkpoint.rstrip("/")
        model, src_vocab, tgt_vocab, checkpoint = model_from_checkpoint(path if path.endswith(".pt")
                                                                        else f"{path}/model.pt")
        command = checkpoint.get("extra", {}).get("command")
    # Only the raw test pairs are read: the model's own vocabularies come with the checkpoint.
    data = load_multi30k(args.corpus, "de", "en") if args.task == "multi30k" else load_ding(args.corpus)
    sources, references = [s for s, _ in data.test], [t for _, t in data.test]
    outputs = translate(model, sources, src_vocab, tgt_vocab)
    bleu = sacrebleu.corpus_bleu(outputs, [references])
    chrf = sacrebleu.corpus_chrf(outputs, [references])
    rows = [{"source": s, "reference": r, "output": o, "chrf": round(sacrebleu.sentence_chrf(o, [r]).score, 1),
             "key": ding_split_key(s)} for s, r, o in zip(sources, references, outputs)]
    scores = [row["chrf"] for row in rows]
    median = statistics.median(scores)
    short = [row for row in rows if 4 <= len(row["source"].split()) <= 8]
    best = sorted(short, key=lambda row: (-row["chrf"], row["key"]))[:N_SHOW]
    middle = sorted(short, key=lambda row: (abs(row["chrf"] - median), row["key"]))[:N_SHOW]
    worst = sorted(short, key=lambda row: (row["chrf"], row["key"]))[:N_SHOW]
    bands = [(0, 20), (20, 40), (40, 60), (60, 80), (80, 101)]
    train_words = {w for german, _ in data.train for w in re.findall(r"\w+", german.lower())}
    val_words = [w for german, _ in data.val for w in re.findall(r"\w+", german.lower())]
    results = {
        "checkpoint_command": command, "pretrained": args.pretrained,
        "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
        "exact": sum(o == r for o, r in zip(outputs, references)), "n": len(rows),
        "median_sentence_chrf": median,
        "unseen_val_words": {"unseen": sum(w not in train_words for w in val_words), "words": len(val_words)},
        "chrf_bands": {f"{low}-{min(high, 100)}": sum(low <= x < high for x in scores) for low, high in bands},
        "examples": {"best": best, "median": middle, "worst": worst},
        "attention": cross_attention(model, src_vocab, tgt_vocab, best[0]["source"], best[0]["output"]),
    }
    if args.beam_size > 1:
        results["beam"] = beam_against_greedy(model, src_vocab, tgt_vocab, sources, references, outputs,
                                              args.beam_size)
    for group, chosen in results["examples"].items():
        for row in chosen:
            row.pop("key", None)                 # a row can be in two groups when scores tie
            print(f"{group:<7} chrF {row['chrf']:5.1f}  {row['source']}\n{'':20}-> {row['output']}\n"
                  f"{'':20}   ({row['reference']})")
    print(f"test: BLEU {results['bleu']}, chrF {results['chrf']}, exact {results['exact']} of {results['n']}, "
          f"median sentence chrF {median}, bands {results['chrf_bands']}")
    if args.save:
        print(write_results(args.results, "real_sentences_examples.py", argv, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
