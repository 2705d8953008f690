"""Command line: `python -m transformer_course train | translate | evaluate` (also `transformer-course ...`).

    python -m transformer_course train --task numbers --out runs/numbers
    python -m transformer_course translate --checkpoint runs/numbers "ninety-seven" "two hundred and one"
    echo "seventy-one" | python -m transformer_course translate --pretrained numbers-en-fr
    python -m transformer_course evaluate --checkpoint runs/numbers --split test

Under torchrun, `train` runs DistributedDataParallel (see transformer_course/training/ddp.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from pathlib import Path

from .config import MODEL_PRESETS, TRAIN_PRESETS, ModelConfig, TrainConfig, get_preset, get_train_preset

TASK_CHOICES = ("numbers", "copy", "reverse", "sort", "tsv")


def _parse_overrides(cls, items: list[str]) -> dict:
    """["d_model=64", "dropout=0.2"] -> {"d_model": 64, "dropout": 0.2}, converted by the field's type."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set/--train-set: expected KEY=VALUE, got {item!r}")
        if name not in types:
            raise SystemExit(f"--set/--train-set: unknown {cls.__name__} field {name!r}; known: {sorted(types)}")
        kind = types[name]
        try:
            if kind == "bool":
                if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(raw)
                value = raw.lower() in ("true", "1", "yes")
            else:
                value = {"int": int, "float": float}.get(kind, str)(raw)
        except ValueError:
            raise SystemExit(f"--set/--train-set: {name} expects a {kind}, got {raw!r}") from None
        out[name] = value
    return out


def _add_data_args(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--task", choices=TASK_CHOICES, default="numbers" if defaults else None,
                   help="numbers: number words translated (offline); copy/reverse/sort: toy tasks; "
                        "tsv: a Tatoeba/Anki file given with --corpus (default: %(default)s)")
    g.add_argument("--src-lang", default="en", help="numbers: source language en/fr/de/es/digits (default: en)")
    g.add_argument("--tgt-lang", default="fr", help="numbers: target language (default: fr)")
    g.add_argument("--max-number", type=int, default=9999, help="numbers: size knob, numbers 0..N (default: 9999)")
    g.add_argument("--max-len", type=int, default=10, help="copy/reverse/sort: longest sequence (default: 10)")
    g.add_argument("--n-train", type=int, default=None, help="training examples (default: the task's)")
    g.add_argument("--corpus", default=None, help="tsv: path of the tab-separated corpus")
    g.add_argument("--data-seed", type=int, default=0, help="seed of the data split (default: 0)")


def _data_args(args) -> dict:
    return {k: getattr(args, k) for k in ("task", "src_lang", "tgt_lang", "max_number", "max_len", "n_train",
                                          "corpus", "data_seed")}


def _make_data(spec: dict):
    from .data.corpora import load_tsv_corpus
    from .data.tasks import make_task
    task, seed = spec["task"], spec["data_seed"]
    if task == "numbers":
        return make_task("numbers", src_lang=spec["src_lang"], tgt_lang=spec["tgt_lang"],
                         max_number=spec["max_number"], n_train=spec["n_train"], seed=seed)
    if task == "tsv":
        if not spec["corpus"]:
            raise SystemExit("--corpus: expected a TSV file path with --task tsv")
        return load_tsv_corpus(spec["corpus"], seed=seed)
    kwargs = {"max_len": spec["max_len"], "seed": seed}
    if spec["n_train"] is not None:
        kwargs["n_train"] = spec["n_train"]
    return make_task(task, **kwargs)


def _resolve_checkpoint(path: str) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "model.pt"
    if not p.is_file():
        raise SystemExit(f"--checkpoint: no checkpoint at {p} (give a file or a folder written by `train --out`)")
    return p


def _load_model(args):
    """(model, src_vocab, tgt_vocab, data spec or None) from --checkpoint or --pretrained."""
    from .torch.device import pick_device
    device = pick_device(args.device)
    if args.pretrained:
        import json as _json
        from .training.checkpoint import load_pretrained, pretrained_dir
        model, sv, tv = load_pretrained(args.pretrained, device=device)
        meta = _json.loads((pretrained_dir() / f"{args.pretrained}.json").read_text(encoding="utf-8"))
        return model, sv, tv, meta["metadata"].get("data")
    if not args.checkpoint:
        raise SystemExit("--checkpoint or --pretrained: expected one of them")
    from .training.checkpoint import model_from_checkpoint
    model, sv, tv, checkpoint = model_from_checkpoint(_resolve_checkpoint(args.checkpoint), device=device)
    return model, sv, tv, checkpoint["extra"].get("data")


