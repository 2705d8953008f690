"""Write transformer_course/checkpoints/README.md, the shipped models' cards, from their .json files.

    python -m tools.model_cards            # rewrite the cards after `train ... --export`
    python -m tools.model_cards --check    # exit 1 if the README is not what the .json files say

Every figure in a card (hash, sizes, split, steps, time, scores per stratum, the everyday numbers, the known
errors) is read from the metadata that `train --export` wrote next to the weights: nothing is typed by hand.
tests/test_training/test_train_pretrained.py runs the check.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "transformer_course" / "checkpoints"
README = FOLDER / "README.md"
LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "digits": "digits"}
TOKENS = {"word": "words", "char": "characters", "bpe": "BPE tokens"}
TASKS = {"multi30k": "the image captions of Multi30k (Elliott et al. 2016), task 1"}
CORPORA = {"multi30k": "Multi30k's task-1 files (github.com/multi30k/dataset, data/task1/raw): its training "
                       "split to train on and to learn the joint BPE from, its validation split for the stop rule and "
                       "the checkpoint averaging, its 2016 Flickr test set to score."}

HEADER = """# Shipped checkpoints

Small models trained by the course's own command line, shipped so that a chapter or a workshop can translate
without training first. Each card is written by `python -m tools.model_cards` from the model's `.json` file
(what `train --export` recorded): nothing in it is typed by hand. Load one with

```python
from transformer_course.training.checkpoint import load_pretrained
model, src_vocab, tgt_vocab = load_pretrained("numbers-en-fr")
```

or translate from a shell: `echo "ninety-seven" | python -m transformer_course translate --pretrained numbers-en-fr`.
`load_pretrained` checks the weights' sha256 against the one recorded in the `.json` file. Training times are
wall clock on the 2-core machine that trained the model, which may have been running other work at the time.
Numbers below 101 are all everyday numbers, so the held-out strata start at 3 digits.
"""


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _model_line(info: dict, src: str, tgt: str) -> str:
    cfg, meta = info["model_config"], info["metadata"]
    tokens = [TOKENS[info[side]["tokenizer"]] for side in ("src_vocab", "tgt_vocab")]
    if info["src_vocab"] == info["tgt_vocab"]:           # one joint vocabulary (the corpora's BPE)
        vocab = f"one joint vocabulary of {cfg['src_vocab_size']:,} {src} and {tgt} {tokens[0]} for both sides"
    else:
        vocab = (f"vocabularies of {cfg['src_vocab_size']:,} {src} {tokens[0]} and {cfg['tgt_vocab_size']:,} "
                 f"{tgt} {tokens[1]}")
    return (f"- **Model**: the `{meta['model_preset']}` preset: {'pre' if cfg['norm_first'] else 'post'}-LN "
            f"encoder-decoder, d_model {cfg['d_model']}, {cfg['n_heads']} heads, d_ff {cfg['d_ff']}, "
            f"{cfg['n_encoder_layers']} + {cfg['n_decoder_layers']} layers, dropout {cfg['dropout']}, "
            f"{cfg['positional']} positions, {'tied' if cfg['tie_output_embedding'] else 'separate'} output "
            f"embedding; {vocab} (special tokens included).")


def _training_line(meta: dict) -> str:
    train = meta["train_config"]
    return (f"- **Training**: {meta['steps']:,} steps of batch {train['batch_size']}, Adam ({train['adam_beta1']}, "
            f"{train['adam_beta2']}, {train['adam_eps']:g}), the paper's schedule at factor {train['lr_factor']} "
            f"with warm-up {train['warmup_steps']}, label smoothing {train['label_smoothing']}, the mean of the last "
            f"{train['average_last']} evaluation points' weights, {train['precision']}; "
            + (f"{meta['train_s']:.0f} s on {meta['threads']} CPU thread{'s' if meta['threads'] > 1 else ''} "
               if "train_s" in meta else "")
            + f"(torch {meta['torch']}).")


def _numbers_body(info: dict, src: str, tgt: str) -> list[str]:
    """What a number-words model's card says about its data and its held-out scores."""
    data, test = info["metadata"]["data"], info["metadata"]["test"]
    lines = [
        f"- **Data**: `number_translation({data['src_lang']!r}, {data['tgt_lang']!r}, "
        f"max_number={data['max_number']}, seed={data['data_seed']}, split={data.get('split', 1)})`, split *by "
        f"number*: {test['n_sentences']:,} test numbers (at most 10% of each magnitude), never trained on; the "
        "119 everyday numbers (0–100, the hundreds, the thousands, 1,100) always in training.",
        _training_line(info["metadata"]), "",
        "Held-out test numbers, greedy decoding:", "",
        "| numbers | pairs | exact match |", "|---|---|---|",
    ]
    for label, row in test.get("strata", {}).items():
        lines.append(f"| {label} | {row['n']} | {_pct(row['exact_match'])} |")
    lines += [f"| all | {test['n_sentences']} | **{_pct(test['exact_match'])}** |", "",
              f"chrF {test['chrf']:.2f}, token accuracy {test['token_accuracy']:.4f}, perplexity "
              f"{test['perplexity']:.3f}; BLEU {test['bleu']:.2f}"
              + (" (most references are shorter than 4 words, so BLEU's 4-gram precision says little: read chrF)"
                 if test.get("short_references", 0) > 0.5 else "") + "."]
    coverage = test.get("coverage")
    if coverage is not None:
        wrong = test.get("coverage_errors", [])
        lines += ["", f"Everyday numbers (all trained on): {_pct(coverage)} right"
                  + (": " + "; ".join(f'"{s}" → "{o}" (not "{t}")' for s, o, t in wrong) if wrong else ".")]
    errors = test.get("errors", [])
    lines += ["", "**Known errors** on the held-out numbers: "
              + ("; ".join(f'"{s}" → "{o}" (not "{t}")' for s, o, t in errors) if errors else "none.")]
    return lines


