"""The trainer: learning, exact resume, NaN detection, stop rules, averaging, precision, bad input."""
import math

import pytest
import torch
from training_helpers import params_equal

from transformer_course.config import STOP_RULES, train_recipe
from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.loss import cross_entropy
from transformer_course.training.checkpoint import load_checkpoint
from transformer_course.training.history import STOP_REASONS, describe_stop_rule, new_history
from transformer_course.training.trainer import TrainingDiverged, train
from transformer_course.utils import set_seed


def test_loss_decreases_and_history(make_model, run, tiny_config, toy):
    _, sv, tv = toy
    model = make_model()
    events = []
    history = run(model, tiny_config.replace(max_steps=30, warmup_steps=10, lr_factor=2.0), vocabs=(sv, tv),
                  callbacks=[events.append])
    assert history["step"] == list(range(1, 31)) and len(history["lr"]) == 30
    assert sum(history["loss"][-5:]) < sum(history["loss"][:5])
    assert [e["step"] for e in history["eval"]] == [5, 10, 15, 20, 25, 30]
    assert {"loss", "perplexity", "token_accuracy"} <= history["eval"][0].keys()
    assert history["stop_reason"] == "max_steps" and history.keys() == new_history().keys()
    assert [e["event"] for e in events].count("step") == 30
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"
    assert not model.training


def test_both_trainers_send_the_same_events(make_model, run, tiny_config):
    """The PyTorch and the NumPy trainer call their callbacks with the same events and the same keys."""
    import numpy as np

    from transformer_course.config import get_preset
    from transformer_course.numpy import init_transformer
    from transformer_course.training.numpy_trainer import train_numpy

    torch_events = []
    run(make_model(), tiny_config.replace(max_steps=3, eval_every=10), callbacks=[torch_events.append])
    config = get_preset("tiny")
    rng = np.random.default_rng(0)
    batches = ((rng.integers(3, 20, (2, 4)), rng.integers(3, 20, (2, 5)), rng.integers(3, 20, (2, 5)))
               for _ in range(3))
    numpy_events = []
    train_numpy(init_transformer(rng, config), config, batches, tiny_config.replace(max_steps=3),
                callbacks=[numpy_events.append])

    def shape(events):        # each event's name and keys; the PyTorch trainer's evaluations left out
        return [(e["event"], sorted(e)) for e in events if e["event"] != "eval"]
    assert [e["event"] for e in numpy_events] == ["start", "step", "step", "step", "end"]
    assert shape(numpy_events) == shape(torch_events)
    assert numpy_events[0]["max_steps"] == 3 and numpy_events[-1]["stop_reason"] == "max_steps"


def test_the_gradient_norm_is_measured_with_clipping_off(make_model, run, tiny_config):
    history = run(make_model(), tiny_config.replace(max_steps=3, clip_grad_norm=0.0))
    assert all(math.isfinite(g) and g > 0 for g in history["grad_norm"]), history["grad_norm"]


def test_resume_equals_uninterrupted(make_model, run, tiny_config, toy, tmp_path):
    """N steps in one go == N/2 steps, save, fresh process state, resume for N/2 (dropout on, epochs cross)."""
    _, sv, tv = toy
    config = tiny_config.replace(max_steps=14, eval_every=7, warmup_steps=5)   # 6 batches/epoch: crosses 2
    full = make_model(dropout=0.2)
    run(full, config, vocabs=(sv, tv))

    first = make_model(dropout=0.2)
    run(first, config.replace(max_steps=7), vocabs=(sv, tv), out_dir=tmp_path)
    assert load_checkpoint(tmp_path / "last.pt")["step"] == 7
    torch.manual_seed(1234)                                   # resuming must not depend on the RNG state
    resumed = make_model(seed=99, dropout=0.2)                # different init: overwritten by the checkpoint
    history = run(resumed, config, vocabs=(sv, tv), resume_from=tmp_path / "last.pt")
    assert history["step"] == list(range(1, 15))
    assert params_equal(full, resumed)


