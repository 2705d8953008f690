"""Chapter 8's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.decoder import (
    check_beam_score,
    check_greedy_decode,
    check_top_p_filter,
    toy_next_logits,
)


# ---------------------------------------------------------------------------------------- greedy decoding
def good_greedy(next_logits, bos_id, eos_id, max_len):
    prefix = [bos_id]
    for _ in range(max_len):
        token = int(np.argmax(next_logits(prefix)))
        prefix.append(token)
        if token == eos_id:
            break
    return prefix[1:]


def test_greedy_reference_passes(capsys):
    assert check_greedy_decode(good_greedy) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_greedy_numpy_array_answer_is_accepted():
    assert check_greedy_decode(lambda *a: np.array(good_greedy(*a))) is True


def test_greedy_stub_is_not_attempted(capsys):
    def stub(next_logits, bos_id, eos_id, max_len):
        raise NotImplementedError

    assert check_greedy_decode(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def test_toy_model_is_deterministic_and_stops():
    assert np.array_equal(toy_next_logits([1, 3]), toy_next_logits([1, 3]))
    out = good_greedy(toy_next_logits, 1, 2, 10)
    assert out[-1] == 2 and len(out) == 5 and len(set(out[:-1])) > 1


def with_bos(f, b, e, m):
    return [b] + good_greedy(f, b, e, m)


def drop_eos(f, b, e, m):
    out = good_greedy(f, b, e, m)
    return out[:-1] if out[-1] == e else out


def no_stop(f, b, e, m):
    prefix = [b]
    for _ in range(m):
        prefix.append(int(np.argmax(f(prefix))))
    return prefix[1:]


def one_more(f, b, e, m):
    return good_greedy(f, b, e, m + 1)


def one_less(f, b, e, m):
    return good_greedy(f, b, e, m - 1)


def only_last(f, b, e, m):
    prefix = [b]
    for _ in range(m):
        token = int(np.argmax(f(prefix[-1:] if len(prefix) == 1 else [b, prefix[-1]])))
        prefix.append(token)
        if token == e:
            break
    return prefix[1:]


def argmin(f, b, e, m):
    prefix = [b]
    for _ in range(m):
        logits = f(prefix)
        token = int(np.argmin(np.where(np.isfinite(logits), logits, np.inf)))
        prefix.append(token)
        if token == e:
            break
    return prefix[1:]


@pytest.mark.parametrize("fn, hint", [
    (with_bos, "BOS"), (drop_eos, "EOS token was dropped"), (no_stop, "did not stop"),
    (one_more, "too many"), (one_less, "too few"), (only_last, "WHOLE prefix"), (argmin, "arg MAX"),
    (lambda f, b, e, m: None, "return"), (lambda f, b, e, m: [3, 3, 2], "first differ"),
])
def test_greedy_mistakes_get_specific_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_greedy_decode(fn)


# ---------------------------------------------------------------------------------------- length penalty
def good_score(log_prob, length, alpha):
    return log_prob / ((5 + length) / 6) ** alpha


def test_beam_score_reference_passes(capsys):
    assert check_beam_score(good_score) is True
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda lp, n, a: lp * ((5 + n) / 6) ** a, "multiplied"),
    (lambda lp, n, a: lp / ((5 + n) / 6), "exponent alpha is missing"),
    (lambda lp, n, a: lp / n ** a, r"\|Y\| \*\* alpha"),
    (lambda lp, n, a: lp / (5 + n) ** a / 6, "brackets"),
    (lambda lp, n, a: np.exp(lp) / ((5 + n) / 6) ** a, "LOG probability"),
    (lambda lp, n, a: lp, "values differ"),
])
def test_beam_score_mistakes_get_specific_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_beam_score(fn)


# ---------------------------------------------------------------------------------------- top-p filter
def good_top_p(probs, p):
    order = np.argsort(-probs)
    total, keep = 0.0, []
    for token in order:                                  # most probable first, until the total reaches p
        keep.append(token)
        total += probs[token]
        if total >= p:
            break
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out


def test_top_p_reference_passes(capsys):
    assert check_top_p_filter(good_top_p) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_top_p_stub_is_not_attempted(capsys):
    def stub(probs, p):
        raise NotImplementedError

    assert check_top_p_filter(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def one_short(probs, p):
    order = np.argsort(-probs)
    keep = order[np.cumsum(probs[order]) < p]
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out


def strict(probs, p):
    order = np.argsort(-probs)
    keep = order[np.cumsum(probs[order]) - probs[order] <= p]
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out


def not_renormalised(probs, p):
    out = good_top_p(probs, p)
    return np.where(out > 0, probs, 0.0)


def least_probable_first(probs, p):
    order = np.argsort(probs)                            # ascending: the least probable tokens first
    keep = order[np.cumsum(probs[order]) - probs[order] < p]
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out


@pytest.mark.parametrize("answer, hint", [
    (one_short, "stops one token early"),
    (strict, "stop as soon as the total reaches p"),
    (not_renormalised, "not renormalised"),
    (least_probable_first, "LEAST probable"),
    (lambda probs, p: None, "returned None"),
])
def test_top_p_mistakes_get_their_hint(answer, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_top_p_filter(answer)
