"""Evaluation: teacher-forced loss, perplexity and token accuracy; generated exact match and corpus BLEU.

* token accuracy: the share of target tokens whose argmax prediction is right when the decoder is fed the
  true prefix (teacher forcing) — optimistic, because no mistake ever propagates;
* exact match: the share of sentences generated (greedy or beam) that equal the reference exactly — the
  honest score for the number task;
* perplexity: exp(mean negative log-likelihood per target token), without label smoothing;
* BLEU: sacrebleu's corpus BLEU on detokenised text, reported with its signature (which says how it was
  computed, so numbers can be compared across papers);
* chrF: sacrebleu's character n-gram F-score (Popović 2015), which still means something when a sentence is
  one word (a German number is one word: BLEU scores it all or nothing);
* by stratum: exact match per group of held-out pairs (for numbers: per magnitude), because one overall
  score can hide a group the model gets wrong; and coverage: the share of must-know pairs (the everyday
  numbers, all trained on) that come out right.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from ..data.vocab import Vocab
from ..special_tokens import BOS_ID, EOS_ID, PAD_ID
from ..torch.decoding import beam_search, greedy_decode, sample_decode
from ..torch.device import autocast
from ..torch.loss import cross_entropy
from ..utils import eval_mode

__all__ = ["exact_match", "token_accuracy", "perplexity", "corpus_bleu", "corpus_chrf", "strip_eos",
           "generate_ids", "evaluate", "make_evaluator", "coverage_of", "translate", "evaluate_pairs",
           "exact_match_by_stratum", "evaluate_task", "MIN_STRATUM", "LAG"]

MIN_STRATUM = 20      # a stratum is reported on its own when it holds at least this many pairs
LAG = 0.02            # a stratum lags when its exact match is this far below the overall one
MAX_ERRORS = 50       # the split's misses kept in the metrics (a model card lists them as its known errors)


def strip_eos(ids: Iterable[int]) -> list[int]:
    """Token ids up to (without) the first eos, pads and bos dropped."""
    out = []
    for i in ids:
        i = int(i)
        if i == EOS_ID:
            break
        if i not in (PAD_ID, BOS_ID):
            out.append(i)
    return out


def exact_match(hypotheses: Sequence, references: Sequence) -> float:
    """Share of hypotheses equal to their reference (strings, or id sequences compared up to eos)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses: expected {len(references)} (one per reference), got {len(hypotheses)}")
    if not references:
        raise ValueError("references: expected at least one reference, got none")
    def norm(x):
        return x if isinstance(x, str) else strip_eos(x)
    return sum(norm(h) == norm(r) for h, r in zip(hypotheses, references)) / len(references)


def token_accuracy(logits: torch.Tensor, targets: torch.Tensor, pad_id: int = PAD_ID) -> tuple[int, int]:
    """(correct, counted): argmax predictions equal to the targets, over non-pad positions."""
    keep = targets != pad_id                              # (B, T)
    correct = (logits.argmax(-1) == targets) & keep       # (B, T)
    return int(correct.sum()), int(keep.sum())


def perplexity(mean_nll: float) -> float:
    """exp(mean negative log-likelihood per token); inf rather than an overflow error."""
    return math.exp(mean_nll) if mean_nll < 700 else float("inf")


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """(BLEU score 0-100, sacrebleu signature) of detokenised hypotheses against one reference each."""
    import sacrebleu
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses: expected {len(references)} (one per reference), got {len(hypotheses)}")
    bleu = sacrebleu.BLEU()
    score = bleu.corpus_score(list(hypotheses), [list(references)])
    return float(score.score), str(bleu.get_signature())


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """(chrF score 0-100, sacrebleu signature) of detokenised hypotheses against one reference each."""
    import sacrebleu
    if len(hypotheses) != len(references):
        raise ValueError(f"hypotheses: expected {len(references)} (one per reference), got {len(hypotheses)}")
    chrf = sacrebleu.CHRF()
    score = chrf.corpus_score(list(hypotheses), [list(references)])
    return float(score.score), str(chrf.get_signature())


