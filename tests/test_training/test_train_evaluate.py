"""Metrics: exact match (overall, by stratum, coverage), token accuracy, perplexity, BLEU and chrF with their
signatures; evaluate(), evaluate_task() and translate()."""
import dataclasses
import math

import pytest
import torch

from transformer_course.data.loader import make_dataloader
from transformer_course.data.vocab import EOS_ID, PAD_ID
from transformer_course.training.evaluate import (
    corpus_bleu,
    corpus_chrf,
    evaluate,
    evaluate_pairs,
    evaluate_task,
    exact_match,
    exact_match_by_stratum,
    perplexity,
    token_accuracy,
    translate,
)


def test_exact_match():
    assert exact_match(["a b", "c"], ["a b", "d"]) == 0.5
    assert exact_match([[5, 6, EOS_ID, 7]], [[5, 6, EOS_ID, PAD_ID]]) == 1.0     # ids compared up to eos
    with pytest.raises(ValueError, match="hypotheses"):
        exact_match(["a"], ["a", "b"])


def test_token_accuracy_ignores_padding():
    logits = torch.zeros(1, 3, 5)
    logits[0, 0, 4] = logits[0, 1, 2] = logits[0, 2, 1] = 1.0
    assert token_accuracy(logits, torch.tensor([[4, 3, PAD_ID]])) == (1, 2)


def test_perplexity_and_bleu():
    assert perplexity(math.log(7.0)) == pytest.approx(7.0)
    assert perplexity(1e6) == float("inf")
    score, signature = corpus_bleu(["le chat dort ici"], ["le chat dort ici"])
    assert score == pytest.approx(100.0) and signature.startswith("nrefs:1|") and "version:" in signature


def test_evaluate_and_translate(make_model, toy):
    data, sv, tv = toy
    model = make_model()
    loader = make_dataloader(data.val, sv, tv, batch_size=5, shuffle=False)
    metrics = evaluate(model, loader, tv, generate=True)
    assert metrics["perplexity"] == pytest.approx(math.exp(metrics["loss"]))
    assert 0 <= metrics["token_accuracy"] <= 1 and 0 <= metrics["exact_match"] <= 1
    assert metrics["n_sentences"] == len(data.val) and len(metrics["hypotheses"]) == len(data.val)
    assert "bleu" in metrics and metrics["bleu_signature"]
    by_pairs = evaluate_pairs(model, data.val, sv, tv)
    assert by_pairs["hypotheses_text"] == translate(model, [s for s, _ in data.val], sv, tv)
    with pytest.raises(TypeError, match="sentences"):
        translate(model, "abc", sv, tv)


def test_chrf_gives_partial_credit_where_bleu_gives_none():
    score, signature = corpus_chrf(["siebenundneunzig"], ["siebenundneunzig"])
    assert score == pytest.approx(100.0) and signature.startswith("nrefs:1|") and "nc:6" in signature
    near_chrf, _ = corpus_chrf(["siebenundneunzig"], ["siebenundachtzig"])
    near_bleu, _ = corpus_bleu(["siebenundneunzig"], ["siebenundachtzig"])
    assert near_bleu == 0.0 and 30 < near_chrf < 100     # one wrong word: BLEU sees nothing right


def test_exact_match_by_stratum_counted_by_hand():
    labels = ["3 digits"] * 20 + ["4 digits"] * 25 + ["5 digits"] * 5
    refs = [f"r{i}" for i in range(50)]
    hyps = list(refs)
    for i in (0, 1, 20):                                  # two misses among the 3-digit, one among the 4-digit
        hyps[i] = "wrong"
    table = exact_match_by_stratum(hyps, refs, labels)
    assert list(table) == ["3 digits", "4 digits"]        # 5 pairs are too few to report on their own
    assert table["3 digits"] == {"exact_match": 18 / 20, "n": 20}
    assert table["4 digits"] == {"exact_match": 24 / 25, "n": 25}
    with pytest.raises(ValueError, match="labels: expected one per hypothesis"):
        exact_match_by_stratum(hyps, refs, labels[:-1])


def test_evaluate_task_reports_strata_lag_and_coverage(make_model, toy):
    data, sv, tv = toy
    model = make_model()
    test = data.val[:16]
    labels = ["short"] * 8 + ["long"] * 8
    task = dataclasses.replace(data, test=test, strata={"test": labels}, coverage=data.train[:6])
    metrics = evaluate_task(model, task, sv, tv, "test")
    outputs = translate(model, [s for s, _ in test], sv, tv)
    assert metrics["hypotheses_text"] == outputs
    hits = [o == t for o, (_, t) in zip(outputs, test)]
    assert metrics["strata"] == {}                        # 8 pairs each: below MIN_STRATUM
    by_hand = exact_match_by_stratum(outputs, [t for _, t in test], labels, min_size=8)
    assert by_hand["short"]["exact_match"] == sum(hits[:8]) / 8
    cover = translate(model, [s for s, _ in data.train[:6]], sv, tv)
    misses = [(s, o, t) for (s, t), o in zip(data.train[:6], cover) if o != t]
    assert metrics["coverage"] == 1 - len(misses) / 6 and metrics["coverage_errors"] == misses
    assert metrics["lagging"] == []
    with pytest.raises(ValueError, match=r"split: the test split of .* is empty"):
        evaluate_task(model, dataclasses.replace(task, test=[]), sv, tv, "test")
