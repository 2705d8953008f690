"""Decoding: the cache changes nothing but speed, beam 1 is greedy, beam search beats greedy where it should;
sampling draws from the distribution it says (temperature, top-k, top-p), never <pad> or <bos>, and top-k = 1 is
greedy."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch_helpers import SMALL, lively_model, random_batch, trained_model, with_kernel

from transformer_course.torch.decoder import DecoderCache
from transformer_course.torch.decoding import beam_search, greedy_decode, length_penalty, sample_decode, sampling_probs

EOS = 2


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("fused", [True, False])
def test_cached_and_uncached_greedy_give_identical_tokens(norm_first, fused):
    model = with_kernel(trained_model(norm_first), fused)
    src, _ = random_batch(B=5, S=8)
    cached = greedy_decode(model, src, max_len=12)
    uncached = greedy_decode(model, src, max_len=12, use_cache=False)
    assert torch.equal(cached, uncached)
    assert len(set(cached.flatten().tolist())) > 3      # the test model does not just repeat one token


@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "alibi"])
def test_cached_logits_equal_full_decoder_logits_including_multi_token_steps(positional):
    """RoPE rotates each new key at its own position before it joins the cache; ALiBi's bias starts at the
    first new query's position."""
    model = lively_model(SMALL.replace(positional=positional))
    src, tgt = random_batch(B=3, S=7, T=6)
    tgt[:, :] = tgt[0]                                   # no target padding: a cache never holds padding
    src_mask = model.make_src_mask(src)
    memory = model.encode(src, src_mask)
    full = model.decode(tgt, memory, src_mask)
    cache = model.new_cache()
    first = model.decode(tgt[:, :4], memory, src_mask, cache=cache)   # several positions at once
    rest = [model.decode(tgt[:, t:t + 1], memory, src_mask, cache=cache) for t in range(4, 6)]
    torch.testing.assert_close(torch.cat([first] + rest, 1), full, atol=1e-5, rtol=1e-5)
    assert isinstance(cache, DecoderCache) and cache.length == 6
    model.train()
    with pytest.raises(ValueError, match="cache: decoding with a key/value cache needs eval mode"):
        model.decode(tgt[:, :1], memory, src_mask, cache=model.new_cache())
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
    model = with_kernel(trained_model(True), fused)
    src, _ = random_batch(B=4, S=6, seed=3)
    a, score_a = beam_search(model, src, beam_size=3, max_len=10, return_scores=True)
    b, score_b = beam_search(model, src, beam_size=3, max_len=10, use_cache=False, return_scores=True)
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

    def decode(self, tgt_in, memory, src_mask=None, tgt_mask=None, cache=None):
        if cache is not None:
            cache.prefix = tgt_in if cache.prefix is None else torch.cat([cache.prefix, tgt_in], 1)
            cache.length += tgt_in.shape[1]
        return torch.stack([self._next_logp(tgt_in[:, t]) for t in range(tgt_in.shape[1])], 1)


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


# -- sampling ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("use_cache", [True, False])
def test_top_k_one_sampling_equals_greedy(use_cache):
    model = trained_model()
    src, _ = random_batch(B=5, S=8)
    greedy = greedy_decode(model, src, max_len=12)
    for temperature in (0.5, 1.0, 3.0):                  # one token left: the temperature cannot matter
        sampled = sample_decode(model, src, temperature=temperature, top_k=1, max_len=12, use_cache=use_cache,
                                generator=torch.Generator().manual_seed(7))
        assert torch.equal(sampled, greedy)


def test_sampling_is_reproducible_with_a_generator_and_the_cache_changes_nothing():
    model = trained_model()
    src, _ = random_batch(B=6, S=8)
    runs = [sample_decode(model, src, temperature=2.0, max_len=12, use_cache=use_cache,
                          generator=torch.Generator().manual_seed(3)) for use_cache in (True, True, False)]
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])
    other = sample_decode(model, src, temperature=2.0, max_len=12, generator=torch.Generator().manual_seed(4))
    assert not torch.equal(runs[0], other)               # a hot temperature: another seed, other draws
    for row in runs[0].tolist():                         # finished rows are padded, as in greedy decoding
        if EOS in row:
            assert all(t == SMALL.pad_id for t in row[row.index(EOS) + 1:])


