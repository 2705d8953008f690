"""Real German-English sentences that work offline: the example sentences of the Ding dictionary.

Ding (Frank Richter, TU Chemnitz; https://dict.tu-chemnitz.de/) is a German-English dictionary whose entries
include thousands of example sentences with their translations, written by people. Debian and Ubuntu (Google
Colab included) package it: `apt-get install trans-de-en` puts it at /usr/share/trans/de-en. It is licensed under
the GPL (version 2 or later), so the course reads it at run time and never copies it: no file of the project
holds its sentences, and no model the project ships was trained on it.

An entry reads `Deutsch | Beispiel. :: English | Example.`: senses separated by " | ", aligned between the two
sides, each sense listing alternatives separated by "; ". A sentence pair is the first alternative of a sense on
both sides when both
- read as one sentence: a capital letter (or digit, or quotation mark) first, a full stop, question or
  exclamation mark (or closing quotation mark) last;
- carry no dictionary markup: no brackets ({n}, [ugs.], (formal)), no "/" between variants, no "|", ";", "~";
- have 3 to 12 words (split at spaces).
Pairs are then de-duplicated on the German side and on the English side (the first occurrence is kept), so a
sentence is never in two splits and never has two reference translations.

The split is fixed before any tuning, and by content, not by position: each pair's key is the SHA-256 of its
German sentence; the 1,000 pairs with the smallest keys are the test set, the next 1,000 the validation set
(for every choice of recipe), the rest the training set, in key order (so `n_train` takes a subset that grows
by adding pairs, never by swapping them). Both directions (de->en, en->de) hold out the same pairs.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..config import tokenization_for
from .corpora import CorpusError, _open_text, _utf8_lines
from .tasks import ParallelData, _check_sizes

__all__ = ["DING_PATH", "DING_INSTALL", "DING_DOWNLOAD", "read_ding_pairs", "load_ding", "ding_split_key"]

DING_PATH = Path("/usr/share/trans/de-en")
DING_INSTALL = "sudo apt-get install trans-de-en"           # Debian, Ubuntu; in Colab: !apt-get install -y trans-de-en
DING_DOWNLOAD = "https://ftp.tu-chemnitz.de/pub/Local/urz/ding/de-en/"   # the Ding project's own files (de-en.txt.gz)
MIN_WORDS, MAX_WORDS = 3, 12
N_TEST, N_VAL = 1000, 1000
LANGUAGES = ("de", "en")

_SENTENCE = re.compile(r"""^[A-ZÄÖÜ0-9"„‚'].*[.?!"“‘']$""")
_MARKUP = re.compile(r"[{}\[\]()<>/|;~…]")


def _sentence(text: str) -> str | None:
    """The first alternative of one sense of an entry, if it is a clean sentence of 3 to 12 words."""
    text = text.split("; ")[0].strip()
    if not _SENTENCE.match(text) or _MARKUP.search(text):
        return None
    return text if MIN_WORDS <= len(text.split()) <= MAX_WORDS else None


def missing_corpus_message(path: Path) -> str:
    return (f"corpus: no Ding dictionary at {path}. Install it with `{DING_INSTALL}` (Debian, Ubuntu; in Colab "
            f"`!apt-get install -y trans-de-en`), or download de-en.txt.gz from the Ding project ({DING_DOWNLOAD}) "
            "and give its path")


def read_ding_pairs(path: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """The (German, English) sentence pairs of the Ding dictionary file at `path` (default: where
    `apt-get install trans-de-en` puts it; a .gz file is read as it is), in the order of the file."""
    path = DING_PATH if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(missing_corpus_message(path))
    pairs, seen_de, seen_en, entries = [], set(), set(), 0
    with _open_text(path) as f:
        for line in _utf8_lines(f, path):
            if line.startswith("#") or " :: " not in line:
                continue
            entries += 1
            german, english = line.rstrip("\n").split(" :: ", 1)
            senses_de, senses_en = german.split(" | "), english.split(" | ")
            if len(senses_de) != len(senses_en):
                continue                          # senses that do not align: nothing is guessed
            for sense_de, sense_en in zip(senses_de, senses_en):
                de, en = _sentence(sense_de), _sentence(sense_en)
                if de and en and de not in seen_de and en not in seen_en:
                    seen_de.add(de)
                    seen_en.add(en)
                    pairs.append((de, en))
    if entries == 0:
        raise CorpusError(f"{path}: expected Ding dictionary entries ('Deutsch :: English' lines), found none")
    if not pairs:
        raise CorpusError(f"{path}: no example sentence pair of {MIN_WORDS} to {MAX_WORDS} words found")
    return pairs


def ding_split_key(german: str) -> str:
    """Where a pair falls in the split: the SHA-256 of its German sentence (smallest keys: test, then val)."""
    return hashlib.sha256(german.encode("utf-8")).hexdigest()


def load_ding(path: str | os.PathLike | None = None, src_lang: str = "de", tgt_lang: str = "en",
              tokenizer: str | None = None, vocab_size: int | None = None, n_train: int | None = None,
              n_val: int = N_VAL, n_test: int = N_TEST) -> ParallelData:
    """The Ding sentence pairs split as the module says: `n_test` test and `n_val` validation pairs by the
    hash of the German sentence, the rest (or its first `n_train`, in key order) for training. `tokenizer` and
    `vocab_size` are the data's (`ParallelData.build_vocabs`): "bpe" learns one joint BPE of `vocab_size` tokens;
    by default the course's (`config.TOKENIZATION`, as `transformer-course train --task trans-de-en` uses)."""
    if {src_lang, tgt_lang} != set(LANGUAGES):
        raise ValueError(f"src_lang/tgt_lang: expected 'de' and 'en' (either way round), got {src_lang!r} and "
                         f"{tgt_lang!r}")
    _check_sizes(n_val=n_val, n_test=n_test, **({} if n_train is None else {"n_train": n_train}))
    tokenizer, vocab_size = tokenization_for("trans-de-en", tokenizer, vocab_size)
    path = DING_PATH if path is None else Path(path)
    pairs = sorted(read_ding_pairs(path), key=lambda pair: ding_split_key(pair[0]))
    if len(pairs) <= n_test + n_val:
        raise CorpusError(f"{path}: {len(pairs)} sentence pairs, too few for {n_test} test and {n_val} validation "
                          "pairs and a training set")
    test, val, train = pairs[:n_test], pairs[n_test:n_test + n_val], pairs[n_test + n_val:]
    if n_train is not None:
        if n_train > len(train):
            raise ValueError(f"n_train: expected at most the {len(train)} training pairs of {path}, got {n_train}")
        train = train[:n_train]
    if src_lang == "en":
        test, val, train = ([(en, de) for de, en in split] for split in (test, val, train))
    return ParallelData(train, val, test, src_tokenizer=tokenizer, tgt_tokenizer=tokenizer,
                        name=f"ding-{src_lang}-{tgt_lang}", vocab_size=vocab_size,
                        info=dict(path=str(path), src_lang=src_lang, tgt_lang=tgt_lang, n_train=len(train),
                                  n_val=n_val, n_test=n_test))
