"""Real parallel corpora for online users: Tatoeba/Anki tab-separated files and Multi30k.

Nothing here touches the network unless `download` is called. `download` checks a SHA-256 so a truncated or
tampered file is never used; the course's tests exercise it with `file://` URLs.
"""
from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import numpy as np

from ..config import tokenization_for
from ..utils import atomic_write, sha256sum
from .tasks import ParallelData, _check_sizes, default_split_sizes

__all__ = ["CorpusError", "download", "read_tsv_pairs", "load_tsv_corpus", "read_parallel_files",
           "load_multi30k", "split_pairs", "MULTI30K_URLS"]

# Multi30k (Elliott et al. 2016), task 1: one sentence per line, files {split}.{lang}.gz.
MULTI30K_URLS = {
    "train": "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/train.{lang}.gz",
    "val": "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/val.{lang}.gz",
    "test": "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/test_2016_flickr.{lang}.gz",
}


class CorpusError(ValueError):
    """A corpus file that cannot be used (empty, malformed line, bad checksum); the message says where."""


def download(url: str, dest: str | os.PathLike, sha256: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch `url` to `dest` (skipped when `dest` exists with the right hash); verify `sha256` if given.

    The file is written next to `dest` under a temporary name and renamed only after the hash matched, so
    an interrupted download never leaves a half file at `dest`.
    """
    dest = Path(dest)
    if dest.exists() and (sha256 is None or sha256sum(dest) == sha256.lower()):
        return dest

    def fetch(tmp: str) -> None:
        with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            while block := response.read(1 << 20):
                out.write(block)
        if sha256 is not None:
            got = sha256sum(tmp)
            if got != sha256.lower():
                raise CorpusError(f"download: {url} has sha256 {got}, expected {sha256.lower()}; "
                                  "the file changed or the transfer was corrupted (nothing was saved)")

    atomic_write(dest, fetch)
    return dest


def _open_text(path: Path, binary: bool = False):
    """`path` opened as UTF-8 text, or as bytes with `binary`; gzip-compressed when its name ends in .gz."""
    if path.suffix == ".gz":
        import gzip
        return gzip.open(path, "rb") if binary else gzip.open(path, "rt", encoding="utf-8")
    return open(path, "rb") if binary else open(path, encoding="utf-8")


def _utf8_lines(f, path: Path):
    """The lines of `f`, opened by `_open_text(path)`. A byte that is not UTF-8 becomes a CorpusError naming the
    file, line and offset (the command line's wording for stdin): Python's own UnicodeDecodeError names no
    file, and its position counts from the start of the block being decoded, not of the line."""
    try:
        yield from f
    except UnicodeDecodeError:
        raise CorpusError(_undecodable_message(path)) from None


def _undecodable_message(path: Path) -> str:
    """Where the first byte that is not UTF-8 lies; the file is read again as bytes, only once decoding failed."""
    with _open_text(path, binary=True) as f:
        raw = f.read()
    # bytes.splitlines ends lines where text mode does (\n, \r\n, \r), so the line numbers agree
    for lineno, line in enumerate(raw.splitlines(), start=1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as err:
            return (f"{path}:{lineno}: byte {err.start} (0x{line[err.start]:02x}) is not valid UTF-8; "
                    "save the file as UTF-8")
    return f"{path}: expected a UTF-8 text file, got bytes that are not valid UTF-8"


def read_tsv_pairs(path: str | os.PathLike, src_col: int = 0, tgt_col: int = 1,
                   skip_blank: bool = True) -> list[tuple[str, str]]:
    """(source, target) pairs from a tab-separated file (Tatoeba/Anki: "Go.<TAB>Va !<TAB>attribution").

    Extra columns are ignored; a line with fewer columns than needed, or an empty source/target, raises
    `CorpusError` naming the file and the 1-based line number. An empty file raises too.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no corpus file at {path}")
    need = max(src_col, tgt_col) + 1
    pairs = []
    with _open_text(path) as f:
        for lineno, line in enumerate(_utf8_lines(f, path), start=1):
            line = line.rstrip("\n").rstrip("\r")
            if skip_blank and not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) < need:
                raise CorpusError(f"{path}:{lineno}: expected at least {need} tab-separated columns, "
                                  f"got {len(cols)}: {line[:60]!r}")
            src, tgt = cols[src_col].strip(), cols[tgt_col].strip()
            if not src or not tgt:
                raise CorpusError(f"{path}:{lineno}: empty {'source' if not src else 'target'} sentence")
            pairs.append((src, tgt))
    if not pairs:
        raise CorpusError(f"{path}: the corpus file is empty (no sentence pairs)")
    return pairs


def split_pairs(pairs: list[tuple[str, str]], n_val: int, n_test: int, seed: int = 0,
                by_source: bool = True) -> tuple[list, list, list]:
    """Shuffle and split into train/val/test; with `by_source`, all pairs sharing a source sentence land
    in the same split (Tatoeba has many translations of "Go."), so test sources are never trained on."""
    _check_sizes(n_val=n_val, n_test=n_test)
    keys = sorted({src for src, _ in pairs}) if by_source else list(range(len(pairs)))
    order = np.random.default_rng(seed).permutation(len(keys))
    if n_val + n_test >= len(keys):
        raise ValueError(f"n_val + n_test: expected fewer than the {len(keys)} distinct "
                         f"{'sources' if by_source else 'pairs'}, got {n_val} + {n_test}")
    split_of = {}
    for rank, k in enumerate(order):
        split_of[keys[k]] = 2 if rank < n_test else 1 if rank < n_test + n_val else 0
    out: tuple[list, list, list] = ([], [], [])
    for i, pair in enumerate(pairs):
        out[split_of[pair[0] if by_source else i]].append(pair)
    return out


def load_tsv_corpus(path: str | os.PathLike, n_val: int | None = None, n_test: int | None = None, seed: int = 0,
                    src_col: int = 0, tgt_col: int = 1, tokenizer: str = "word",
                    max_tokens: int | None = None, vocab_size: int | None = None) -> ParallelData:
    """A Tatoeba/Anki TSV file as a `ParallelData`, split by source sentence (see `split_pairs`).

    `n_val` and `n_test` count distinct source sentences; by default 5% and 10% of them (at most 500 and 1000,
    at least 1 each), so a corpus of any size splits. `max_tokens` drops pairs whose source or target is longer
    (in whitespace words) — the usual way to keep a CPU run short. `tokenizer` ("word", "char" or "bpe") and
    `vocab_size` are the data's (`ParallelData.build_vocabs`).
    """
    pairs = read_tsv_pairs(path, src_col, tgt_col)
    if max_tokens is not None:
        pairs = [p for p in pairs if max(len(p[0].split()), len(p[1].split())) <= max_tokens]
        if not pairs:
            raise CorpusError(f"{path}: no pair has at most max_tokens={max_tokens} words on both sides")
    default_val, default_test = default_split_sizes(len({src for src, _ in pairs}))
    n_val = default_val if n_val is None else n_val
    n_test = default_test if n_test is None else n_test
    train, val, test = split_pairs(pairs, n_val, n_test, seed)
    return ParallelData(train, val, test, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer,
                        name=Path(path).stem, vocab_size=vocab_size,
                        info=dict(path=str(path), n_val=n_val, n_test=n_test, seed=seed, max_tokens=max_tokens))


def read_parallel_files(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> list[tuple[str, str]]:
    """Pairs from two line-aligned files (Multi30k style); differing line counts or empty lines raise."""
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    with _open_text(src_path) as f:
        src = [line.rstrip("\n") for line in _utf8_lines(f, src_path)]
    with _open_text(tgt_path) as f:
        tgt = [line.rstrip("\n") for line in _utf8_lines(f, tgt_path)]
    if not src:
        raise CorpusError(f"{src_path}: the corpus file is empty")
    if not tgt:
        raise CorpusError(f"{tgt_path}: the corpus file is empty")
    if len(src) != len(tgt):
        raise CorpusError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}; "
                          "parallel files must be line-aligned")
    for lineno, (s, t) in enumerate(zip(src, tgt), start=1):
        if not s.strip() or not t.strip():
            where = src_path if not s.strip() else tgt_path
            raise CorpusError(f"{where}:{lineno}: empty sentence in a parallel file")
    return [(s.strip(), t.strip()) for s, t in zip(src, tgt)]


