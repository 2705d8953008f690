"""Command line: `transformer-course train | translate | evaluate | doctor` (also `python -m transformer_course ...`).

    transformer-course train --task numbers --out runs/numbers
    transformer-course translate --checkpoint runs/numbers "ninety-seven" "two hundred and one"
    echo "seventy-one" | transformer-course translate --pretrained numbers-en-fr
    transformer-course translate --pretrained numbers-en-fr --sample --temperature 0.8 --top-p 0.9 --seed 1 "eleven"
    transformer-course evaluate --checkpoint runs/numbers --split test
    transformer-course doctor                     # is this machine ready for the course?

A mistake the user can fix is reported as one line, `transformer-course: error: ...`, on stderr, and exit
status 2; a failure while running as one line and exit status 1; `--debug` shows the traceback instead.
Every check of a `train` command happens before anything is written, so a command that fails before
training starts leaves an existing run folder exactly as it was. Under torchrun, `train` runs
DistributedDataParallel (see transformer_course/training/ddp.py).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shlex
import sys
import traceback
from pathlib import Path

from .config import (
    MODEL_PRESETS,
    MONITORS,
    STOP_RULES,
    TOKENIZATION,
    TRAIN_PRESETS,
    ModelConfig,
    TrainConfig,
    get_preset,
    train_preset_for,
    train_recipe,
)

PROG = "transformer-course"
TASK_CHOICES = tuple(STOP_RULES)                  # every task the CLI trains has its stop rule there
# the files `train` writes into --out; a folder holding any of them is a run
RUN_FILES = ("model.pt", "last.pt", "best.pt", "averaged.pt", "src_vocab.json", "tgt_vocab.json", "history.json")
EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
# translate: warn about unknown tokens on at most this many lines, then summarise
MAX_UNKNOWN_WARNINGS = 10

EXIT_STATUS_HELP = """\
exit status:
  0    success
  1    a failure while running (training diverged, a disk became full, an unexpected error)
  2    a mistake you can fix: a bad flag or value, an unknown name, a missing or unusable file
       (corpus, checkpoint, input text), an incompatible --resume, an unavailable device
  130  interrupted (Ctrl-C); a training run can be continued with --resume
Errors are one line on stderr; add --debug to see the Python traceback."""


class UsageError(Exception):
    """A mistake the user can fix (exit status 2); the message names the argument, file or line."""


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def user_errors(prefix: str = ""):
    """Turn the library's errors about the user's input (ValueError, TypeError, OSError: a bad value, a
    missing or malformed file, a refused checkpoint) into a UsageError, exit status 2."""
    try:
        yield
    except (ValueError, TypeError, OSError) as err:
        raise UsageError(prefix + _describe(err)) from err


def _describe(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if text else type(err).__name__


# -- argument types: every value is checked by the parser, with the flag named in the message --------------

def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}")
        return value
    parse.__name__ = f"int >= {low}"
    return parse


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of minutes > 0, got {text!r}")
    return value


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0 (temperature 0 is greedy decoding: leave "
                                         "out --sample)")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _top_p(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def _device_name(text: str) -> str:
    if not _DEVICE.match(text):
        raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda, cuda:<index> or mps, got {text!r}")
    return text


def _out_dir(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder path, got an empty string")
    return Path(text)


class _Parser(argparse.ArgumentParser):
    """argparse with the course's error format: one line naming the program; the usage only when the flags
    themselves are wrong (unknown, missing, misspelt), not when a known flag got a bad value."""

    _VALUE_ERROR = re.compile(r"^argument -[^:]*: (invalid |expected (?!one argument))")

    def error(self, message: str):
        if not self._VALUE_ERROR.match(message):
            self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{PROG}: error: {message}\n")


# -- configuration from flags ------------------------------------------------------------------------------

def _parse_overrides(cls, items: list[str], flag: str) -> dict:
    """["d_model=64", "dropout=0.2"] -> {"d_model": 64, "dropout": 0.2}, converted by the field's type."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise UsageError(f"{flag}: expected KEY=VALUE, got {item!r}")
        if name not in types:
            raise UsageError(f"{flag}: unknown {cls.__name__} field {name!r}; known: {', '.join(sorted(types))}")
        kind = types[name]
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise UsageError(f"{flag} {name}: expected true or false, got {raw!r}")
            out[name] = raw.lower() in ("true", "1", "yes")
            continue
        try:
            out[name] = {"int": int, "float": float}.get(kind, str)(raw)
        except ValueError:
            raise UsageError(f"{flag} {name}: expected {'an' if kind == 'int' else 'a'} {kind}, got {raw!r}") from None
    return out


