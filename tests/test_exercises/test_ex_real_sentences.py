"""Chapter 10's check accepts a right chrF and gives the right hint for each common mistake."""
from collections import Counter

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.real_sentences import _chrf, _expected, _table, check_sentence_chrf, chrf_hints


def good_chrf(hypothesis, reference):
    hypothesis, reference = "".join(hypothesis.split()), "".join(reference.split())
    precisions, recalls = [], []
    for n in range(1, 7):
        hyp = Counter(hypothesis[i:i + n] for i in range(len(hypothesis) - n + 1))
        ref = Counter(reference[i:i + n] for i in range(len(reference) - n + 1))
        if not hyp or not ref:
            continue
        match = sum((hyp & ref).values())
        precisions.append(match / sum(hyp.values()))
        recalls.append(match / sum(ref.values()))
    if not precisions:
        return 0.0
    p, r = np.mean(precisions), np.mean(recalls)
    return 100 * 5 * p * r / (4 * p + r) if p + r else 0.0


def test_reference_agrees_with_sacrebleu():
    np.testing.assert_allclose(_table(), _expected(), atol=1e-9)
    sacrebleu = pytest.importorskip("sacrebleu")
    assert _chrf("Das ist gut.", "Das ist sehr gut.") == pytest.approx(
        sacrebleu.sentence_chrf("Das ist gut.", ["Das ist sehr gut."]).score)


def test_right_answer_passes(capsys):
    assert check_sentence_chrf(good_chrf) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_not_attempted(capsys):
    def stub(hypothesis, reference):
        raise NotImplementedError
    assert check_sentence_chrf(stub) is False
    assert "not attempted" in capsys.readouterr().out


def test_every_hint_differs_from_the_answer_and_from_the_others():
    expected = _expected()
    tables = [wrong for wrong, _ in chrf_hints()]
    for i, wrong in enumerate(tables):
        assert not np.allclose(wrong, expected, atol=1e-6)
        assert not any(np.allclose(wrong, other, atol=1e-6) for other in tables[i + 1:])


@pytest.mark.parametrize("options, words", [
    (dict(spaces=True), "kept the spaces"),
    (dict(beta=1.0), "beta = 1"),
    (dict(clip=False), "not clipped"),
    (dict(mean_of_f=True), "one F-score per order"),
    (dict(all_orders=True), "all six orders"),
    (dict(scale=1.0), "between 0 and 1"),
    (dict(order=4), "orders 1 to 4"),
])
def test_hints(options, words):
    with pytest.raises(ExerciseError) as err:
        check_sentence_chrf(lambda h, r: _chrf(h, r, **options))
    assert words in str(err.value)


def test_division_by_zero_is_explained():
    def careless(hypothesis, reference):
        hypothesis, reference = "".join(hypothesis.split()), "".join(reference.split())
        precisions = []
        for n in range(1, 7):
            hyp = Counter(hypothesis[i:i + n] for i in range(len(hypothesis) - n + 1))
            ref = Counter(reference[i:i + n] for i in range(len(reference) - n + 1))
            precisions.append(sum((hyp & ref).values()) / sum(hyp.values()))
        return 100 * float(np.mean(precisions))
    with pytest.raises(ExerciseError, match="too short"):
        check_sentence_chrf(careless)


def test_a_result_that_is_not_a_number_is_named():
    with pytest.raises(ExerciseError, match="one number"):
        check_sentence_chrf(lambda h, r: [h, r])
