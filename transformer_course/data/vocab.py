"""Tokenisers (character, word and subword level) and vocabularies with fixed special tokens.

A `Vocab` maps tokens to integer ids and back. Ids 0-3 are always the special tokens of
`transformer_course.special_tokens` (pad, bos, eos, unk), which this module re-exports.
A vocabulary remembers its tokeniser, so `encode`/`decode` turn text into ids and back in one call, and it
saves to and loads from a small JSON file. A subword (BPE) vocabulary is learned from text
(`Vocab.build(texts, "bpe", max_size=N)`) and saves its merges with its tokens.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..special_tokens import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIALS, UNK, UNK_ID
from ..utils import atomic_write_text
from .bpe import BPE, learn_bpe_fast

__all__ = ["PAD", "BOS", "EOS", "UNK", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
           "CharTokenizer", "WordTokenizer", "get_tokenizer", "Vocab"]



class CharTokenizer:
    """Every character is a token (spaces included), so decoding is exact: `detokenize(tokenize(s)) == s`."""

    name = "char"

    def tokenize(self, text: str) -> list[str]:
        return list(text)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)


class WordTokenizer:
    """Words and punctuation marks are tokens: "ninety-seven," -> ["ninety", "-", "seven", ","].

    Splitting the hyphen off keeps the vocabulary small and lets a model meet "quatre-vingt-dix-sept" as
    four words it knows. Decoding glues hyphens and apostrophes to both neighbours and closing punctuation
    to the word before, so text made only of words, single spaces and those marks round-trips exactly.
    """

    name = "word"
    _pattern = re.compile(r"\w+|[^\w\s]", re.UNICODE)
    _glue_both = frozenset({"-", "'", "’"})
    _glue_left = frozenset({",", ".", "!", "?", ";", ":", ")", "%"})

    def tokenize(self, text: str) -> list[str]:
        return self._pattern.findall(text)

    def detokenize(self, tokens: Sequence[str]) -> str:
        out: list[str] = []
        for i, token in enumerate(tokens):
            glue = i == 0 or token in self._glue_both or token in self._glue_left or tokens[i - 1] in self._glue_both
            out.append(token if glue else " " + token)
        return "".join(out)


_TOKENIZERS = {"char": CharTokenizer, "word": WordTokenizer}


def get_tokenizer(name):
    """The tokeniser called `name` ("char" or "word"); a learned `BPE` is returned as it is."""
    if isinstance(name, BPE):
        return name
    if name == "bpe":
        raise ValueError("tokenizer: 'bpe' is learned from text: Vocab.build(texts, 'bpe', max_size=N), "
                         "or pass a learned BPE (transformer_course.data.bpe)")
    if name not in _TOKENIZERS:
        raise ValueError(f"tokenizer: expected one of {sorted(_TOKENIZERS)}, 'bpe' or a BPE, got {name!r}")
    return _TOKENIZERS[name]()


class Vocab:
    """Token <-> id mapping; ids 0..3 are pad, bos, eos, unk; the tokeniser is part of the vocabulary
    ("char", "word", or a learned `BPE`, whose vocabulary this is)."""

    def __init__(self, tokens: Iterable[str], tokenizer: str | BPE = "word"):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            tokens = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        if len(set(tokens)) != len(tokens):
            dupes = sorted(t for t, n in Counter(tokens).items() if n > 1)
            raise ValueError(f"tokens: expected unique tokens, got duplicates {dupes[:10]}")
        self.tokenizer = get_tokenizer(tokenizer)
        if isinstance(self.tokenizer, BPE) and tokens != self.tokenizer.vocabulary():
            raise ValueError("tokens: a BPE vocabulary's tokens are its BPE's vocabulary() "
                             f"({len(self.tokenizer.vocabulary())} tokens), got {len(tokens)} others")
        self.itos: list[str] = tokens
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(tokens)}

    # -- building --------------------------------------------------------------------------------------
    @classmethod
    def build(cls, texts: Iterable[str], tokenizer: str = "word", min_freq: int = 1,
              max_size: int | None = None) -> Vocab:
        """A vocabulary of the tokens in `texts`, most frequent first (ties: alphabetical, so it is stable).
        With tokenizer "bpe", `max_size` merges are learned from `texts` (`learn_bpe_fast`; min_freq unused)."""
        if tokenizer == "bpe":
            if max_size is None:
                raise ValueError("max_size: a BPE vocabulary needs its size (the number of tokens to learn), got None")
            return cls.from_bpe(learn_bpe_fast(texts, max_size))
        tok = get_tokenizer(tokenizer)
        counts = Counter(t for text in texts for t in tok.tokenize(text))
        ordered = sorted((t for t, n in counts.items() if n >= min_freq and t not in SPECIALS),
                         key=lambda t: (-counts[t], t))
        if max_size is not None:
            ordered = ordered[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + ordered, tokenizer=tokenizer)

    @classmethod
    def from_bpe(cls, bpe: BPE) -> Vocab:
        """The vocabulary of a learned BPE: its tokens in its order (special tokens, characters, merges)."""
        return cls(bpe.vocabulary(), tokenizer=bpe)

    # -- lookups ---------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other) -> bool:
        return (isinstance(other, Vocab) and self.itos == other.itos and self.tokenizer.name == other.tokenizer.name
                and (not isinstance(self.tokenizer, BPE) or self.tokenizer == other.tokenizer))

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, tokenizer={self.tokenizer.name!r})"

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def token_to_id(self, token: str) -> int:
        return self.stoi.get(token, UNK_ID)

    def id_to_token(self, index: int) -> str:
        if not 0 <= int(index) < len(self.itos):
            raise ValueError(f"index: expected an id in [0, {len(self.itos)}), got {index}")
        return self.itos[int(index)]

    # -- text <-> ids ----------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        return self.tokenizer.tokenize(text)

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = True) -> list[int]:
        """Ids of `text`'s tokens (unknown tokens -> unk), optionally framed by bos ... eos."""
        ids = [self.stoi.get(t, UNK_ID) for t in self.tokenizer.tokenize(text)]
        return ([BOS_ID] if add_bos else []) + ids + ([EOS_ID] if add_eos else [])

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> str:
        """Text of `ids`; stops at the first eos and drops pad/bos when `strip_special` (unk is kept)."""
        tokens = []
        for index in ids:
            index = int(index)
            if strip_special:
                if index == EOS_ID:
                    break
                if index in (PAD_ID, BOS_ID):
                    continue
            tokens.append(self.id_to_token(index))
        return self.tokenizer.detokenize(tokens)

    # -- persistence -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        values = {"tokenizer": self.tokenizer.name, "tokens": list(self.itos)}
        if isinstance(self.tokenizer, BPE):
            values["bpe"] = self.tokenizer.to_dict()
        return values

    @classmethod
    def from_dict(cls, values: dict) -> Vocab:
        if not isinstance(values, dict) or "tokens" not in values or "tokenizer" not in values:
            raise ValueError(f"vocabulary: expected a dict with keys 'tokenizer' and 'tokens', got {values!r:.80}")
        tokens = values["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ValueError("vocabulary: expected 'tokens' to be a list of strings")
        if tuple(tokens[:4]) != SPECIALS:
            raise ValueError(f"vocabulary: expected the first four tokens to be {SPECIALS}, got {tuple(tokens[:4])}")
        if values["tokenizer"] == "bpe":
            if "bpe" not in values:
                raise ValueError("vocabulary: a 'bpe' vocabulary needs its 'bpe' entry (the merges and the alphabet)")
            return cls(tokens, tokenizer=BPE.from_dict(values["bpe"]))
        return cls(tokens, tokenizer=values["tokenizer"])

    def save(self, path: str | os.PathLike) -> None:
        """Write the vocabulary as JSON (UTF-8, one readable file), atomically: a reader never sees half a file."""
        atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """A vocabulary saved by `save`; a missing, unreadable or malformed file raises an error naming it."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: no vocabulary file at {path}")
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as err:
            raise ValueError(f"{path}: not a vocabulary file ({err})") from None

    def diff(self, other: Vocab) -> str | None:
        """None when equal, else one line describing the first difference (for error messages)."""
        if self == other:
            return None
        if self.tokenizer.name != other.tokenizer.name:
            return f"tokenizer {self.tokenizer.name!r} vs {other.tokenizer.name!r}"
        if isinstance(self.tokenizer, BPE) and self.tokenizer != other.tokenizer and self.itos == other.itos:
            return "the same tokens, other BPE merges"
        for i, (a, b) in enumerate(zip(self.itos, other.itos)):
            if a != b:
                return f"sizes {len(self)} vs {len(other)}; first difference at id {i}: {a!r} vs {b!r}"
        return f"sizes {len(self)} vs {len(other)}"
