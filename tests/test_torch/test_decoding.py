"""Decoding: the cache changes nothing but speed, beam 1 is greedy, beam search beats greedy where it should."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_course.torch.attention import set_fused_attention
from transformer_course.torch.decoder import DecoderCache
from transformer_course.torch.decoding import beam_search, greedy_decode, length_penalty
from torch_helpers import SMALL, lively_model, random_batch, trained_model

EOS = 2


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("fused", [True, False])
def test_cached_and_uncached_greedy_give_identical_tokens(norm_first, fused):
    model = set_fused_attention(trained_model(norm_first), fused)
    src, _ = random_batch(B=5, S=8)
    cached = greedy_decode(model, src, max_len=12)
    uncached = greedy_decode(model, src, max_len=12, use_cache=False)
    set_fused_attention(model, True)
    assert torch.equal(cached, uncached)
    assert len(set(cached.flatten().tolist())) > 3      # the test model does not just repeat one token


def test_cached_logits_equal_full_decoder_logits_including_multi_token_steps():
    model = lively_model()
    src, tgt = random_batch(B=3, S=7, T=6)
    tgt[:, :] = tgt[0]                                   # no target padding: a cache never holds padding
    src_mask = model.make_src_mask(src)
    memory = model.encode(src, src_mask)
    full = model.decode(tgt, memory, src_mask)
    cache = model.new_cache()
    first = model.decode_cached(tgt[:, :4], memory, cache, src_mask)   # several positions at once
    rest = [model.decode_cached(tgt[:, t:t + 1], memory, cache, src_mask) for t in range(4, 6)]
    torch.testing.assert_close(torch.cat([first] + rest, 1), full, atol=1e-5, rtol=1e-5)
    assert isinstance(cache, DecoderCache) and cache.length == 6
    model.train()
    with pytest.raises(ValueError, match="decode_cached: expected a model in eval mode"):
        model.decode_cached(tgt[:, :1], memory, model.new_cache(), src_mask)
    model.eval()


def test_greedy_output_format():
    model = trained_model()
    src, _ = random_batch(B=6, S=8)
    out = greedy_decode(model, src, max_len=20, eos_id=EOS)
    assert out.shape[0] == 6 and out.shape[1] <= 20
    for row in out.tolist():                             # after an EOS only padding follows
        if EOS in row:
            assert all(t == SMALL.pad_id for t in row[row.index(EOS) + 1:])
    assert EOS in out.flatten().tolist()
    model.train()
    greedy_decode(model, src, max_len=3)
    assert model.training is True                        # the mode is restored
    model.eval()


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_beam_size_one_equals_greedy(alpha):
    model = trained_model()
    src, _ = random_batch(B=6, S=8, seed=2)
    greedy = greedy_decode(model, src, max_len=15)
    beam = beam_search(model, src, beam_size=1, alpha=alpha, max_len=15)
    assert torch.equal(beam, greedy)


@pytest.mark.parametrize("fused", [True, False])
def test_beam_search_cached_and_uncached_agree(fused):
    model = set_fused_attention(trained_model(True), fused)
    src, _ = random_batch(B=4, S=6, seed=3)
    a, score_a = beam_search(model, src, beam_size=3, max_len=10, return_scores=True)
    b, score_b = beam_search(model, src, beam_size=3, max_len=10, use_cache=False, return_scores=True)
    set_fused_attention(model, True)
    assert torch.equal(a, b)
    torch.testing.assert_close(score_a, score_b, atol=1e-4, rtol=1e-4)


def test_beam_search_scores_are_length_normalised_log_probabilities():
    model = trained_model()
    src, _ = random_batch(B=3, S=6, seed=4)
    tokens, scores = beam_search(model, src, beam_size=4, alpha=0.6, max_len=10, return_scores=True)
    for b in range(3):                                   # rescore the returned sequence with the model
        row = tokens[b].tolist()
        row = row[: row.index(EOS) + 1] if EOS in row else row
        tgt_in = torch.tensor([[1] + row[:-1]])
        logp = torch.log_softmax(model(src[b:b + 1], tgt_in), -1)[0]
        total = sum(logp[t, tok].item() for t, tok in enumerate(row))
        assert math.isclose(scores[b].item(), total / length_penalty(len(row), 0.6), rel_tol=1e-4, abs_tol=1e-4)


class _ScriptedModel(nn.Module):
    """A fake decoder whose next-token distribution depends on the prefix only, built so that greedy
    decoding is myopic: 'A' (p=0.6) is followed by ten equally likely tokens, 'B' (p=0.4) by EOS (p=0.99).
    Greedy finds A x (p <= 0.06); beam search finds B EOS (p = 0.396)."""

    class _Cache:
        def __init__(self):
            self.length, self.prefix = 0, None

        def reorder(self, index, include_static=False):
            self.prefix = self.prefix.index_select(0, index)

    def __init__(self):
        super().__init__()
        self.config = SMALL.replace(tgt_vocab_size=16)

    def make_src_mask(self, src):
        return (src != 0)[:, None, :]

    def encode(self, src, src_mask=None):
        return torch.zeros(src.shape[0], src.shape[1], 4)

    def new_cache(self):
        return self._Cache()

    def _next_logp(self, last):
        A, Bt = 5, 6
        logp = torch.full((last.shape[0], 16), -30.0)
        after_bos, after_a, after_b = last == 1, last == A, last == Bt
        logp[after_bos, A], logp[after_bos, Bt] = math.log(0.6), math.log(0.4)
        logp[after_a, 6:16] = math.log(0.1)
        logp[after_b, EOS], logp[after_b, 7] = math.log(0.99), math.log(0.01)
        other = ~(after_bos | after_a | after_b)
        logp[other, EOS] = 0.0
        return logp

    def decode(self, tgt_in, memory, src_mask=None, tgt_mask=None):
        return torch.stack([self._next_logp(tgt_in[:, t]) for t in range(tgt_in.shape[1])], 1)

    def decode_cached(self, tgt_in, memory, cache, src_mask=None):
        cache.prefix = tgt_in if cache.prefix is None else torch.cat([cache.prefix, tgt_in], 1)
        cache.length += tgt_in.shape[1]
        return self.decode(tgt_in, memory, src_mask)


@pytest.mark.parametrize("use_cache", [True, False])
def test_beam_search_finds_a_higher_scoring_output_than_greedy(use_cache):
    model = _ScriptedModel()
    src = torch.tensor([[4, 4, 4], [4, 4, 0]])
    greedy = greedy_decode(model, src, max_len=6, use_cache=use_cache)
    beam, scores = beam_search(model, src, beam_size=2, alpha=0.0, max_len=6, use_cache=use_cache,
                               return_scores=True)
    assert greedy[:, 0].tolist() == [5, 5]
    assert beam.tolist() == [[6, EOS], [6, EOS]]
    torch.testing.assert_close(scores, torch.full((2,), math.log(0.4 * 0.99)))
    greedy_score = math.log(0.6) + math.log(0.1)         # at best, before its own EOS
    assert scores[0].item() > greedy_score


def test_decoding_errors_and_default_max_len():
    model = lively_model()
    src, _ = random_batch(B=2, S=5)
    with pytest.raises(ValueError, match=r"max_len: expected an int in \[1, 64\] \(at most config.max_len\), got 65"):
        greedy_decode(model, src, max_len=65)
    with pytest.raises(ValueError, match=r"beam_size: expected an int in \[1, 19\] .*, got 0"):
        beam_search(model, src, beam_size=0)
    with torch.no_grad():
        model.tgt_embedding.E[EOS] = 0.0                 # (tied) EOS's logit is 0, below the best of 18 others
    out = greedy_decode(model, src)                      # never stops early: runs to the default length
    assert out.shape == (2, min(5 + 50, SMALL.max_len)) and EOS not in out.flatten().tolist()