def _add_data_args(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    from .data.tasks import NUMBER_LANGUAGES  # here, not at the top: `doctor` must start without NumPy
    g = p.add_argument_group("data")
    g.add_argument("--task", choices=TASK_CHOICES, default="numbers" if defaults else None,
                   help="numbers: number words translated (offline); copy/reverse/sort: toy tasks; "
                        "tsv: a Tatoeba/Anki file given with --corpus; trans-de-en: the example sentences of the "
                        "Ding dictionary (apt-get install trans-de-en); multi30k: Multi30k's task 1 in the folder "
                        "--corpus (fetched with train --download) (default: %(default)s)")
    g.add_argument("--src-lang", choices=NUMBER_LANGUAGES, default=None,
                   help="numbers, trans-de-en, multi30k: source language (default: en for numbers and multi30k, "
                        "de for trans-de-en)")
    g.add_argument("--tgt-lang", choices=NUMBER_LANGUAGES, default=None,
                   help="numbers, trans-de-en, multi30k: target language (default: fr for numbers, en for "
                        "trans-de-en, de for multi30k)")
    g.add_argument("--max-number", type=_int_at_least(1), default=9999,
                   help="numbers: size knob, numbers 0..N (default: 9999)")
    g.add_argument("--max-len", type=_int_at_least(1), default=10,
                   help="copy/reverse/sort: longest sequence (default: 10)")
    g.add_argument("--n-train", type=_int_at_least(1), default=None, help="training examples (default: the task's)")
    g.add_argument("--n-val", type=_int_at_least(1), default=None,
                   help="validation examples (tsv: distinct source sentences; default: 5%%, at most 500)")
    g.add_argument("--n-test", type=_int_at_least(1), default=None,
                   help="test examples (tsv: distinct source sentences; default: 10%%, at most 1000)")
    g.add_argument("--corpus", default=None, metavar="PATH",
                   help="tsv: path of the tab-separated corpus; trans-de-en: the Ding dictionary file "
                        "(default: /usr/share/trans/de-en); multi30k: the folder of its files (train.en.gz, ...)")
    g.add_argument("--tokenizer", choices=("word", "char", "bpe"), default=None,
                   help="tsv, trans-de-en, multi30k: how text is cut into tokens (default: word for tsv, bpe for "
                        "the others)")
    g.add_argument("--vocab-size", type=_int_at_least(5), default=None, metavar="N",
                   help="tsv, trans-de-en, multi30k: tokens in the vocabulary; with bpe, one joint vocabulary "
                        f"for both languages (default: {TOKENIZATION['trans-de-en']['vocab_size']} for trans-de-en, "
                        f"{TOKENIZATION['multi30k']['vocab_size']} for multi30k; word: every word of the training "
                        "split)")
    g.add_argument("--data-seed", type=_int_at_least(0), default=0, help="seed of the data split (default: 0)")


# which tasks each data flag applies to: a flag given to another task is refused, not ignored
_FLAG_TASKS = {"src_lang": ("numbers", "trans-de-en", "multi30k"), "tgt_lang": ("numbers", "trans-de-en", "multi30k"),
               "corpus": ("tsv", "trans-de-en", "multi30k"), "tokenizer": ("tsv", "trans-de-en", "multi30k"),
               "vocab_size": ("tsv", "trans-de-en", "multi30k"),
               **{name: tuple(t for t in TASK_CHOICES if t != "multi30k") for name in ("n_train", "n_val", "n_test")}}


def _check_data_flags(args) -> None:
    if args.task == "tsv" and not args.corpus:
        raise UsageError("--corpus: expected a TSV file path with --task tsv")
    if args.task == "multi30k" and not args.corpus:
        raise UsageError("--corpus: expected the folder of Multi30k's files with --task multi30k "
                         "(train --download fetches missing files into it)")
    for name, tasks in _FLAG_TASKS.items():
        if getattr(args, name) is not None and args.task not in tasks:
            flag = "--" + name.replace("_", "-")
            if args.task == "multi30k" and name.startswith("n_"):
                raise UsageError(f"{flag}: not used with --task multi30k (the corpus has its own splits)")
            raise UsageError(f"{flag}: applies to --task {', '.join(tasks[:-1])} and {tasks[-1]} only "
                             f"(the task is {args.task!r})")


def _data_flags_named(err: BaseException) -> UsageError:
    """The data loaders name a spec key ("src_lang/tgt_lang: ..."); the command line names its flag."""
    text = _describe(err)
    head, sep, rest = text.partition(": ")
    names = head.split("/")
    if sep and all(name in _DATA_KEYS for name in names):
        text = "/".join("--" + name.replace("_", "-") for name in names) + ": " + rest
    return UsageError(text)


_DATA_KEYS = {*_FLAG_TASKS, "task", "max_number", "max_len", "data_seed"}


def _data_args(args) -> dict:
    """The data spec (saved with a checkpoint), after checking that every flag given applies to the task."""
    from .data.spec import task_spec
    _check_data_flags(args)
    try:
        return task_spec(args.task, args.src_lang, args.tgt_lang, max_number=args.max_number, max_len=args.max_len,
                         n_train=args.n_train, n_val=args.n_val, n_test=args.n_test, corpus=args.corpus,
                         tokenizer=args.tokenizer, vocab_size=args.vocab_size, data_seed=args.data_seed)
    except (ValueError, TypeError) as err:
        raise _data_flags_named(err) from err


def _make_data(spec: dict, download: bool = False):
    """The task's ParallelData; any problem with the data or the corpus file is a UsageError. `download`:
    fetch Multi30k's missing files (train --download)."""
    from .data.spec import load_task
    try:
        return load_task(spec, download=download)
    except (ValueError, TypeError, OSError) as err:
        raise _data_flags_named(err) from err


def _pick_device(name: str):
    from .torch.device import pick_device
    try:
        return pick_device(name)
    except ValueError as err:
        raise UsageError(f"--device: {_describe(err).removeprefix('name: ')}") from None


def _resolve_checkpoint(path: str) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "model.pt"
    if not p.is_file():
        raise UsageError(f"--checkpoint: no checkpoint at {p} (give a model.pt or a folder written by `train --out`)")
    return p


def _load_model(args):
    """(model, src_vocab, tgt_vocab, data spec or None) from --checkpoint or --pretrained."""
    device = _pick_device(args.device)
    if args.pretrained:
        from .training.checkpoint import load_pretrained, pretrained_info
        with user_errors("--pretrained: "):
            model, sv, tv = load_pretrained(args.pretrained, device=device)
            metadata = pretrained_info(args.pretrained).get("metadata", {})
        return model, sv, tv, metadata.get("data")
    from .training.checkpoint import model_from_checkpoint
    with user_errors("--checkpoint: "):
        model, sv, tv, checkpoint = model_from_checkpoint(_resolve_checkpoint(args.checkpoint), device=device)
    return model, sv, tv, checkpoint.get("extra", {}).get("data")


# -- train --------------------------------------------------------------------------------------------------

def _check_out(args) -> str:
    """What `train` will do with --out: "new", "resume" or "overwrite"; refuses anything that could damage a
    run, before anything is written."""
    out: Path = args.out
    if args.resume and args.overwrite:
        raise UsageError("--resume and --overwrite: expected at most one of them (continue a run, or replace it)")
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} is a file; expected a folder (new or written by `train`)")
    ancestor = out
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"--out: cannot create {out}: {ancestor} is a file")
    found = [name for name in RUN_FILES if (out / name).exists()]
    if args.resume:
        if (out / "last.pt").is_file():
            return "resume"
        if found:
            raise UsageError(f"--resume: {out} holds a run ({', '.join(found)}) but no last.pt to continue from; "
                             "pass --overwrite to start it again")
        warn(f"--resume: nothing to resume in {out} (no last.pt); starting a new run")
        return "new"
    if found:
        if args.overwrite:
            return "overwrite"
        raise UsageError(f"--out: {out} already holds a run ({', '.join(found)}); pass --resume to continue it or "
                         "--overwrite to replace it")
    return "new"