def test_sampling_probs_temperature_and_top_k():
    logits = torch.randn(4, 11, generator=torch.Generator().manual_seed(0))   # (B, V)
    torch.testing.assert_close(sampling_probs(logits), torch.softmax(logits, -1))
    torch.testing.assert_close(sampling_probs(logits, temperature=0.5), torch.softmax(2 * logits, -1))
    probs = sampling_probs(logits, top_k=3)              # (B, V)
    assert ((probs > 0).sum(-1) == 3).all()
    top3 = logits.topk(3, -1).indices                    # (B, 3)
    expected = torch.zeros_like(logits).scatter(-1, top3, torch.softmax(logits.gather(-1, top3), -1))
    torch.testing.assert_close(probs, expected)


@pytest.mark.parametrize("top_p", [0.05, 0.3, 0.5, 0.9, 0.999, 1.0])
def test_top_p_keeps_the_smallest_set_of_most_probable_tokens_with_mass_at_least_p(top_p):
    logits = 2 * torch.randn(8, 13, generator=torch.Generator().manual_seed(1))   # (B, V)
    full = torch.softmax(logits, -1)
    probs = sampling_probs(logits, top_p=top_p)
    for b in range(8):
        kept = (probs[b] > 0).nonzero()[:, 0].tolist()
        ranked = full[b].argsort(descending=True).tolist()
        n = len(kept)
        assert sorted(kept) == sorted(ranked[:n])        # the n most probable tokens
        assert full[b, ranked[:n]].sum() >= top_p - 1e-6  # reach p ...
        assert full[b, ranked[:n - 1]].sum() < top_p      # ... and one fewer does not
        torch.testing.assert_close(probs[b, kept], full[b, kept] / full[b, kept].sum())


def test_sampled_frequencies_match_the_distribution():
    """The scripted model: after BOS, A (0.6) or B (0.4); after A one of ten tokens (0.1 each); after B EOS (0.99)
    or token 7. Every two-token outcome must appear with its probability, within 4.5 standard errors."""
    model = _ScriptedModel()
    n = 20000
    src = torch.full((n, 3), 4)
    generator = torch.Generator().manual_seed(0)
    for temperature in (1.0, 2.0):
        tokens = sample_decode(model, src, temperature=temperature, max_len=2, generator=generator)   # (n, 2)
        first = sampling_probs(model._next_logp(torch.tensor([1])), temperature, exclude=(0, 1))[0]   # (V,)
        counts = {}
        for a, b in tokens.tolist():
            counts[a, b] = counts.get((a, b), 0) + 1
        expected = {}
        for a in (5, 6):
            second = sampling_probs(model._next_logp(torch.tensor([a])), temperature, exclude=(0, 1))[0]
            for b in second.nonzero()[:, 0].tolist():
                expected[a, b] = (first[a] * second[b]).item()
        assert set(counts) <= set(expected)
        for outcome, p in expected.items():
            tolerance = 4.5 * math.sqrt(p * (1 - p) / n)
            assert abs(counts.get(outcome, 0) / n - p) <= tolerance, (temperature, outcome)


class _SpecialsModel(_ScriptedModel):
    """After any prefix: <pad> 0.3, <bos> 0.2, <unk> 0.1, EOS 0.2, token 5 0.2."""

    def _next_logp(self, last):
        logp = torch.full((last.shape[0], 16), -30.0)
        for token, p in {0: 0.3, 1: 0.2, 3: 0.1, EOS: 0.2, 5: 0.2}.items():
            logp[:, token] = math.log(p)
        return logp