def load_multi30k(root: str | os.PathLike, src_lang: str = "en", tgt_lang: str = "de",
                  download_missing: bool = False, checksums: dict[str, str] | None = None,
                  tokenizer: str | None = None, vocab_size: int | None = None) -> ParallelData:
    """Multi30k task 1 from `root`: its own train, val and test (test_2016_flickr) splits, one sentence per line
    in line-aligned files `{split}.{lang}` (gzip-compressed when named `.gz`), e.g. train.en.gz and train.de.gz.

    With `download_missing`, absent files are fetched from `MULTI30K_URLS`; `checksums` maps a file name
    ("train.en.gz") to its expected sha256 (the download is verified when given). `tokenizer` and `vocab_size`
    as for `load_tsv_corpus` ("bpe": one joint vocabulary of `vocab_size` tokens); by default the course's
    (`config.TOKENIZATION`, as `transformer-course train --task multi30k` uses).
    """
    tokenizer, vocab_size = tokenization_for("multi30k", tokenizer, vocab_size)
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"root: expected the folder of Multi30k's files, got the file {root}")
    splits = {}
    for split, url in MULTI30K_URLS.items():
        files = []
        for lang in (src_lang, tgt_lang):
            name = url.format(lang=lang).rsplit("/", 1)[1]
            candidates = [root / name, root / name.removesuffix(".gz")]
            found = next((p for p in candidates if p.exists()), None)
            if found is None:
                if not download_missing:
                    raise FileNotFoundError(f"root: no {candidates[1].name} or {name} in {root}; download "
                                            "Multi30k's task-1 files (github.com/multi30k/dataset, data/task1/raw) "
                                            "there, or let the course fetch them (download_missing=True, "
                                            "--download on the command line)")
                root.mkdir(parents=True, exist_ok=True)
                found = download(url.format(lang=lang), root / name, (checksums or {}).get(name))
            files.append(found)
        splits[split] = read_parallel_files(*files)
    return ParallelData(splits["train"], splits["val"], splits["test"], src_tokenizer=tokenizer,
                        tgt_tokenizer=tokenizer, vocab_size=vocab_size,
                        name=f"multi30k-{src_lang}-{tgt_lang}", info=dict(root=str(root)))
