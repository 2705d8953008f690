"""A task as a plain dict, its *spec*: the form a checkpoint saves, so that `evaluate` rebuilds the very data a
model was trained on. `task_spec` fills in the task's defaults; `load_task` builds the task's `ParallelData`.
The command line, the chapters and the benchmarks load a task the same way:

    spec = task_spec("numbers", src_lang="en", tgt_lang="fr")
    data = load_task(spec)                      # data.train, data.val, data.test: (source, target) pairs
"""
from __future__ import annotations

from pathlib import Path

from ..config import STOP_RULES, TOKENIZATION, tokenization_for
from .corpora import load_multi30k, load_tsv_corpus
from .ding import DING_PATH, load_ding, missing_corpus_message
from .tasks import SPLIT_VERSIONS, ParallelData, make_task

__all__ = ["MULTI30K_LANGUAGES", "task_spec", "load_task"]

MULTI30K_LANGUAGES = ("en", "de", "fr")          # of Multi30k's task 1, those the course translates between


def _languages(task: str, src_lang: str | None, tgt_lang: str | None) -> tuple[str, str]:
    """(source, target) language: those given, the task's defaults for the rest."""
    if task == "trans-de-en":
        src_lang = src_lang or ("en" if tgt_lang == "de" else "de")
        tgt_lang = tgt_lang or ("de" if src_lang == "en" else "en")
        if {src_lang, tgt_lang} != {"de", "en"}:
            raise ValueError(f"src_lang/tgt_lang: trans-de-en translates de->en or en->de, got {src_lang}->{tgt_lang}")
    elif task == "multi30k":
        src_lang = src_lang or ("de" if tgt_lang == "en" else "en")
        tgt_lang = tgt_lang or ("de" if src_lang == "en" else "en")
        for name, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            if lang not in MULTI30K_LANGUAGES:
                raise ValueError(f"{name}: multi30k has {', '.join(MULTI30K_LANGUAGES)}, got {lang!r}")
    else:
        src_lang = src_lang or ("en" if tgt_lang != "en" else "fr")
        tgt_lang = tgt_lang or ("fr" if src_lang != "fr" else "en")
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang/tgt_lang: expected two different languages, got {src_lang!r} twice")
    return src_lang, tgt_lang


def task_spec(task: str, src_lang: str | None = None, tgt_lang: str | None = None, *, max_number: int = 9999,
              max_len: int = 10, n_train: int | None = None, n_val: int | None = None, n_test: int | None = None,
              corpus: str | None = None, tokenizer: str | None = None, vocab_size: int | None = None,
              data_seed: int = 0) -> dict:
    """The spec of `task` (a task with a stop rule: a key of config.STOP_RULES), its defaults filled in: the
    languages, the tokenizer and its vocabulary size for a corpus, the version of the numbers' held-out split.
    Which sizes apply to which task is the loaders' business: `max_number` to numbers, `max_len` to
    copy/reverse/sort, `corpus` to the corpora."""
    if task not in STOP_RULES:
        raise ValueError(f"task: expected one of {', '.join(STOP_RULES)}, got {task!r}")
    src_lang, tgt_lang = _languages(task, src_lang, tgt_lang)
    spec = {"task": task, "src_lang": src_lang, "tgt_lang": tgt_lang, "max_number": max_number, "max_len": max_len,
            "n_train": n_train, "n_val": n_val, "n_test": n_test, "corpus": corpus, "data_seed": data_seed}
    if task in TOKENIZATION:
        spec["tokenizer"], spec["vocab_size"] = tokenization_for(task, tokenizer, vocab_size)
        if spec["tokenizer"] == "bpe" and spec["vocab_size"] is None:
            raise ValueError("vocab_size: expected the number of BPE tokens to learn with tokenizer 'bpe'")
    if task == "numbers":                            # which numbers are held out: saved with the checkpoint
        spec["split"] = SPLIT_VERSIONS[-1]
    return spec


def load_task(spec: dict, download: bool = False) -> ParallelData:
    """The task's ParallelData from its spec (as `task_spec` makes it, or as a checkpoint saved it).
    `download`: fetch Multi30k's missing files into `spec["corpus"]`."""
    task, seed = spec["task"], spec["data_seed"]
    sizes = {k: spec.get(k) for k in ("n_val", "n_test", "n_train") if spec.get(k) is not None}
    if task == "numbers":
        # a checkpoint made before split versions were recorded used version 1
        return make_task("numbers", src_lang=spec["src_lang"], tgt_lang=spec["tgt_lang"],
                         max_number=spec["max_number"], seed=seed, split=spec.get("split", 1), **sizes)
    if task == "tsv":
        path = Path(spec["corpus"])
        if not path.is_file():
            raise FileNotFoundError(f"corpus: no file at {path}" + (" (it is a folder)" if path.is_dir() else ""))
        if "n_train" in sizes:
            raise ValueError("n_train: not used with task tsv (the corpus gives the training pairs)")
        return load_tsv_corpus(path, n_val=sizes.get("n_val"), n_test=sizes.get("n_test"), seed=seed,
                               tokenizer=spec.get("tokenizer", "word"), vocab_size=spec.get("vocab_size"))
    if task == "trans-de-en":
        path = Path(spec["corpus"]) if spec["corpus"] else DING_PATH
        if not path.is_file():
            raise FileNotFoundError(missing_corpus_message(path))
        return load_ding(spec["corpus"], spec["src_lang"], spec["tgt_lang"], tokenizer=spec["tokenizer"],
                         vocab_size=spec["vocab_size"], **sizes)
    if task == "multi30k":
        try:
            return load_multi30k(spec["corpus"], spec["src_lang"], spec["tgt_lang"], download_missing=download,
                                 tokenizer=spec["tokenizer"], vocab_size=spec["vocab_size"])
        except OSError as err:                       # a missing folder or file, or a failed download
            raise OSError("corpus: " + " ".join(str(err).split()).removeprefix("root: ")) from err
    return make_task(task, max_len=spec["max_len"], seed=seed, **sizes)