def test_nan_stops_with_clear_message(make_model, run, tiny_config):
    model = make_model()
    model.register_forward_hook(lambda module, inputs, output: output * float("nan"))
    with pytest.raises(TrainingDiverged, match="loss became nan at step 1"):
        run(model, tiny_config)


def test_patience_stops_when_the_monitored_metric_stops_improving(make_model, run, tiny_config):
    # lr 0: the validation loss never improves after the first evaluation (step 2); 2 more evaluations end it
    history = run(make_model(), tiny_config.replace(lr_factor=0.0, eval_every=2, patience=2))
    assert history["stop_reason"] == "patience" and history["step"][-1] == 6
    assert history["best"]["step"] == 2


def test_perfect_evaluations_stop_training_and_a_resumed_run_stops_at_the_same_step(make_model, run, tiny_config,
                                                                                    tmp_path):
    """The stop rule reads the history only: scores (fed in, one per evaluation) perfect at 3 successive
    evaluations end the run; a run interrupted in the middle of the streak and resumed stops at the same step."""
    def scripted(scores):
        remaining = iter(scores)
        return lambda model: {"loss": 1.0, "exact_match": next(remaining), "coverage": 1.0}

    scores = [0.5, 1.0, 0.9, 1.0, 1.0, 1.0, 1.0]              # perfect at evaluations 4, 5, 6
    config = tiny_config.replace(max_steps=50, eval_every=2, stop_when_perfect=3, monitor="exact_match")
    history = run(make_model(), config, evaluate_fn=scripted(scores))
    assert history["stop_reason"] == "perfect" and history["step"][-1] == 12
    assert history["best"]["step"] == 4                       # the first of the equal best scores

    run(make_model(), config.replace(max_steps=10), evaluate_fn=scripted(scores), out_dir=tmp_path)
    resumed = run(make_model(), config, evaluate_fn=scripted(scores[5:]), resume_from=tmp_path / "last.pt")
    assert resumed["stop_reason"] == "perfect" and resumed["step"][-1] == 12

    # coverage counts: exact match alone is not enough
    config = config.replace(max_steps=8)
    partial = run(make_model(), config, evaluate_fn=lambda model: {"loss": 1.0, "exact_match": 1.0, "coverage": 0.99})
    assert partial["stop_reason"] == "max_steps"


def test_a_finished_run_stays_finished_and_one_given_more_steps_goes_on(make_model, run, tiny_config, tmp_path):
    config = tiny_config.replace(max_steps=6, eval_every=3)
    run(make_model(), config, out_dir=tmp_path)
    again = run(make_model(), config, resume_from=tmp_path / "last.pt")
    assert again["step"] == list(range(1, 7)) and again["stop_reason"] == "max_steps"
    more = run(make_model(), config.replace(max_steps=9), resume_from=tmp_path / "last.pt")
    assert more["step"] == list(range(1, 10))


def test_checkpoint_averaging(make_model, run, tiny_config, tmp_path):
    model = make_model()
    history = run(model, tiny_config.replace(max_steps=15, average_last=3), out_dir=tmp_path)
    assert history["averaged"] is not None and (tmp_path / "averaged.pt").exists()
    last = load_checkpoint(tmp_path / "last.pt")
    snaps = last["extra"]["snapshots"]
    assert len(snaps) == 3
    name = "encoder.layers.0.ffn.W_1.weight" if "encoder.layers.0.ffn.W_1.weight" in snaps[0] else next(iter(snaps[0]))
    assert torch.allclose(model.state_dict()[name], sum(s[name] for s in snaps) / 3, atol=1e-6)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_runs_on_cpu(make_model, run, tiny_config, precision):
    model = make_model()
    history = run(model, tiny_config.replace(max_steps=6, precision=precision))
    assert all(torch.isfinite(torch.tensor(history["loss"])))
    assert next(model.parameters()).dtype == torch.float32     # autocast: weights stay fp32