def cmd_train(args) -> int:
    import torch

    from .data.loader import make_dataloader
    from .training.checkpoint import build_model, export_pretrained, save_checkpoint
    from .training.ddp import cleanup_distributed, setup_distributed
    from .training.evaluate import evaluate_pairs
    from .training.trainer import train
    from .utils import set_seed

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)                   # denormal Adam moments are very slow on CPUs
    train_overrides = _parse_overrides(TrainConfig, args.train_set)
    for name in ("max_steps", "batch_size", "precision", "seed"):
        if getattr(args, name) is not None:
            train_overrides[name] = getattr(args, name)
    if args.compile:
        train_overrides["compile"] = True
    train_overrides["device"] = args.device
    train_preset = args.train_preset or (args.preset if args.preset in TRAIN_PRESETS else
                                         "paper" if args.preset.startswith("paper") else "course")
    train_config = get_train_preset(train_preset).replace(**train_overrides)
    rank, world_size, device = setup_distributed(train_config.device)
    try:
        spec = _data_args(args)
        data = _make_data(spec)
        src_vocab, tgt_vocab = data.build_vocabs()
        model_config = get_preset(args.preset).replace(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab),
                                                       **_parse_overrides(ModelConfig, args.set))
        set_seed(train_config.seed)
        model = build_model(model_config)
        train_loader = make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=train_config.batch_size,
                                       seed=train_config.seed, max_len=model_config.max_len,
                                       num_workers=train_config.num_workers, rank=rank, world_size=world_size)
        val_loader = make_dataloader(data.val, src_vocab, tgt_vocab, batch_size=256, shuffle=False,
                                     max_len=model_config.max_len) if data.val else None
        out = Path(args.out)
        resume = out / "last.pt" if args.resume and (out / "last.pt").exists() else None
        if rank == 0:
            out.mkdir(parents=True, exist_ok=True)
            src_vocab.save(out / "src_vocab.json")
            tgt_vocab.save(out / "tgt_vocab.json")
            print(f"task {data.name}: {len(data.train)} train / {len(data.val)} val / {len(data.test)} test pairs; "
                  f"vocabularies {len(src_vocab)} / {len(tgt_vocab)}; device {device}"
                  + (f" x {world_size} processes" if world_size > 1 else ""), flush=True)
        def report(event: dict) -> None:
            if event["event"] == "eval" and rank == 0:
                extra = f", exact match {event['exact_match']:.4f}" if "exact_match" in event else ""
                print(f"step {event['step']}: val loss {event['loss']:.4f}, token accuracy "
                      f"{event['token_accuracy']:.4f}{extra}", flush=True)

        history = train(model, train_loader, val_loader, train_config, src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                        out_dir=out, resume_from=resume, device=device, progress=False if args.no_progress else None,
                        monitor=args.monitor, eval_generate=args.monitor in ("exact_match", "bleu"),
                        callbacks=[report])
        if rank != 0:
            return 0
        metrics = evaluate_pairs(model, data.test, src_vocab, tgt_vocab, device=device) if data.test else {}
        summary = {k: v for k, v in metrics.items() if not k.startswith("hypotheses")}
        command = shlex.join(["python", "-m", "transformer_course", *args.argv])
        save_checkpoint(out / "model.pt", model, train_config=train_config, src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                        step=history["step"][-1] if history["step"] else 0,
                        extra={"data": spec, "test": summary, "command": command})
        (out / "history.json").write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
        print(f"trained {history['step'][-1] if history['step'] else 0} steps in {history['time_s']:.0f} s "
              f"({history['stop_reason']}); model: {out / 'model.pt'}")
        if summary:
            print(f"test: exact match {summary['exact_match']:.4f}, token accuracy {summary['token_accuracy']:.4f}, "
                  f"perplexity {summary['perplexity']:.3f}, BLEU {summary['bleu']:.2f}")
            print(f"BLEU signature: {summary['bleu_signature']}")
        if args.export:
            export = Path(args.export)
            info = export_pretrained(model, src_vocab, tgt_vocab, export.parent, export.name,
                                     metadata={"data": spec, "test": summary, "command": command,
                                               "model_preset": args.preset,
                                               "train_config": train_config.to_dict(),
                                               "steps": history["step"][-1] if history["step"] else 0,
                                               "torch": torch.__version__})
            print(f"exported {export}.safetensors ({info['weights_bytes']} bytes, sha256 {info['weights_sha256']})")
        return 0
    finally:
        cleanup_distributed()


def _read_sentences(args) -> list[str]:
    if args.sentences:
        return list(args.sentences)
    return [line.strip() for line in sys.stdin if line.strip()]