def exact_match_by_stratum(hypotheses: Sequence[str], references: Sequence[str], labels: Sequence[str],
                           min_size: int = MIN_STRATUM) -> dict[str, dict]:
    """{label: {"exact_match", "n"}} for every stratum with at least `min_size` pairs, in label order."""
    if not len(hypotheses) == len(references) == len(labels):
        raise ValueError(f"labels: expected one per hypothesis ({len(hypotheses)}) and reference "
                         f"({len(references)}), got {len(labels)}")
    groups: dict[str, list[bool]] = {}
    for hyp, ref, label in zip(hypotheses, references, labels):
        groups.setdefault(label, []).append(hyp == ref)
    return {label: {"exact_match": sum(hits) / len(hits), "n": len(hits)}
            for label, hits in sorted(groups.items(), key=lambda item: _natural_key(item[0]))
            if len(hits) >= min_size}


def _natural_key(label: str):
    head = label.split()[0]
    return (0, int(head), label) if head.isdigit() else (1, 0, label)


def _check_vocabularies(model, src_vocab: Vocab | None, tgt_vocab: Vocab | None) -> None:
    """Each vocabulary given must be the one the model was built for (as `train` requires): a larger source
    vocabulary gives ids past the embedding table, and a target vocabulary of another size turns the model's
    ids into other words without an error. Comparing sizes costs nothing; the ids are not scanned."""
    for name, vocab, size in (("src_vocab", src_vocab, model.config.src_vocab_size),
                              ("tgt_vocab", tgt_vocab, model.config.tgt_vocab_size)):
        if vocab is not None and len(vocab) != size:
            raise ValueError(f"{name}: expected the model's vocabulary of {size} tokens (config.{name}_size), got "
                             f"a vocabulary of {len(vocab)} tokens; use the vocabularies saved with the model")


def generate_ids(model, src: torch.Tensor, src_mask: torch.Tensor | None = None, beam_size: int = 1,
                 max_len: int | None = None, sampling: dict | None = None) -> list[list[int]]:
    """Generated ids (without bos/eos/pad) for every row of src (B, S): greedy, beam search if beam_size > 1, or
    sampling if `sampling` holds sample_decode's options (temperature, top_k, top_p, generator)."""
    if sampling is not None:
        if beam_size > 1:
            raise ValueError(f"beam_size: sampling draws one sequence per source; expected beam_size 1, got "
                             f"{beam_size}")
        tokens = sample_decode(model, src, max_len=max_len, src_mask=src_mask, **sampling)  # (B, L)
    elif beam_size > 1:
        tokens = beam_search(model, src, beam_size=beam_size, max_len=max_len, src_mask=src_mask)  # (B, L)
    else:
        tokens = greedy_decode(model, src, max_len=max_len, src_mask=src_mask)  # (B, L)
    return [strip_eos(row) for row in tokens.tolist()]


