"""Byte-pair encoding (Sennrich, Haddow and Birch, 2016): subword units learned from text, and applied to it.

A word-level vocabulary cannot spell a word it never saw; a character-level one makes every sentence long. BPE
sits between the two. It starts from the characters and repeatedly merges the most frequent pair of adjacent
symbols into a new symbol, until the vocabulary has the size asked for. Frequent words end up as one symbol,
rare words as a few pieces, and any word made of known characters can be spelled.

    >>> bpe = learn_bpe(["low lower lowest", "newer newest"], vocab_size=20)   # 4 + 9 characters + 7 merges
    >>> bpe.tokenize("lowest newer")
    ['▁lo', 'we', 'st', '▁newe', 'r']
    >>> bpe.tokenize("slower")                  # a word never seen, spelled with the pieces learned
    ['▁', 's', 'lo', 'we', 'r']
    >>> bpe.detokenize(bpe.tokenize("lowest newer"))
    'lowest newer'

Three rules make the result exact and reproducible:

- **Pre-tokenisation.** Text is cut into words before any merge, and a merge never crosses a word boundary. A
  space becomes the symbol `WORD_START` ("▁") at the start of the next word, as SentencePiece and the `Metaspace`
  pre-tokenizer of Hugging Face `tokenizers` do: "Dogs bark." -> "▁Dogs", "▁bark.". No character is lost, so
  decoding joins the pieces and turns "▁" back into spaces.
- **The vocabulary's order.** Special tokens first (ids 0-3, as in every vocabulary of the course), then the
  characters of the training text by code point, then each merged symbol in the order it was made.
- **Ties.** When two pairs are equally frequent, the pair whose left symbol comes first in that order wins (then
  the right symbol): the rule of `tokenizers`' `BpeTrainer`, so that `learn_bpe` and `learn_bpe_fast` learn
  the same merges in the same order (tests/test_data/test_data_bpe.py checks it).

`learn_bpe` is written to be read: it counts every pair again after each merge, which takes seconds on a page
of text and far too long on a corpus. `learn_bpe_fast` learns the same merges with the Rust library `tokenizers`
(Hugging Face), which updates only the counts a merge changes and counts in parallel; the course uses it for
real corpora. It is preinstalled in Google Colab and maintained with the `transformers` library; SentencePiece,
the other common choice, learns its BPE with its own rules (a score per piece, its own normalisation), which a
course implementation could not match step for step.
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..special_tokens import SPECIALS, UNK

__all__ = ["WORD_START", "pretokenize", "count_pairs", "merge_pair", "learn_bpe", "learn_bpe_fast", "BPE"]

WORD_START = "▁"   # U+2581, "lower one eighth block": marks a space, i.e. the start of a word


def pretokenize(text: str) -> list[str]:
    """The words of `text`, each with the space before it as "▁": "Dogs bark." -> ["▁Dogs", "▁bark."].

    The first word gets a "▁" too, so a word is spelled the same wherever it stands; two spaces in a row leave a
    word of its own ("▁"). Every character is kept: `"".join(words)` with "▁" turned back into spaces (and the
    first one dropped) gives `text` again.
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a string, got {type(text).__name__}")
    if not text:
        return []
    marked = text.replace(" ", WORD_START)
    if not marked.startswith(WORD_START):
        marked = WORD_START + marked
    words, start = [], 0
    for i in range(1, len(marked) + 1):      # cut before every "▁": each word begins with one
        if i == len(marked) or marked[i] == WORD_START:
            words.append(marked[start:i])
            start = i
    return words


def count_pairs(words: dict[str, list[str]], word_counts: Counter) -> Counter:
    """How often each pair of adjacent symbols occurs, over every word times its count in the text."""
    pairs: Counter = Counter()
    for word, symbols in words.items():
        for left, right in itertools.pairwise(symbols):
            pairs[left, right] += word_counts[word]
    return pairs


