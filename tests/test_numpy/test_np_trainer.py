"""The NumPy trainer: it learns a tiny copy task, records a history, stops when the batches run out or its
time budget is spent."""
from __future__ import annotations

import numpy as np
from numpy_helpers import tiny_config

from transformer_course.config import TrainConfig
from transformer_course.numpy import init_transformer
from transformer_course.training.numpy_trainer import train_numpy


def _copy_batches(rng, V, B=16, L=4):
    while True:
        seq = rng.integers(3, V, size=(B, L))
        tgt = np.concatenate([np.ones((B, 1), dtype=np.int64), seq, np.full((B, 1), 2)], axis=1)  # BOS seq EOS
        yield seq, tgt[:, :-1], tgt[:, 1:]


def test_train_numpy_learns_and_records_history():
    config = tiny_config(src_vocab_size=8, tgt_vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_decoder_layers=1,
                         max_len=8, dropout=0.1)
    rng = np.random.default_rng(0)
    params = init_transformer(rng, config)
    tc = TrainConfig(max_steps=400, warmup_steps=60, lr_factor=1.0, label_smoothing=0.0)
    history = train_numpy(params, config, _copy_batches(rng, 8), tc, rng=rng)
    assert history["step"] == list(range(1, 401)) and history["stop_reason"] == "max_steps"
    # The last losses are 5-14% of the first over seeds 0-3, with NumPy's and OpenBLAS's kernels on AVX-512 and
    # forced to SSE4.2: the bound leaves room for any processor, and a trainer that does not learn fails it.
    assert np.mean(history["loss"][-10:]) < 0.5 * np.mean(history["loss"][:10])
    assert history["lr"][59] == max(history["lr"])       # the peak of the warm-up schedule


def test_train_numpy_stops_on_exhausted_data():
    config = tiny_config()
    params = init_transformer(np.random.default_rng(1), config)
    gen = _copy_batches(np.random.default_rng(2), 7, B=2)
    few = [next(gen) for _ in range(2)]
    history = train_numpy(params, config, few, TrainConfig(max_steps=10, warmup_steps=2))
    assert len(history["loss"]) == 2 and history["stop_reason"] == "data_exhausted"


def test_train_numpy_stops_when_its_time_budget_is_spent(monkeypatch):
    """TrainConfig.max_minutes, as in the PyTorch trainer (stop reason "time_budget"); a clock that moves 25 s at
    every reading stands in for slow steps, so the test takes no time."""
    from transformer_course.training import numpy_trainer

    ticks = iter(range(0, 10_000, 25))
    monkeypatch.setattr(numpy_trainer.time, "perf_counter", lambda: float(next(ticks)))
    config = tiny_config()
    params = init_transformer(np.random.default_rng(1), config)
    gen = _copy_batches(np.random.default_rng(2), 7, B=2)
    history = train_numpy(params, config, gen, TrainConfig(max_steps=100, warmup_steps=2, max_minutes=1.0),
                          callbacks=[])
    assert history["stop_reason"] == "time_budget" and history["step"] == [1, 2, 3]   # 25, 50, then 75 s >= 60


def test_max_steps_is_a_ceiling_that_a_continued_run_counts_from_its_first_step():
    """As in the PyTorch trainer: max_steps is the step count to reach, not the number of steps to add."""
    from transformer_course.numpy.optim import Adam
    config = tiny_config()
    params = init_transformer(np.random.default_rng(1), config)
    gen = _copy_batches(np.random.default_rng(2), 7, B=2)
    optimizer = Adam(params, lr=0.0)
    first = train_numpy(params, config, gen, TrainConfig(max_steps=3, warmup_steps=2), optimizer=optimizer)
    more = train_numpy(params, config, gen, TrainConfig(max_steps=5, warmup_steps=2), optimizer=optimizer)
    assert first["step"] == [1, 2, 3] and more["step"] == [4, 5] and more["stop_reason"] == "max_steps"


def test_train_numpy_raises_the_same_divergence_error_as_the_pytorch_trainer():
    import pytest

    from transformer_course.training.history import TrainingDiverged  # without torch, as the NumPy half

    config = tiny_config()
    params = init_transformer(np.random.default_rng(3), config)
    params["tgt_embedding"]["E"][:] = np.nan            # every logit becomes NaN, and so does the loss
    batches = _copy_batches(np.random.default_rng(4), 7, B=2)
    with pytest.raises(TrainingDiverged, match="training diverged at step 1: loss nan"):
        train_numpy(params, config, batches, TrainConfig(max_steps=3, warmup_steps=2), callbacks=[])


def test_train_numpy_refuses_settings_it_does_not_implement():
    import pytest

    config = tiny_config()
    params = init_transformer(np.random.default_rng(3), config)
    batches = _copy_batches(np.random.default_rng(4), 7, B=2)
    for setting in ({"weight_decay": 0.01}, {"average_last": 3}, {"patience": 2}, {"precision": "bf16"}):
        name = next(iter(setting))
        with pytest.raises(ValueError, match=f"does not implement {name}"):
            train_numpy(params, config, batches, TrainConfig(max_steps=3, warmup_steps=2, **setting), callbacks=[])
    # what it does not read but that changes nothing here is accepted (a preset sets these)
    history = train_numpy(params, config, batches, TrainConfig(max_steps=1, warmup_steps=2, eval_every=25,
                                                               batch_size=2), callbacks=[])
    assert history["stop_reason"] == "max_steps"