@torch.no_grad()
def evaluate(model, loader: Iterable, tgt_vocab: Vocab | None = None, *, generate: bool = False,
             beam_size: int = 1, max_len: int | None = None,
             device: str | torch.device | None = None, precision: str = "fp32") -> dict:
    """Metrics of `model` on `loader` (an iterable of `data.loader.Batch`).

    Always: "loss" (mean NLL per target token, no smoothing), "perplexity", "token_accuracy", "n_tokens",
    "n_sentences". With `generate`: "exact_match" and "hypotheses" (id lists, in dataset order); with a
    `tgt_vocab` as well: "bleu" and "bleu_signature".
    """
    _check_vocabularies(model, None, tgt_vocab)
    if device is None:
        device = next(model.parameters()).device
    device = torch.device(device)
    pad_id = model.config.pad_id
    total_nll, correct, counted, n_sentences = 0.0, 0, 0, 0
    outputs: dict[int, tuple[list[int], list[int]]] = {}
    with eval_mode(model):
        for batch in loader:
            batch = batch.to(device)
            with autocast(device, precision):
                logits = model(batch.src, batch.tgt_in, src_mask=batch.src_mask)   # (B, T, V)
            logits = logits.float()
            n_tok = int((batch.tgt_out != pad_id).sum())
            total_nll += float(cross_entropy(logits, batch.tgt_out, pad_id)) * n_tok
            c, n = token_accuracy(logits, batch.tgt_out, pad_id)
            correct, counted, n_sentences = correct + c, counted + n, n_sentences + len(batch.src)
            if generate:
                hyps = generate_ids(model, batch.src, batch.src_mask, beam_size, max_len)
                for i, hyp, ref in zip(batch.index.tolist(), hyps, batch.tgt_out.tolist()):
                    outputs[i] = (hyp, strip_eos(ref))
    if counted == 0:
        raise ValueError("loader: expected at least one target token, got an empty evaluation set")
    metrics = {"loss": total_nll / counted, "perplexity": perplexity(total_nll / counted),
               "token_accuracy": correct / counted, "n_tokens": counted, "n_sentences": n_sentences}
    if generate:
        order = sorted(outputs)
        hyps = [outputs[i][0] for i in order]
        refs = [outputs[i][1] for i in order]
        metrics["exact_match"] = exact_match(hyps, refs)
        metrics["hypotheses"] = hyps
        if tgt_vocab is not None:
            metrics["bleu"], metrics["bleu_signature"] = corpus_bleu([tgt_vocab.decode(h) for h in hyps],
                                                                     [tgt_vocab.decode(r) for r in refs])
    return metrics


def make_evaluator(val_loader: Iterable, config, vocabs: tuple[Vocab, Vocab] | None = None,
                   coverage: Sequence[tuple[str, str]] = ()):
    """The `evaluate_fn` that `train` calls at each evaluation point: `evaluate` on `val_loader` (teacher-forced
    loss, perplexity, token accuracy), with greedy exact match (and BLEU, given `vocabs`) when `config.monitor`
    or `config.stop_when_perfect` needs generated output, and "coverage" (the share of the must-know `coverage`
    pairs translated right; needs `vocabs`), which the stop rule watches too. Returns numbers only."""
    generate = config.monitor in ("exact_match", "bleu") or config.stop_when_perfect > 0
    src_vocab, tgt_vocab = vocabs or (None, None)
    if coverage and vocabs is None:
        raise ValueError("vocabs: expected (source, target) vocabularies to translate the coverage pairs, got None")

    def evaluate_fn(model) -> dict:
        metrics = evaluate(model, val_loader, tgt_vocab, generate=generate, precision=config.precision)
        metrics.pop("hypotheses", None)
        metrics.pop("bleu_signature", None)
        if coverage:
            metrics["coverage"], _ = coverage_of(model, coverage, src_vocab, tgt_vocab)
        return metrics

    return evaluate_fn


def coverage_of(model, pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab, beam_size: int = 1,
                device: str | torch.device | None = None) -> tuple[float, list[tuple[str, str, str]]]:
    """(the share of must-know `pairs` translated exactly right, the misses as (source, output, reference))."""
    outputs = translate(model, [s for s, _ in pairs], src_vocab, tgt_vocab, beam_size=beam_size, device=device)
    misses = [(s, o, t) for (s, t), o in zip(pairs, outputs) if o != t]
    return 1.0 - len(misses) / len(pairs), misses