def _check_export(value: str | None) -> Path | None:
    if value is None:
        return None
    export = Path(value)
    if not export.name or export.name in (".", ".."):
        raise UsageError(f"--export: expected DIR/NAME (a name for NAME.safetensors), got {value!r}")
    ancestor = export.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"--export: cannot create {export.parent}: {ancestor} is a file")
    return export


def _check_resume(path: Path, model_config: ModelConfig, src_vocab, tgt_vocab) -> None:
    """The run in `path` (its last.pt) must have been trained on the same data vocabularies and model."""
    from .training.checkpoint import check_vocabs, load_checkpoint
    with user_errors("--resume: "):
        checkpoint = load_checkpoint(path)
        check_vocabs(checkpoint, src_vocab, tgt_vocab, where=f"run in {path.parent}")
    changed = model_config.differences(checkpoint.get("model_config"))
    if changed:
        raise UsageError(f"--resume: {path} holds a model with other settings ({', '.join(changed)}); use the "
                         "same --preset and --set flags as the run, or start a new run in another --out")


def resolve_train_config(args, spec: dict) -> TrainConfig:
    """The recipe of `train`: `config.train_recipe(preset, task)` (the preset, then the task's stop rule) with
    the flags on top. A notebook or a benchmark calling train_recipe with the same names trains the same recipe."""
    overrides = _parse_overrides(TrainConfig, args.train_set, "--train-set")
    flags = {name: getattr(args, name) for name in ("max_steps", "max_minutes", "batch_size", "precision", "seed",
                                                    "monitor", "device") if getattr(args, name) is not None}
    if args.compile:
        flags["compile"] = True
    for name in flags.keys() & overrides.keys():     # which one should win is not for us to guess
        raise UsageError(f"--train-set {name}=...: --{name.replace('_', '-')} sets {name} too; give it once")
    overrides.update(flags)
    with user_errors("--train-set: "):
        return train_recipe(args.train_preset or train_preset_for(args.preset), spec["task"], **overrides)