def _corpus_body(info: dict, src: str, tgt: str) -> list[str]:
    """What a model trained on a corpus of real sentences (Multi30k) says about its data and its test scores."""
    test = info["metadata"]["test"]
    return [
        f"- **Data**: {CORPORA[info['metadata']['data']['task']]}",
        _training_line(info["metadata"]), "",
        f"Its test split ({test['n_sentences']:,} sentences, never trained on or tuned on), greedy decoding, "
        f"scored by sacreBLEU on detokenised text: **BLEU {test['bleu']:.2f}** ({test['bleu_signature']}), "
        f"chrF {test['chrf']:.2f} ({test['chrf_signature']}); token accuracy {test['token_accuracy']:.4f}, "
        f"perplexity {test['perplexity']:.3f} (per BPE token, teacher forced); {_pct(test['exact_match'])} of "
        "the translations are exactly the reference.",
    ]


def card(info: dict) -> str:
    meta, data = info["metadata"], info["metadata"]["data"]
    src, tgt = LANGUAGES[data["src_lang"]], LANGUAGES[data["tgt_lang"]]
    numbers = data["task"] == "numbers"
    lines = [
        f"## {info['name']}", "",
        f"{src} number words → {tgt} number words, the numbers 0–{data['max_number']:,}." if numbers else
        f"{src} → {tgt}, {TASKS[data['task']]}.", "",
        "| file | what |", "|---|---|",
        f"| `{info['weights']}` | the weights (float32, {info['weights_bytes']:,} bytes) |",
        f"| `{info['name']}.json` | model config, {'both' if numbers else 'the BPE'} vocabularies, the weights' "
        "sha256, the training command and its test scores |", "",
        f"- **sha256** of `{info['weights']}`: `{info['weights_sha256']}`.",
        _model_line(info, src, tgt),
        *(_numbers_body if numbers else _corpus_body)(info, src, tgt),
    ]
    command, train = meta["command"], meta["train_config"]
    if numbers and "stop_when_perfect" not in train:
        # trained before the stop rule existed: a fixed max_steps; these flags turn the rule off today
        command += f" --max-steps {train['max_steps']} --train-set stop_when_perfect=0"
        lines += ["", f"This model was trained before the stop rule (`STOP_RULES` in `config.py`): for a fixed "
                  f"{train['max_steps']:,} steps. Its command, run today, would stop by the rule; the flags added "
                  "below train the recipe that made it."]
    lines += ["", "Reproduce (same torch version and thread count: the same weights, bit for bit; other versions, "
              "thread counts or machines give slightly different weights, so another hash, and about the same "
              "scores):", "", "```", command, "```"]
    if data.get("corpus"):
        lines += ["", "`--corpus` names the folder that holds the corpus's files; add `--download` to fetch the "
                  "missing ones into it."]
    return "\n".join(lines) + "\n"


def render(folder: Path = FOLDER) -> str:
    infos = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    return HEADER + "".join("\n" + card(info) for info in infos)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if README.read_text(encoding="utf-8") != text:
            print(f"{README} differs from its .json files: run python -m tools.model_cards", file=sys.stderr)
            return 1
        return 0
    README.write_text(text, encoding="utf-8")
    print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
