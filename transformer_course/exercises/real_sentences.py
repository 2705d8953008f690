"""Checks for chapter 10 (real sentences): chrF of one sentence pair, written out by hand.

The check calls the learner's function on fixed sentence pairs and compares with `sacrebleu.sentence_chrf`
(sacreBLEU's defaults: character n-grams of orders 1 to 6 with the spaces removed, beta = 2). A reference
written out here (`_chrf`, on purpose independent of sacreBLEU; the tests check that it agrees) recognises the
usual mistakes: spaces kept, beta = 1, matches not clipped, the mean of per-order F-scores instead of the
F-score of the mean precision and recall, all six orders averaged where a string is too short for some, and a
score between 0 and 1.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ._feedback import ExerciseError, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_sentence_chrf", "chrf_hints"]

# (hypothesis, reference): a perfect match, wrong endings, repeated words (clipping), a hypothesis too short for
# the higher orders, different word order, nothing in common, and a reference shorter than the hypothesis
_PAIRS = (
    ("How do you like this book?", "How do you like this book?"),
    ("The cats sits on the mats.", "The cat sat on the mat."),
    ("the the the the", "the cat is on the mat"),
    ("Hi!", "Hello there!"),
    ("this book do you like", "do you like this book"),
    ("xyz", "abc"),
    ("There was a lot to do that.", "There was a lot to do."),
)


def _ngrams(text: str, n: int, spaces: bool) -> Counter:
    text = text if spaces else "".join(text.split())
    return Counter(text[i:i + n] for i in range(len(text) - n + 1))


def _chrf(hypothesis: str, reference: str, beta: float = 2.0, spaces: bool = False, clip: bool = True,
          mean_of_f: bool = False, all_orders: bool = False, scale: float = 100.0, order: int = 6) -> float:
    """Sentence chrF; the defaults are sacreBLEU's, each keyword one of the mistakes the check recognises."""
    precisions, recalls, f_scores = [], [], []
    for n in range(1, order + 1):
        hyp, ref = _ngrams(hypothesis, n, spaces), _ngrams(reference, n, spaces)
        n_hyp, n_ref = sum(hyp.values()), sum(ref.values())
        if clip:
            match = sum(min(count, ref[gram]) for gram, count in hyp.items())
        else:
            match = sum(count for gram, count in hyp.items() if gram in ref)
        precision = match / n_hyp if n_hyp else 0.0
        recall = match / n_ref if n_ref else 0.0
        denominator = beta ** 2 * precision + recall
        f_scores.append((1 + beta ** 2) * precision * recall / denominator if denominator else 0.0)
        if (n_hyp and n_ref) or all_orders:
            precisions.append(precision)
            recalls.append(recall)
    if mean_of_f:
        return scale * float(np.mean(f_scores))
    if not precisions:
        return 0.0
    p, r = float(np.mean(precisions)), float(np.mean(recalls))
    return scale * (1 + beta ** 2) * p * r / (beta ** 2 * p + r) if p + r else 0.0


def _table(**options) -> np.ndarray:
    return np.array([_chrf(h, r, **options) for h, r in _PAIRS])


def chrf_hints() -> list[tuple[np.ndarray, str]]:
    """(wrong answer table, explanation) pairs for `check_sentence_chrf` (also used by the tests)."""
    return [
        (_table(spaces=True),
         "you kept the spaces. sacreBLEU's chrF removes them before it cuts the character n-grams (its signature "
         "says space:no), so 'a cat' gives the bigrams 'ac', 'ca', 'at'."),
        (_table(beta=1.0),
         "your F-score weighs precision and recall equally (beta = 1). chrF uses beta = 2, which weighs recall "
         "twice as much: 100 * 5 * prec * rec / (4 * prec + rec)."),
        (_table(clip=False),
         "your matches are not clipped: an n-gram of the hypothesis matches at most as often as it occurs in the "
         "reference (sum min(count in hypothesis, count in reference)), so 'the the the' does not get three "
         "matches for one 'the'."),
        (_table(mean_of_f=True),
         "you averaged one F-score per order. sacreBLEU averages the precisions and the recalls over the orders "
         "first, then takes one F-score of the two means."),
        (_table(all_orders=True),
         "you averaged over all six orders, also those where a string is too short to have any n-gram of that "
         "length. Average only over the orders where both strings have n-grams."),
        (_table(scale=1.0),
         "your score is between 0 and 1; sacreBLEU reports chrF between 0 and 100 (multiply by 100)."),
        (_table(order=4),
         "you used character n-grams of orders 1 to 4; chrF uses 1 to 6 (its signature says nc:6)."),
    ]


def _expected() -> np.ndarray:
    from sacrebleu.metrics import CHRF
    metric = CHRF()                                   # sacreBLEU's defaults, as `sentence_chrf` uses
    return np.array([metric.sentence_score(h, [r]).score for h, r in _PAIRS])


@exercise_check
def check_sentence_chrf(fn) -> None:
    """fn(hypothesis, reference) -> chrF of one sentence pair, 0 to 100, checked against sacreBLEU."""
    got = []
    for hypothesis, reference in _PAIRS:
        try:
            score = call_learner(fn, hypothesis, reference)
        except ExerciseError as err:
            if isinstance(err.__cause__, ZeroDivisionError):
                raise ExerciseError(f"your function divided by zero on ({hypothesis!r}, {reference!r}) "
                                    f"({err.__cause__}). A string can be too short for an order (\"Hi\" has no "
                                    "n-gram of 3 characters): skip such orders, and return 0 when precision "
                                    "and recall are both 0.") from err.__cause__
            raise
        try:
            got.append(float(score))
        except (TypeError, ValueError) as err:
            raise ExerciseError(f"fn(hypothesis, reference) should return one number; for ({hypothesis!r}, "
                                f"{reference!r}) it returned {score!r}") from err
    pairs = "; ".join(f"{h!r} vs {r!r}" for h, r in _PAIRS)
    compare_arrays(np.array(got), _expected(), f"your chrF scores (one per pair: {pairs})", atol=1e-6, rtol=0.0,
                   hints=chrf_hints())
    passed(f"your chrF equals sacreBLEU's on all {len(_PAIRS)} pairs, e.g. {got[1]:.2f} for "
           f"{_PAIRS[1][0]!r} against {_PAIRS[1][1]!r}.")