def cmd_translate(args) -> int:
    from .training.evaluate import translate
    model, src_vocab, tgt_vocab, _ = _load_model(args)
    sentences = _read_sentences(args)
    for sentence, translation in zip(sentences, translate(model, sentences, src_vocab, tgt_vocab,
                                                          beam_size=args.beam_size)):
        print(f"{sentence}\t{translation}" if args.with_source else translation)
    return 0


def cmd_evaluate(args) -> int:
    from .training.checkpoint import check_vocabs
    from .training.evaluate import evaluate_pairs
    model, src_vocab, tgt_vocab, spec = _load_model(args)
    if args.task is not None:
        spec = _data_args(args)
    if spec is None:
        raise SystemExit("--task: this checkpoint does not record its data; give --task (and its options)")
    data = _make_data(spec)
    train_src, train_tgt = data.build_vocabs()
    check_vocabs({"src_vocab": src_vocab.to_dict(), "tgt_vocab": tgt_vocab.to_dict()}, train_src, train_tgt,
                 where="model")
    pairs = data.split(args.split)
    metrics = evaluate_pairs(model, pairs, src_vocab, tgt_vocab, beam_size=args.beam_size)
    search = "greedy" if args.beam_size == 1 else f"beam {args.beam_size}"
    print(f"{data.name} {args.split}: {len(pairs)} pairs, {search}")
    print(f"exact match     {metrics['exact_match']:.4f}")
    print(f"token accuracy  {metrics['token_accuracy']:.4f}")
    print(f"perplexity      {metrics['perplexity']:.4f}")
    print(f"BLEU            {metrics['bleu']:.2f}")
    print(f"BLEU signature  {metrics['bleu_signature']}")
    shown = 0
    for (src, ref), hyp in zip(pairs, metrics["hypotheses_text"]):
        if hyp != ref and shown < args.show_errors:
            print(f"error: {src!r} -> {hyp!r} (reference {ref!r})")
            shown += 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m transformer_course",
                                     description="Train, run and evaluate the course's Transformer.")
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a model and save it under --out",
                       description="Train the encoder-decoder Transformer with the paper's recipe.")
    _add_data_args(t)
    m = t.add_argument_group("model and training")
    m.add_argument("--preset", default="course", choices=sorted(MODEL_PRESETS),
                   help="model preset (default: %(default)s)")
    m.add_argument("--train-preset", default=None, choices=sorted(TRAIN_PRESETS),
                   help="training preset (default: the model preset's name, 'paper' for paper-*)")
    m.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a ModelConfig field, e.g. --set d_model=64 (repeatable)")
    m.add_argument("--train-set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a TrainConfig field, e.g. --train-set warmup_steps=400 (repeatable)")
    m.add_argument("--max-steps", type=int, default=None)
    m.add_argument("--batch-size", type=int, default=None, help="sequences per step (per process under torchrun)")
    m.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default=None)
    m.add_argument("--compile", action="store_true", help="torch.compile the model")
    m.add_argument("--seed", type=int, default=None)
    m.add_argument("--monitor", default="loss", choices=("loss", "token_accuracy", "exact_match", "bleu"),
                   help="validation metric for best.pt and early stopping (default: %(default)s)")
    m.add_argument("--device", default="auto", help="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps")
    m.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    m.add_argument("--out", required=True, metavar="DIR", help="folder for checkpoints, vocabularies, history")
    m.add_argument("--resume", action="store_true", help="continue from DIR/last.pt if it exists")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.add_argument("--export", default=None, metavar="DIR/NAME",
                   help="also write NAME.safetensors + NAME.json (a shippable pretrained model)")
    t.set_defaults(func=cmd_train)

    for name, helptext in (("translate", "translate sentences (arguments, or one per line on stdin)"),
                           ("evaluate", "exact match, token accuracy, perplexity and BLEU on a split")):
        p = sub.add_parser(name, help=helptext, description=helptext)
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--checkpoint", help="a model.pt (or the --out folder of `train`)")
        src.add_argument("--pretrained", help="a shipped model, e.g. numbers-en-fr")
        p.add_argument("--beam-size", type=int, default=1, help="1: greedy (default); >1: beam search")
        p.add_argument("--device", default="auto")
        if name == "translate":
            p.add_argument("sentences", nargs="*", help="sentences to translate (default: read stdin)")
            p.add_argument("--with-source", action="store_true", help="print 'source<TAB>translation'")
            p.set_defaults(func=cmd_translate)
        else:
            _add_data_args(p, defaults=False)
            p.add_argument("--split", default="test", choices=("train", "val", "test"))
            p.add_argument("--show-errors", type=int, default=5, metavar="N", help="print N wrong translations")
            p.set_defaults(func=cmd_evaluate)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