def _prepare_out(out: Path, mode: str, vocabs) -> None:
    """Create the run folder and save the vocabularies (a resumed run's were checked to be these)."""
    out.mkdir(parents=True, exist_ok=True)
    if mode == "overwrite":                          # stale files of the replaced run must not survive it
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    if mode != "resume":
        vocabs[0].save(out / "src_vocab.json")
        vocabs[1].save(out / "tgt_vocab.json")


def _print_evaluation(event: dict) -> None:
    if event["event"] == "eval":
        extra = f", exact match {event['exact_match']:.4f}" if "exact_match" in event else ""
        extra += f", coverage {event['coverage']:.4f}" if "coverage" in event else ""
        print(f"step {event['step']}: val loss {event['loss']:.4f}, token accuracy "
              f"{event['token_accuracy']:.4f}{extra}", flush=True)


def cmd_train(args) -> int:
    mode = _check_out(args)
    export = _check_export(args.export)
    model_overrides = _parse_overrides(ModelConfig, args.set, "--set")
    spec = _data_args(args)
    if args.download and spec["task"] != "multi30k":
        raise UsageError(f"--download: applies to --task multi30k only (the task is {spec['task']!r})")
    train_config = resolve_train_config(args, spec)
    data = _make_data(spec, download=args.download)
    src_vocab, tgt_vocab = data.build_vocabs()
    with user_errors("--set: "):
        model_config = get_preset(args.preset).replace(src_vocab_size=len(src_vocab),
                                                       tgt_vocab_size=len(tgt_vocab), **model_overrides)
    _pick_device(train_config.device)                # an unavailable device is refused before anything runs
    out: Path = args.out
    if mode == "resume":
        _check_resume(out / "last.pt", model_config, src_vocab, tgt_vocab)

    # every check passed: from here on files are written (each one atomically)
    from .training.run import cpu_settings

    with cpu_settings(args.threads or None):         # main() may run in a notebook: restored on the way out
        return _train_and_report(args, mode, export, spec, data, (src_vocab, tgt_vocab), model_config,
                                 train_config)