@pytest.mark.parametrize("use_cache", [True, False])
def test_sampling_never_draws_pad_or_bos_and_renormalises_the_rest(use_cache):
    """<pad> and <bos> (half the probability here) are never drawn; <unk>, EOS and token 5 keep their shares of
    the rest: 0.2, 0.4, 0.4 (within 4.5 standard errors)."""
    model = _SpecialsModel()
    n = 20000
    tokens = sample_decode(model, torch.full((n, 3), 4), max_len=1, use_cache=use_cache,
                           generator=torch.Generator().manual_seed(0))[:, 0]   # (n,)
    counts = torch.bincount(tokens, minlength=16)
    assert counts[0] == counts[1] == 0
    for token, p in {3: 0.2, EOS: 0.4, 5: 0.4}.items():
        assert abs(counts[token].item() / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n), token
    longer = sample_decode(model, torch.full((200, 3), 4), max_len=10, generator=torch.Generator().manual_seed(1))
    for row in longer.tolist():                          # <pad> only after the EOS, <bos> never
        body = row[: row.index(EOS)] if EOS in row else row
        assert 0 not in body and 1 not in row
    hot = sample_decode(model, torch.full((50, 3), 4), temperature=5.0, top_p=1.0, max_len=10,
                        generator=torch.Generator().manual_seed(2))
    assert 1 not in hot.tolist() and all(0 not in (r[: r.index(EOS)] if EOS in r else r) for r in hot.tolist())


def test_sampling_probs_exclude():
    logits = torch.randn(4, 11, generator=torch.Generator().manual_seed(0))   # (B, V)
    probs = sampling_probs(logits, exclude=(0, 1))
    expected = torch.softmax(logits[:, 2:], -1)          # the rest, renormalised
    torch.testing.assert_close(probs[:, 2:], expected)
    assert (probs[:, :2] == 0).all()
    torch.testing.assert_close(sampling_probs(logits, exclude=()), torch.softmax(logits, -1))
    top2 = sampling_probs(logits, top_k=2, exclude=(0, 1))   # top-k among the tokens left
    assert ((top2 > 0).sum(-1) == 2).all() and (top2[:, :2] == 0).all()
    with pytest.raises(ValueError, match=r"exclude: expected an int in \[0, 10\]"):
        sampling_probs(logits, exclude=(11,))
    with pytest.raises(ValueError, match=r"exclude: expected to leave at least one of the 11 tokens"):
        sampling_probs(logits, exclude=range(11))


def test_sampling_bad_input():
    model = trained_model()
    src, _ = random_batch(B=2, S=5)
    V = SMALL.tgt_vocab_size
    cases = [
        (dict(temperature=0), ValueError, r"temperature: expected a number > 0, got 0 .*use greedy_decode"),
        (dict(temperature=-1.0), ValueError, r"temperature: expected a finite number > 0, got -1.0"),
        (dict(temperature=math.inf), ValueError, r"temperature: expected a finite number > 0, got inf"),
        (dict(temperature=math.nan), TypeError, r"temperature: expected a number > 0, got nan"),
        (dict(temperature="hot"), TypeError, r"temperature: expected a number > 0, got 'hot'"),
        (dict(top_k=0), ValueError, rf"top_k: expected an int in \[1, {V}\]"),
        (dict(top_k=V + 1), ValueError, rf"top_k: expected an int in \[1, {V}\] .*, got {V + 1}"),
        (dict(top_k=2.5), TypeError, r"top_k: expected an int"),
        (dict(top_p=0.0), ValueError, r"top_p: expected a number in \(0, 1\] or None, got 0.0"),
        (dict(top_p=1.5), ValueError, r"top_p: expected a number in \(0, 1\] or None, got 1.5"),
        (dict(top_p="0.9"), TypeError, r"top_p: expected a number in \(0, 1\] or None, got str"),
        (dict(generator=7), TypeError, r"generator: expected a torch.Generator or None, got int"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            sample_decode(model, src, **kwargs)
    with pytest.raises(ValueError, match=r"logits: expected a tensor of shape \(..., V\)"):
        sampling_probs(torch.tensor(1.0))