def test_bad_input(make_model, loaders, run, tiny_config, toy):
    _, sv, _tv = toy
    model = make_model()
    with pytest.raises(ValueError, match="vocabs: expected a target vocabulary of"):
        run(model, tiny_config, vocabs=(sv, sv.__class__.build(["xyz"], "char")))
    with pytest.raises(TypeError, match="config"):
        train(model, loaders()[0], {"max_steps": 3})
    with pytest.raises(ValueError, match=r"TrainConfig.monitor: expected one of"):
        tiny_config.replace(monitor="accuracy")
    with pytest.raises(ValueError, match=r"TrainConfig.monitor: expected one of the evaluation's metrics"):
        run(model, tiny_config.replace(monitor="exact_match"), evaluate_fn=lambda model: {"loss": 1.0})
    with pytest.raises(ValueError, match="empty"):
        train(model, [], tiny_config)
    with pytest.raises(ValueError, match="no batch"):
        train(model, iter(loaders()[0]), tiny_config, callbacks=[])


def test_compile_flag_wraps_the_model(make_model, run, tiny_config, monkeypatch):
    """config.compile goes through torch.compile; a stand-in wrapper (like torch's OptimizedModule, with
    `_orig_mod`) keeps the test fast: real compilation takes tens of seconds on a small CPU."""
    calls = []

    class Compiled(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self._orig_mod = model

        def forward(self, *args, **kwargs):
            calls.append("forward")
            return self._orig_mod(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", Compiled)
    model = make_model()
    history = run(model, tiny_config.replace(max_steps=3, compile=True, eval_every=10), evaluate_fn=None)
    assert calls == ["forward"] * 3 and len(history["loss"]) == 3
    assert "_orig_mod" not in next(iter(model.state_dict()))          # checkpoints hold the plain model


class BahdanauLogits(torch.nn.Module):
    """The trainer's contract around an RNN encoder-decoder: logits from (src, tgt_in, src_mask=...) and a
    d_model for the schedule (its hidden width)."""

    def __init__(self, toy, seed=0):
        super().__init__()
        _, sv, tv = toy
        set_seed(seed)
        self.rnn = BahdanauSeq2Seq(len(sv), len(tv), emb=16, hidden=32)
        self.d_model = 32

    def forward(self, src, tgt_in, src_mask=None):
        logits, _ = self.rnn(src, tgt_in)                   # (B, T, V); the attention weights are not needed
        return logits


def test_the_bahdanau_model_trains_checkpoints_and_resumes_through_the_trainer(loaders, run, tiny_config, toy,
                                                                               tmp_path):
    """The trainer is model-agnostic: an RNN encoder-decoder with no .config and its own evaluation learns,
    and resuming equals an uninterrupted run, as for the Transformer."""
    val_batches = list(loaders()[1])

    def evaluate_fn(model):
        with torch.no_grad():
            losses = [cross_entropy(model(b.src, b.tgt_in), b.tgt_out, 0).item() for b in val_batches]
        return {"loss": sum(losses) / len(losses)}

    config = tiny_config.replace(max_steps=12, eval_every=6, warmup_steps=4, lr_factor=0.2)  # peak lr 0.018
    full = BahdanauLogits(toy)
    history = run(full, config, evaluate_fn=evaluate_fn)
    assert history["step"] == list(range(1, 13)) and len(history["eval"]) == 2
    assert sum(history["loss"][-3:]) < sum(history["loss"][:3])

    run(BahdanauLogits(toy), config.replace(max_steps=6), evaluate_fn=evaluate_fn, out_dir=tmp_path)
    checkpoint = load_checkpoint(tmp_path / "last.pt")
    assert checkpoint["step"] == 6 and checkpoint["model_config"] is None
    resumed = BahdanauLogits(toy, seed=7)                     # other weights: the checkpoint overwrites them
    run(resumed, config, evaluate_fn=evaluate_fn, resume_from=tmp_path / "last.pt")
    assert params_equal(full, resumed)
    plain = BahdanauLogits(toy)
    del plain.d_model
    with pytest.raises(ValueError, match=r"model: expected a \.config\.d_model or a \.d_model"):
        run(plain, config, evaluate_fn=evaluate_fn)


def test_a_time_budget_stops_training_then_evaluates(make_model, run, tiny_config, tmp_path, monkeypatch):
    """The clock is faked: every step takes 'one minute', so a 2.5-minute budget stops after step 3."""
    from transformer_course.training import trainer as trainer_module
    clock = iter(range(0, 10_000, 60))
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: float(next(clock)))
    config = tiny_config.replace(max_steps=50, eval_every=100, max_minutes=2.5, average_last=2)
    history = run(make_model(), config, out_dir=tmp_path)
    assert history["stop_reason"] == "time_budget" and history["step"][-1] == 3
    assert history["eval"][-1]["step"] == 3 and (tmp_path / "last.pt").exists()


def test_every_task_has_a_stop_rule_and_the_recipe_puts_flags_over_rule_over_preset():
    from transformer_course.__main__ import TASK_CHOICES
    assert set(STOP_RULES) == set(TASK_CHOICES)
    recipe = train_recipe("course", "numbers", max_steps=100)
    assert recipe.max_steps == 100 and recipe.stop_when_perfect == STOP_RULES["numbers"]["stop_when_perfect"]
    assert recipe.warmup_steps == train_recipe("course").warmup_steps
    assert "stop after 100 steps at the latest, or once exact match and coverage were 1.0" in describe_stop_rule(recipe)
    assert set(STOP_REASONS) >= {"max_steps", "perfect", "patience", "time_budget"}


def test_a_checkpoint_carries_the_time_spent_so_a_resumed_run_keeps_its_time_budget(make_model, run, tiny_config,
                                                                                    tmp_path, monkeypatch):
    """The clock is faked (one 'minute' per reading): the first run stops at its step ceiling; its last.pt holds
    the minutes it spent, so the same run resumed with a budget it has already used up stops after one step."""
    from transformer_course.training import trainer as trainer_module
    clock = iter(range(0, 10_000, 60))
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: float(next(clock)))
    first = run(make_model(), tiny_config.replace(max_steps=4, eval_every=2), out_dir=tmp_path)
    saved = load_checkpoint(tmp_path / "last.pt")["history"]["time_s"]
    assert first["stop_reason"] == "max_steps" and saved > 0
    config = tiny_config.replace(max_steps=50, eval_every=100, max_minutes=saved / 60)
    resumed = run(make_model(), config, out_dir=tmp_path, resume_from=tmp_path / "last.pt")
    assert resumed["stop_reason"] == "time_budget" and resumed["step"][-1] == 5


def test_after_a_resume_each_process_of_a_ddp_run_draws_its_own_dropout_masks(make_model, run, loaders, tiny_config,
                                                                              toy, tmp_path, monkeypatch):
    """A checkpoint holds rank 0's random generators; a process of another rank that resumes it must not replay
    rank 0's masks (rank 0 itself continues exactly)."""
    from transformer_course.training import trainer as trainer_module
    _, sv, tv = toy
    run(make_model(), tiny_config.replace(max_steps=4), out_dir=tmp_path)
    states = {}
    for rank in (0, 1):
        monkeypatch.setattr(trainer_module, "distributed_info", lambda rank=rank: (rank, 2))
        trainer_module.start_run(make_model(), loaders()[0], tiny_config.replace(max_steps=8), (sv, tv), None,
                                 tmp_path / "last.pt")
        states[rank] = torch.random.get_rng_state()
    assert torch.equal(states[0], load_checkpoint(tmp_path / "last.pt")["rng"]["torch"])
    assert not torch.equal(states[0], states[1])