def merge_pair(symbols: Sequence[str], pair: tuple[str, str]) -> list[str]:
    """`symbols` with every occurrence of `pair` replaced by the joined symbol, left to right, without overlap:
    merging ("a", "a") in a a a gives aa a."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def _check_learn_args(vocab_size: int, specials: Sequence[str]) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < len(specials) + 1:
        raise ValueError(f"vocab_size: expected an integer of at least {len(specials) + 1} (the special tokens "
                         f"and one character), got {vocab_size!r}")


def learn_bpe(texts: Iterable[str], vocab_size: int, specials: Sequence[str] = SPECIALS) -> BPE:
    """Learn merges from `texts` until the vocabulary (special tokens, characters, merged symbols) has
    `vocab_size` entries, or no pair is left to merge. The teaching version: every pair is counted again after
    each merge (`learn_bpe_fast` gives the same result on large corpora)."""
    _check_learn_args(vocab_size, specials)
    word_counts = Counter(word for text in texts for word in pretokenize(text))
    alphabet = sorted({char for word in word_counts for char in word})
    vocabulary = list(specials) + [char for char in alphabet if char not in specials]
    position = {symbol: i for i, symbol in enumerate(vocabulary)}   # the order that breaks ties
    words = {word: list(word) for word in word_counts}               # each word as its current symbols
    merges: list[tuple[str, str]] = []
    while len(vocabulary) < vocab_size:
        pairs = count_pairs(words, word_counts)
        if not pairs:
            break                                   # every word is a single symbol
        # the most frequent pair; among equals, the one whose symbols come first in the vocabulary
        best = max(pairs, key=lambda pair: (pairs[pair], -position[pair[0]], -position[pair[1]]))
        merges.append(best)
        new_symbol = best[0] + best[1]
        if new_symbol not in position:              # (two different pairs can spell the same symbol)
            position[new_symbol] = len(vocabulary)
            vocabulary.append(new_symbol)
        words = {word: merge_pair(symbols, best) for word, symbols in words.items()}
    return BPE(merges, alphabet, specials)


def learn_bpe_fast(texts: Iterable[str], vocab_size: int, specials: Sequence[str] = SPECIALS) -> BPE:
    """`learn_bpe` with Hugging Face `tokenizers` (its `BpeTrainer`, the same pre-tokenisation): the same
    merges in the same order, in a fraction of the time."""
    _check_learn_args(vocab_size, specials)
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        raise ImportError("learn_bpe_fast needs Hugging Face tokenizers (preinstalled in Colab): "
                          "pip install tokenizers") from None
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    model = json.loads(tokenizer.to_str())["model"]
    # merges are saved as "a b" strings by older versions, as [a, b] lists by newer ones
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    by_id = sorted(model["vocab"], key=model["vocab"].get)
    alphabet = [token for token in by_id[len(specials):] if len(token) == 1]
    return BPE(merges, alphabet, specials)


class BPE:
    """A learned BPE: its merges (in the order learned) and the characters it started from.

    `tokenize` splits each word into characters and applies the merges, the earliest learned first (all its
    occurrences, left to right), until no learned pair is left; `detokenize` undoes it. A character never seen
    in training stays a piece of its own (a vocabulary maps it to <unk>)."""

    name = "bpe"

    def __init__(self, merges: Sequence[Sequence[str]], alphabet: Sequence[str], specials: Sequence[str] = SPECIALS):
        merges = [tuple(pair) for pair in merges]
        for pair in merges:
            if len(pair) != 2 or not all(isinstance(s, str) and s for s in pair):
                raise ValueError(f"merges: expected pairs of two non-empty strings, got {pair!r}")
        self.merges: list[tuple[str, str]] = merges
        self.alphabet: list[str] = list(alphabet)
        self.specials: tuple[str, ...] = tuple(specials)
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, pair in enumerate(merges):
            self.ranks.setdefault(pair, rank)     # a pair learned twice keeps its first rank
        self._word_pieces = lru_cache(maxsize=1 << 16)(self._pieces_of_word)

    def vocabulary(self) -> list[str]:
        """Special tokens, then the characters, then the merged symbols in the order learned (no repeats)."""
        tokens = list(self.specials) + [char for char in self.alphabet if char not in self.specials]
        seen = set(tokens)
        for left, right in self.merges:
            if left + right not in seen:
                seen.add(left + right)
                tokens.append(left + right)
        return tokens

    def _pieces_of_word(self, word: str) -> tuple[str, ...]:
        symbols = list(word)
        while len(symbols) > 1:
            ranked = [(self.ranks[pair], pair) for pair in itertools.pairwise(symbols) if pair in self.ranks]
            if not ranked:
                break
            symbols = merge_pair(symbols, min(ranked)[1])   # the earliest learned merge first
        return tuple(symbols)

    def tokenize(self, text: str) -> list[str]:
        return [piece for word in pretokenize(text) for piece in self._word_pieces(word)]

    def detokenize(self, tokens: Sequence[str]) -> str:
        text = "".join(tokens).replace(WORD_START, " ")
        return text[1:] if text.startswith(" ") else text

    def to_dict(self) -> dict:
        return {"merges": [list(pair) for pair in self.merges], "alphabet": list(self.alphabet)}

    @classmethod
    def from_dict(cls, values: dict, specials: Sequence[str] = SPECIALS) -> BPE:
        if not isinstance(values, dict) or not {"merges", "alphabet"} <= set(values):
            raise ValueError(f"bpe: expected a dict with keys 'merges' and 'alphabet', got {values!r:.80}")
        return cls(values["merges"], values["alphabet"], specials)

    def __eq__(self, other) -> bool:
        return isinstance(other, BPE) and (self.merges, self.alphabet, self.specials) == (
            other.merges, other.alphabet, other.specials)

    def __repr__(self) -> str:
        return f"BPE({len(self.merges)} merges, {len(self.alphabet)} characters)"
