"""Metrics: exact match, token accuracy, perplexity, BLEU with its signature; evaluate() and translate()."""
import math

import pytest
import torch

from transformer_course.data.loader import make_dataloader
from transformer_course.data.vocab import EOS_ID, PAD_ID
from transformer_course.training.evaluate import (corpus_bleu, evaluate, evaluate_pairs, exact_match, perplexity,
                                                  token_accuracy, translate)


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