@torch.no_grad()
def translate(model, sentences: Sequence[str], src_vocab: Vocab, tgt_vocab: Vocab, beam_size: int = 1,
              max_len: int | None = None, batch_size: int = 64, device: str | torch.device | None = None,
              sampling: dict | None = None) -> list[str]:
    """Translate raw sentences (tokenised with `src_vocab`'s tokeniser; unknown words become <unk>).

    `sampling`: draw the translations with sample_decode and these options (temperature, top_k, top_p,
    generator) instead of searching for the most probable one.

    A sentence longer than the model reads (`config.max_len` tokens with its end-of-sentence token) is an
    error, never silently cut: a cut sentence would be translated wrong without a word.
    """
    from ..data.batching import pad_sequences
    if isinstance(sentences, str):
        raise TypeError("sentences: expected a list of strings, got one string (wrap it in a list)")
    _check_vocabularies(model, src_vocab, tgt_vocab)
    limit = model.config.max_len
    encoded = []
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(f"sentences[{i}]: expected a string, got {type(sentence).__name__}")
        ids = src_vocab.encode(sentence)                 # tokens + eos
        if len(ids) > limit:
            raise ValueError(f"sentences[{i}]: {len(ids)} tokens with the end-of-sentence token, but the model "
                             f"reads at most {limit} (config.max_len); split the sentence")
        encoded.append(ids)
    if device is None:
        device = next(model.parameters()).device
    out: list[str] = []
    for start in range(0, len(encoded), batch_size):
        ids = encoded[start:start + batch_size]
        src = torch.from_numpy(pad_sequences(ids, PAD_ID)).to(device)   # (B, S)
        out.extend(tgt_vocab.decode(h) for h in generate_ids(model, src, None, beam_size, max_len, sampling))
    return out


def evaluate_pairs(model, pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab,
                   batch_size: int = 128, beam_size: int = 1, max_len: int | None = None,
                   device: str | torch.device | None = None) -> dict:
    """`evaluate` with generation on raw (source, target) pairs; adds "hypotheses_text" in the pairs' order."""
    from ..data.loader import make_dataloader
    _check_vocabularies(model, src_vocab, tgt_vocab)
    loader = make_dataloader(pairs, src_vocab, tgt_vocab, batch_size=batch_size, shuffle=False)
    metrics = evaluate(model, loader, tgt_vocab, generate=True, beam_size=beam_size, max_len=max_len,
                       device=device)
    metrics["hypotheses_text"] = [tgt_vocab.decode(h) for h in metrics["hypotheses"]]
    metrics["chrf"], metrics["chrf_signature"] = corpus_chrf(metrics["hypotheses_text"], [t for _, t in pairs])
    # BLEU multiplies 1- to 4-gram precisions: on one-word sentences (German numbers) it is 0 whatever the output
    metrics["short_references"] = sum(len(t.split()) < 4 for _, t in pairs) / len(pairs)
    return metrics


def evaluate_task(model, data, src_vocab: Vocab, tgt_vocab: Vocab, split: str = "test", beam_size: int = 1,
                  device: str | torch.device | None = None) -> dict:
    """`evaluate_pairs` on a split of a `ParallelData`, plus "strata" (exact match per stratum with at least
    `MIN_STRATUM` pairs), "lagging" (strata more than `LAG` below the overall exact match), "coverage" (exact
    match on the task's must-know pairs, None if it has none), "coverage_errors" ((source, output, reference)
    of the misses) and "errors" (the same for the split's own misses, at most `MAX_ERRORS` of them)."""
    pairs = data.split(split)
    if not pairs:
        raise ValueError(f"split: the {split} split of {data.name or 'the data'} is empty")
    metrics = evaluate_pairs(model, pairs, src_vocab, tgt_vocab, beam_size=beam_size, device=device)
    labels = data.split_strata(split)
    metrics["strata"] = {} if labels is None else exact_match_by_stratum(
        metrics["hypotheses_text"], [t for _, t in pairs], labels)
    metrics["lagging"] = [label for label, row in metrics["strata"].items()
                          if row["exact_match"] < metrics["exact_match"] - LAG]
    metrics["errors"] = [(s, o, t) for (s, t), o in zip(pairs, metrics["hypotheses_text"]) if o != t][:MAX_ERRORS]
    metrics["coverage"], metrics["coverage_errors"] = None, []
    if data.coverage:
        metrics["coverage"], metrics["coverage_errors"] = coverage_of(model, data.coverage, src_vocab, tgt_vocab,
                                                                      beam_size, device)
    return metrics