def _train_and_report(args, mode, export, spec, data, vocabs, model_config, train_config) -> int:
    """cmd_train once every check passed: train under torchrun or alone, save, report, export."""
    import torch

    from .training.callbacks import ProgressBar
    from .training.checkpoint import export_pretrained
    from .training.ddp import cleanup_distributed, setup_distributed
    from .training.history import describe_stop_rule
    from .training.run import finish_run, prepare_run
    from .training.trainer import train

    out: Path = args.out
    src_vocab, tgt_vocab = vocabs
    rank, world_size, device = setup_distributed(train_config.device)
    train_config = train_config.replace(device=str(device))   # under torchrun: this process's GPU
    try:
        model, train_loader, evaluate_fn = prepare_run(data, vocabs, model_config, train_config, rank=rank,
                                                       world_size=world_size)
        if rank == 0:
            _prepare_out(out, mode, vocabs)
            print(f"task {data.name}: {len(data.train)} train / {len(data.val)} val / {len(data.test)} test pairs; "
                  f"vocabularies {len(src_vocab)} / {len(tgt_vocab)}; device {device}"
                  + (f" x {world_size} processes" if world_size > 1 else "")
                  + (f"; resuming from {out / 'last.pt'}" if mode == "resume" else ""), flush=True)
            print(f"stop rule: {describe_stop_rule(train_config)}", flush=True)
        try:
            history = train(model, train_loader, train_config, evaluate_fn=evaluate_fn, vocabs=vocabs, out_dir=out,
                            resume_from=out / "last.pt" if mode == "resume" else None,
                            callbacks=([_print_evaluation] if rank == 0 else [])
                            + ([] if args.no_progress else [ProgressBar()]))
        except KeyboardInterrupt:
            if rank == 0:
                print(f"{PROG}: interrupted; {out / 'last.pt'} holds the last evaluation point: continue with "
                      "the same command and --resume", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        if rank != 0:
            return 0
        command = shlex.join([PROG, *args.argv])
        summary = finish_run(out, model, history, data, vocabs, train_config, extra={"data": spec, "command": command})
        steps = history["step"][-1] if history["step"] else 0
        print(f"trained {steps} steps in {history['time_s']:.0f} s ({history['stop_reason']}); "
              f"model: {out / 'model.pt'}")
        if summary:
            print_report(summary, f"{data.name} test: {len(data.test)} pairs, greedy")
        if export is not None:
            info = export_pretrained(model, src_vocab, tgt_vocab, export.parent, export.name,
                                     metadata={"data": spec, "test": summary, "command": command,
                                               "model_preset": args.preset,
                                               "train_config": train_config.to_dict(),
                                               "steps": steps, "train_s": history["time_s"],
                                               "threads": torch.get_num_threads(), "torch": torch.__version__})
            print(f"exported {export}.safetensors ({info['weights_bytes']} bytes, sha256 {info['weights_sha256']})")
        return 0
    finally:
        cleanup_distributed()


# -- translate ----------------------------------------------------------------------------------------------

def _decode_lines(raw: bytes) -> list[str]:
    """stdin's bytes as lines of UTF-8 text, whatever the locale; an undecodable byte names its line and
    offset. Each line is stripped of surrounding whitespace (line ends included)."""
    lines = []
    for number, line in enumerate(raw.splitlines(), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise UsageError(f"stdin line {number}: byte {err.start} (0x{line[err.start]:02x}) is not valid UTF-8; "
                             "save the text as UTF-8") from None
        lines.append(text.strip())
    return lines


def _read_sentences(args) -> tuple[list[str], str]:
    """(one sentence per input line, what to call a line in messages)."""
    if args.sentences:
        for number, sentence in enumerate(args.sentences, start=1):
            # argv bytes that are not valid UTF-8 arrive as lone surrogates (PEP 383)
            bad = next((i for i, ch in enumerate(sentence) if "\udc80" <= ch <= "\udcff"), None)
            if bad is not None:
                raise UsageError(f"sentence {number} (argument): character {bad} comes from a byte that is not "
                                 "valid UTF-8")
        return [s.strip() for s in args.sentences], "sentence"
    if sys.stdin.isatty():
        print("Reading sentences from the terminal, one per line; end with Ctrl-D (Ctrl-Z, Enter on Windows).",
              file=sys.stderr, flush=True)
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
    return _decode_lines(raw), "stdin line"


def _check_sentences(sentences: list[str], what: str, src_vocab, max_len: int) -> None:
    """Refuse sentences longer than the model accepts; warn about words it has never seen."""
    unknown_lines = []
    for number, sentence in enumerate(sentences, start=1):
        tokens = src_vocab.tokenize(sentence)
        if len(tokens) + 1 > max_len:                # + 1: the eos every source ends with
            raise UsageError(f"{what} {number}: {len(tokens)} tokens, but the model reads at most {max_len - 1} "
                             f"(its max_len {max_len}, one for the end of the sentence); split the sentence")
        unknown = sorted({t for t in tokens if t not in src_vocab})
        if unknown:
            unknown_lines.append((number, unknown))
    for number, unknown in unknown_lines[:MAX_UNKNOWN_WARNINGS]:
        words = ", ".join(repr(t) for t in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
        warn(f"{what} {number}: unknown to the model, translated as <unk>: {words}")
    if len(unknown_lines) > MAX_UNKNOWN_WARNINGS:
        warn(f"... and {len(unknown_lines) - MAX_UNKNOWN_WARNINGS} more lines with unknown tokens")


def _sampling(args, model) -> dict | None:
    """sample_decode's options from --sample and its flags, or None (search); refuses flags that would be
    ignored."""
    given = [flag for flag, value in (("--temperature", args.temperature), ("--top-k", args.top_k),
                                      ("--top-p", args.top_p), ("--seed", args.seed)) if value is not None]
    if not args.sample:
        if given:
            raise UsageError(f"{given[0]}: a sampling option, given without --sample (add --sample)")
        return None
    if args.beam_size > 1:
        raise UsageError("--beam-size: --sample draws one translation per sentence; leave out --beam-size")
    V = model.config.tgt_vocab_size
    if args.top_k is not None and args.top_k > V:
        raise UsageError(f"--top-k: expected an int in [1, {V}] (the model's target vocabulary), got {args.top_k}")
    import torch
    generator = torch.Generator(device=next(model.parameters()).device)   # on the model's device, as the draws
    generator.manual_seed(0 if args.seed is None else args.seed)
    return {"temperature": 1.0 if args.temperature is None else args.temperature, "top_k": args.top_k,
            "top_p": args.top_p, "generator": generator}


def cmd_translate(args) -> int:
    from .training.evaluate import translate
    model, src_vocab, tgt_vocab, _ = _load_model(args)
    sentences, what = _read_sentences(args)
    if not sentences:
        warn("no input: nothing to translate (give sentences as arguments, or pipe them in one per line)")
        return 0
    _check_sentences(sentences, what, src_vocab, model.config.max_len)
    to_translate = [s for s in sentences if s]
    sampling = _sampling(args, model)
    translations = iter(translate(model, to_translate, src_vocab, tgt_vocab, beam_size=args.beam_size,
                                  sampling=sampling))
    for sentence in sentences:                       # one output line per input line, blank for blank
        if not sentence:
            print()
            continue
        translation = next(translations)
        print(f"{sentence}\t{translation}" if args.with_source else translation)
    return 0


# -- evaluate -----------------------------------------------------------------------------------------------

def _same_data(spec: dict, recorded: dict) -> bool:
    """The same data as the model's, wherever its corpus lies: every setting equal but the corpus's path."""
    return {k: v for k, v in spec.items() if k != "corpus"} == {k: v for k, v in recorded.items() if k != "corpus"}


def _data_flags_of(spec: dict) -> str:
    """The data flags that give `spec` again, but for --corpus: the task, its languages and every setting that
    differs from the task's default."""
    from .data.spec import task_spec
    default = task_spec(spec["task"], spec["src_lang"], spec["tgt_lang"])
    flags = [f"--task {spec['task']}", f"--src-lang {spec['src_lang']}", f"--tgt-lang {spec['tgt_lang']}"]
    flags += [f"--{key.replace('_', '-')} {value}" for key, value in spec.items()
              if key not in ("task", "src_lang", "tgt_lang", "corpus", "split") and value != default.get(key)]
    return " ".join(flags)


def cmd_evaluate(args) -> int:
    from .training.checkpoint import check_vocabs
    from .training.evaluate import evaluate_task
    model, src_vocab, tgt_vocab, spec = _load_model(args)
    recorded = spec
    if args.task is not None:
        spec = _data_args(args)
    elif any(getattr(args, name) is not None for name in ("src_lang", "tgt_lang", "corpus", "n_val", "n_test")):
        raise UsageError("--task: data flags were given without --task; give --task too (the model's own data is "
                         "used when no data flag is given)")
    if spec is None:
        raise UsageError("--task: this checkpoint does not record its data; give --task (and its options)")
    try:
        data = _make_data(spec)
    except UsageError as err:
        if args.task is None and spec.get("corpus"):     # the model's own corpus, not where it was on its machine
            raise UsageError(f"{err}; the model read its corpus from {spec['corpus']}: to read the same corpus from "
                             f"another folder or file, give the data flags: {_data_flags_of(spec)} --corpus PATH") \
                from None
        raise
    train_src, train_tgt = data.build_vocabs()
    with user_errors():
        check_vocabs({"src_vocab": src_vocab.to_dict(), "tgt_vocab": tgt_vocab.to_dict()}, train_src, train_tgt,
                     where="model")
    pairs = data.split(args.split)
    if not pairs:
        raise UsageError(f"--split: the {args.split} split of {data.name} is empty")
    if recorded is not None and not _same_data(spec, recorded) and args.split != "train":
        seen = {src for src, _ in _make_data(recorded).train}
        overlap = sum(src in seen for src, _ in pairs)
        if overlap:
            raise UsageError(f"--task: {overlap} of the {len(pairs)} {args.split} pairs of this data were in the "
                             "model's training data; evaluate on the model's own data (no data flags) or on data "
                             "it never saw")
    metrics = evaluate_task(model, data, src_vocab, tgt_vocab, args.split, beam_size=args.beam_size)
    search = "greedy" if args.beam_size == 1 else f"beam {args.beam_size}"
    print_report(metrics, f"{data.name} {args.split}: {len(pairs)} pairs, {search}")
    shown = 0
    for (src, ref), hyp in zip(pairs, metrics["hypotheses_text"]):
        if hyp != ref and shown < args.show_errors:
            print(f"error: {src!r} -> {hyp!r} (reference {ref!r})")
            shown += 1
    return 0


def print_report(metrics: dict, title: str) -> None:
    """The held-out scores as `train` and `evaluate` print them; lagging strata and coverage misses are warned
    about on stderr."""
    print(title)
    print(f"exact match     {metrics['exact_match']:.4f}")
    for label, row in metrics.get("strata", {}).items():
        print(f"  {label:<13} {row['exact_match']:.4f}  ({row['n']} pairs)")
    if metrics.get("coverage") is not None:
        print(f"coverage        {metrics['coverage']:.4f}  (everyday pairs, all trained on)")
    print(f"token accuracy  {metrics['token_accuracy']:.4f}")
    print(f"perplexity      {metrics['perplexity']:.4f}")
    print(f"BLEU            {metrics['bleu']:.2f}  ({metrics['bleu_signature']})")
    if metrics.get("short_references", 0) > 0.5:
        print("                (most references have fewer than 4 words, so BLEU's 4-gram precision is empty and "
              "BLEU says little: read chrF)")
    print(f"chrF            {metrics['chrf']:.2f}  ({metrics['chrf_signature']})", flush=True)
    for label in metrics.get("lagging", []):
        warn(f"the {label} stratum lags: exact match {metrics['strata'][label]['exact_match']:.4f} against "
             f"{metrics['exact_match']:.4f} overall")
    for src, out, ref in metrics.get("coverage_errors", [])[:10]:
        warn(f"everyday pair wrong: {src!r} -> {out!r} (reference {ref!r})")


# -- the parser ---------------------------------------------------------------------------------------------

def _pretrained_names() -> list[str]:
    from importlib import resources
    folder = Path(str(resources.files("transformer_course") / "checkpoints"))
    return sorted(p.stem for p in folder.glob("*.json"))


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the Python traceback of an error")
    parser = _Parser(prog=PROG, description="Train, run and evaluate the course's Transformer.",
                     epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True, metavar="{train,translate,evaluate,doctor}")

    t = sub.add_parser("train", help="train a model and save it under --out", parents=[common],
                       description="Train the encoder-decoder Transformer with the paper's recipe.",
                       epilog=EXIT_STATUS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    m.add_argument("--max-steps", type=_int_at_least(1), default=None,
                   help="the most optimiser steps (default: the task's stop rule's or the training preset's); "
                        "the task's stop rule may end training sooner")
    m.add_argument("--max-minutes", type=_minutes, default=None, metavar="M",
                   help="stop training after M minutes (then average and evaluate as usual); the result depends "
                        "on the machine's speed, so it is not reproducible")
    m.add_argument("--batch-size", type=_int_at_least(1), default=None,
                   help="sequences per step (per process under torchrun)")
    m.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default=None)
    m.add_argument("--compile", action="store_true", help="torch.compile the model")
    m.add_argument("--seed", type=_int_at_least(0), default=None)
    m.add_argument("--monitor", default=None, choices=MONITORS,
                   help="validation metric for best.pt and patience (default: the task's stop rule's)")
    m.add_argument("--device", type=_device_name, default=None,
                   help="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps (default: the training preset's, auto)")
    m.add_argument("--threads", type=_int_at_least(1), default=None, help="torch CPU threads")
    m.add_argument("--out", required=True, type=_out_dir, metavar="DIR",
                   help="folder for checkpoints, vocabularies, history (an existing run needs --resume or "
                        "--overwrite)")
    m.add_argument("--resume", action="store_true", help="continue the run in DIR from DIR/last.pt")
    m.add_argument("--overwrite", action="store_true", help="replace the run in DIR")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.add_argument("--download", action="store_true",
                   help="multi30k: fetch the files missing from --corpus (needs the network)")
    m.add_argument("--export", default=None, metavar="DIR/NAME",
                   help="also write NAME.safetensors + NAME.json (a shippable pretrained model)")
    t.set_defaults(func=cmd_train)

    for name, helptext in (("translate", "translate sentences (arguments, or one per line on stdin)"),
                           ("evaluate", "exact match (overall, per stratum, coverage), token accuracy, perplexity, "
                                        "BLEU and chrF")):
        description = helptext
        if name == "translate":
            description += (". One output line per input line (a blank line for a blank line); words the model "
                            "never saw are warned about on stderr and translated as <unk>; a sentence longer than "
                            "the model reads is an error. Input is UTF-8.")
        p = sub.add_parser(name, help=helptext, description=description, parents=[common], epilog=EXIT_STATUS_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--checkpoint", metavar="PATH", help="a model.pt (or the --out folder of `train`)")
        src.add_argument("--pretrained", choices=_pretrained_names(), help="a shipped model")
        p.add_argument("--beam-size", type=_int_at_least(1), default=1,
                       help="1: greedy (default); >1: beam search")
        p.add_argument("--device", type=_device_name, default="auto",
                       help="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps (default: %(default)s)")
        if name == "translate":
            p.add_argument("sentences", nargs="*", help="sentences to translate (default: read stdin)")
            p.add_argument("--with-source", action="store_true", help="print 'source<TAB>translation'")
            g = p.add_argument_group("sampling (instead of the most probable translation)")
            g.add_argument("--sample", action="store_true",
                           help="draw every word from the model's distribution (with the options below)")
            g.add_argument("--temperature", type=_temperature, default=None, metavar="T",
                           help="divide the logits by T > 0 before the softmax (default: 1)")
            g.add_argument("--top-k", type=_int_at_least(1), default=None, metavar="K",
                           help="draw from the K most probable words only (default: all)")
            g.add_argument("--top-p", type=_top_p, default=None, metavar="P",
                           help="draw from the smallest set of most probable words whose probability reaches P, "
                                "in (0, 1] (nucleus sampling; default: all)")
            g.add_argument("--seed", type=_int_at_least(0), default=None,
                           help="seed of the draws (default: 0, the same draws every run)")
            p.set_defaults(func=cmd_translate)
        else:
            _add_data_args(p, defaults=False)
            p.add_argument("--split", default="test", choices=("train", "val", "test"))
            p.add_argument("--show-errors", type=_int_at_least(0), default=5, metavar="N",
                           help="print N wrong translations (default: %(default)s)")
            p.set_defaults(func=cmd_evaluate)
    d = sub.add_parser("doctor", help="check that this machine (a laptop, a Colab runtime) can run the course",
                       description="Check Python and every dependency against the supported versions, the "
                                   "threads and device, the shipped model, a few seconds of training and the "
                                   "widgets; one line each, with a fix for every failure. Exit status 0 when "
                                   "everything works, 1 when a check failed.", parents=[common])
    d.set_defaults(func=cmd_doctor)
    return parser


def cmd_doctor(args) -> int:
    from .doctor import main as doctor_main
    return doctor_main(debug="--debug" in args.argv)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (0 success, 1 failure while running, 2 user mistake)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    if argv[:1] == ["doctor"] and not {"-h", "--help"} & set(argv[1:]):
        # before the parser, which imports the data module (NumPy): the doctor must also run on a Python where
        # nothing is installed yet, to say so
        return cmd_doctor(argparse.Namespace(argv=argv))
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:                      # --help (0), or a bad flag: the parser printed its line
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    args.argv = argv
    try:
        return args.func(args)
    except UsageError as err:
        if debug:
            traceback.print_exc()
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:                          # e.g. `translate ... | head -1` closed our stdout
        with contextlib.suppress(AttributeError, OSError, ValueError):   # no second error when Python flushes
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as err:                         # a failure while running: one line, the traceback on request
        if debug:
            traceback.print_exc()
        print(f"{PROG}: error: {type(err).__name__}: {_describe(err)}"
              + ("" if debug else " (run again with --debug to see where)"), file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
