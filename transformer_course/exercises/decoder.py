"""Checks for chapter 8 (the decoder and decoding): greedy decoding, the beam-search length penalty and the
top-p (nucleus) filter of sampling.

The greedy check runs the learner's loop against a small hand-made "model" (a function from a prefix of token
ids to next-token logits), so no trained network is needed, and recognises the usual slips: returning the BOS
token, dropping the EOS token, not stopping at EOS, an off-by-one in the length limit, feeding only the newest
token, picking the least likely token. The length-penalty check recognises a multiplied penalty, a forgotten
exponent and a penalty on the raw length. The top-p check recognises a set that stops one token early (mass
below p), a strict "> p", a missing renormalisation and a set taken from the least probable end.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._feedback import ExerciseError, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_greedy_decode", "check_beam_score", "check_top_p_filter", "toy_next_logits"]

BOS, EOS = 1, 2
_V = 7


def toy_next_logits(prefix, stop_at=4):
    """A deterministic toy language model over 7 ids (0 pad, 1 BOS, 2 EOS, 3..6 words): logits (V,) for the
    token after `prefix` (a list that starts with BOS). EOS wins once the prefix holds `stop_at` tokens."""
    prefix = [int(t) for t in prefix]
    if not prefix or prefix[0] != BOS:
        raise ExerciseError(f"the prefix given to the model must start with the BOS id {BOS}; got {prefix}")
    logits = np.full(_V, -4.0)
    logits[0] = logits[1] = -np.inf                              # never pad, never BOS
    rng = np.random.default_rng(sum((i + 1) * 31 * t for i, t in enumerate(prefix)))
    logits[3:] = rng.normal(size=4)                              # the words
    logits[3 + (prefix[-1] + len(prefix)) % 4] += 2.0             # a clear favourite that depends on the prefix
    logits[EOS] = 5.0 if len(prefix) > stop_at else -1.0
    return logits


def _greedy(next_logits, bos_id, eos_id, max_len, include_bos=False, keep_eos=True, stop=True, extra=0,
            only_last=False, pick=np.argmax):
    prefix = [bos_id]
    out = []
    for _ in range(max_len + extra):
        logits = next_logits([bos_id, prefix[-1]] if only_last and len(prefix) > 1 else prefix)
        token = int(pick(logits))
        prefix.append(token)
        out.append(token)
        if stop and token == eos_id:
            break
    if not keep_eos and out and out[-1] == eos_id:
        out = out[:-1]
    return ([bos_id] if include_bos else []) + out


def _argmin_finite(logits):
    return int(np.argmin(np.where(np.isfinite(logits), logits, np.inf)))


def _token_list(got, name: str) -> list[int]:
    """The learner's answer as a list of ints. Anything else (a batch such as a (1, T) array, nested lists,
    fractional numbers) is feedback that says what was expected, not a TypeError from int() inside the check."""
    if got is None:
        raise ExerciseError(f"{name}(...) returned None: did it forget to `return` the list of tokens?")
    values = got.tolist() if hasattr(got, "tolist") else got
    if isinstance(values, (list, tuple)) and all(
            isinstance(t, numbers.Real) and not isinstance(t, bool) and float(t).is_integer() for t in values):
        return [int(t) for t in values]
    shape = getattr(got, "shape", None)
    what = f"a {type(got).__name__} of shape {tuple(shape)}" if shape is not None else f"{values!r:.80}"
    raise ExerciseError(f"{name}(...) returned {what}; expected a flat list of token ids such as [5, 3, 2] (one "
                        "sequence, not a batch of rows: for a (1, T) array, return tokens[0].tolist()).")


@exercise_check
def check_greedy_decode(fn):
    """Check `fn(next_logits, bos_id, eos_id, max_len) -> list of token ids`.

    `next_logits(prefix)` returns the logits (V,) of the next token after `prefix` (a list starting with BOS).
    The answer excludes BOS, ends with EOS when EOS was produced (and stops there), and has at most max_len
    tokens.
    """
    cases = [("a sequence that ends with EOS", lambda p: toy_next_logits(p, stop_at=4), 10),
             ("a sequence cut off at max_len", lambda p: toy_next_logits(p, stop_at=99), 6)]
    for what, model, max_len in cases:
        got = _token_list(call_learner(fn, model, BOS, EOS, max_len), getattr(fn, "__name__", "your function"))
        expected = _greedy(model, BOS, EOS, max_len)
        if got == expected:
            continue
        hints = [
            (_greedy(model, BOS, EOS, max_len, include_bos=True), "the output starts with the BOS token; BOS "
                                                                  "is the decoder's first INPUT, not part of "
                                                                  "the output: return the tokens after it."),
            (_greedy(model, BOS, EOS, max_len, keep_eos=False), "the EOS token was dropped; keep it as the "
                                                                "last token (it says the sequence is "
                                                                "complete)."),
            (_greedy(model, BOS, EOS, max_len, stop=False), "the loop did not stop at EOS: break as soon as "
                                                            "the chosen token is eos_id."),
            (_greedy(model, BOS, EOS, max_len, extra=1), "one token too many: at most max_len tokens, "
                                                         "EOS included."),
            (_greedy(model, BOS, EOS, max_len, extra=-1), "one token too few: the loop should run up to "
                                                          "max_len times."),
            (_greedy(model, BOS, EOS, max_len, only_last=True), "the model was given only the newest token; "
                                                                "pass the WHOLE prefix (BOS and every token "
                                                                "chosen so far): the decoder attends to all "
                                                                "of it."),
            (_greedy(model, BOS, EOS, max_len, pick=_argmin_finite), "the least likely token was chosen: "
                                                                     "greedy takes the arg MAX of the "
                                                                     "logits."),
        ]
        for wrong, explanation in hints:
            if got == wrong:
                raise ExerciseError(f"on {what}: {explanation}")
        first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
        raise ExerciseError(f"on {what}: got {got}, expected {expected}; they first differ at position "
                            f"{first}. Check that each step appends the arg max of next_logits(prefix) to "
                            "the prefix.")
    passed("greedy decoding feeds the whole prefix, takes the arg max, stops at EOS (kept) or at max_len, and "
           "leaves BOS out of the output.")


def _score(log_prob, length, alpha):
    return log_prob / ((5.0 + length) / 6.0) ** alpha


@exercise_check
def check_beam_score(fn):
    """Check `fn(log_prob, length, alpha)` = log_prob / ((5 + length) / 6) ** alpha (Wu et al. 2016).

    Works on NumPy arrays of log probabilities (negative numbers) and lengths.
    """
    log_prob = np.array([-1.2, -3.5, -0.4, -7.0, -2.2])
    length = np.array([3, 8, 1, 20, 5])
    for alpha in (0.6, 1.0):
        got = call_learner(fn, log_prob, length, alpha)
        expected = _score(log_prob, length, alpha)
        hints = [
            (log_prob * ((5.0 + length) / 6.0) ** alpha, "the penalty was multiplied; DIVIDE the log "
                                                         "probability by lp(Y) = ((5 + |Y|) / 6) ** alpha."),
            (log_prob / ((5.0 + length) / 6.0), "the exponent alpha is missing: lp(Y) = ((5 + |Y|) / 6) ** "
                                                "alpha." if alpha != 1.0 else ""),
            (log_prob / length ** alpha, "this divides by |Y| ** alpha; GNMT's penalty is ((5 + |Y|) / 6) ** "
                                         "alpha, which is gentler for short outputs."),
            (log_prob / (5.0 + length) ** alpha / 6.0, "brackets: the 6 divides 5 + |Y| INSIDE the power: "
                                                       "((5 + |Y|) / 6) ** alpha."),
            (np.exp(log_prob) / ((5.0 + length) / 6.0) ** alpha, "the penalty divides the LOG probability, "
                                                                 "not the probability."),
        ]
        hints = [(w, e) for w, e in hints if e]
        compare_arrays(got, expected, f"your scores (alpha = {alpha})", hints=hints)
    passed("score(Y) = log p(Y) / ((5 + |Y|) / 6) ** alpha; with alpha = 0 it is the plain log probability.")


def _top_p(probs, p, include_crossing=True, strict=False, renormalise=True, descending=True):
    order = np.argsort(-probs if descending else probs, kind="stable")
    mass_before = np.cumsum(probs[order]) - probs[order]
    if include_crossing:
        keep_sorted = mass_before < p if not strict else mass_before <= p
    else:
        keep_sorted = np.cumsum(probs[order]) < p
    keep = np.zeros(probs.shape, dtype=bool)
    keep[order[keep_sorted]] = True
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum() if renormalise else kept


@exercise_check
def check_top_p_filter(fn):
    """Check `fn(probs, p) -> probabilities (V,)`: the smallest set of most probable tokens whose probability
    reaches p (Holtzman et al. 2020), renormalised; every other token gets 0.
    """
    # sixty-fourths add up exactly, so p = 36/64 = 0.5625 ties with the mass of the two most probable tokens
    probs = np.array([7, 20, 5, 16, 12, 3, 1]) / 64.0            # sorted: 20 16 12 7 5 3 1 (sixty-fourths)
    for p in (0.5, 0.5625, 0.74, 0.9, 1.0):
        got = call_learner(fn, probs.copy(), p)
        if got is None:
            raise ExerciseError("your function returned None: did it forget to `return` the probabilities?")
        expected = _top_p(probs, p)
        hints = [
            (_top_p(probs, p, include_crossing=False), "the set stops one token early: its mass is below p. Keep "
                                                       "tokens until their total REACHES p, the token that "
                                                       "crosses p included."),
            (_top_p(probs, p, strict=True), f"with p = {p} the total of the kept tokens equals p exactly, and "
                                            "your set took one more token: the set is the smallest with mass "
                                            ">= p, so stop as soon as the total reaches p."),
            (_top_p(probs, p, renormalise=False), "the kept probabilities were not renormalised: divide them by "
                                                  "their sum so that they add up to 1."),
            (_top_p(probs, p, descending=False), "the set was filled from the LEAST probable tokens; sort the "
                                                 "probabilities in decreasing order first."),
        ]
        compare_arrays(got, expected, f"your filtered probabilities (p = {p})", hints=hints)
    passed("top-p keeps the most probable tokens until their total reaches p and renormalises them; p = 1 keeps "
           "the whole distribution.")
