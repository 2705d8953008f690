"""The trainer: learning, exact resume, NaN detection, early stopping, averaging, precision, bad input."""
import pytest
import torch
from training_helpers import params_equal

from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.loss import cross_entropy
from transformer_course.training.checkpoint import load_checkpoint
from transformer_course.training.trainer import TrainingDiverged, train
from transformer_course.utils import set_seed


def test_loss_decreases_and_history(make_model, loaders, tiny_config, toy):
    _, sv, tv = toy
    model = make_model()
    events = []
    history = train(model, *loaders(), tiny_config.replace(max_steps=30, warmup_steps=10, lr_factor=2.0),
                    src_vocab=sv, tgt_vocab=tv, progress=False, callbacks=[events.append])
    assert history["step"] == list(range(1, 31)) and len(history["lr"]) == 30
    assert sum(history["loss"][-5:]) < sum(history["loss"][:5])
    assert [e["step"] for e in history["eval"]] == [5, 10, 15, 20, 25, 30]
    assert {"loss", "perplexity", "token_accuracy"} <= history["eval"][0].keys()
    assert history["stop_reason"] == "max_steps"
    assert [e["event"] for e in events].count("step") == 30 and events[-1]["event"] == "end"
    assert not model.training


def test_resume_equals_uninterrupted(make_model, loaders, tiny_config, toy, tmp_path):
    """N steps in one go == N/2 steps, save, fresh process state, resume for N/2 (dropout on, epochs cross)."""
    _, sv, tv = toy
    config = tiny_config.replace(max_steps=14, eval_every=7, warmup_steps=5)   # 6 batches/epoch: crosses 2
    kwargs = dict(src_vocab=sv, tgt_vocab=tv, progress=False)
    full = make_model(dropout=0.2)
    train(full, *loaders(), config, **kwargs)

    first = make_model(dropout=0.2)
    train(first, *loaders(), config.replace(max_steps=7), out_dir=tmp_path, **kwargs)
    assert load_checkpoint(tmp_path / "last.pt")["step"] == 7
    torch.manual_seed(1234)                                   # resuming must not depend on the RNG state
    resumed = make_model(seed=99, dropout=0.2)                # different init: overwritten by the checkpoint
    history = train(resumed, *loaders(), config, resume_from=tmp_path / "last.pt", **kwargs)
    assert history["step"] == list(range(1, 15))
    assert params_equal(full, resumed)


def test_nan_stops_with_clear_message(make_model, loaders, tiny_config):
    model = make_model()
    model.register_forward_hook(lambda module, inputs, output: output * float("nan"))
    with pytest.raises(TrainingDiverged, match="loss became nan at step 1"):
        train(model, *loaders(), tiny_config, progress=False)


def test_early_stopping(make_model, loaders, tiny_config):
    model = make_model()
    # lr 0: the validation loss never improves after the first evaluation
    history = train(model, *loaders(), tiny_config.replace(lr_factor=0.0, eval_every=2, patience=2),
                    progress=False)
    assert history["stop_reason"] == "early_stopping"
    assert history["step"][-1] == 6


def test_checkpoint_averaging(make_model, loaders, tiny_config, tmp_path):
    model = make_model()
    history = train(model, *loaders(), tiny_config.replace(max_steps=15, average_last=3), out_dir=tmp_path,
                    progress=False)
    assert history["averaged"] is not None and (tmp_path / "averaged.pt").exists()
    last = load_checkpoint(tmp_path / "last.pt")
    snaps = last["extra"]["snapshots"]
    assert len(snaps) == 3
    name = "encoder.layers.0.ffn.W_1.weight" if "encoder.layers.0.ffn.W_1.weight" in snaps[0] else next(iter(snaps[0]))
    assert torch.allclose(model.state_dict()[name], sum(s[name] for s in snaps) / 3, atol=1e-6)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_runs_on_cpu(make_model, loaders, tiny_config, precision):
    model = make_model()
    history = train(model, *loaders(), tiny_config.replace(max_steps=6, precision=precision), progress=False)
    assert all(torch.isfinite(torch.tensor(history["loss"])))
    assert next(model.parameters()).dtype == torch.float32     # autocast: weights stay fp32


def test_bad_input(make_model, loaders, tiny_config, toy, tmp_path):
    _, sv, tv = toy
    model = make_model()
    with pytest.raises(ValueError, match="tgt_vocab"):
        train(model, *loaders(), tiny_config, tgt_vocab=sv.__class__.build(["xyz"], "char"), progress=False)
    with pytest.raises(TypeError, match="config"):
        train(model, *loaders(), {"max_steps": 3})
    with pytest.raises(ValueError, match="monitor"):
        train(model, *loaders(), tiny_config, monitor="accuracy")
    with pytest.raises(ValueError, match="empty"):
        train(model, [], None, tiny_config)
    with pytest.raises(ValueError, match="no batch"):
        train(model, iter(loaders()[0]), None, tiny_config, progress=False)


def test_compile_flag_wraps_the_model(make_model, loaders, tiny_config, monkeypatch):
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
    history = train(model, *loaders(), tiny_config.replace(max_steps=3, compile=True), progress=False)
    assert calls == ["forward"] * 3 and len(history["loss"]) == 3
    assert "_orig_mod" not in next(iter(model.state_dict()))          # checkpoints hold the plain model


def _bahdanau(toy, seed=0):
    _, sv, tv = toy
    set_seed(seed)
    return BahdanauSeq2Seq(len(sv), len(tv), emb=16, hidden=32)


def _bahdanau_logits(model, batch):
    logits, _ = model(batch.src, batch.tgt_in)           # (B, T, V); the attention weights are not needed
    return logits


def test_the_bahdanau_model_trains_checkpoints_and_resumes_through_the_trainer(loaders, tiny_config, toy, tmp_path):
    """The trainer is model- and loss-agnostic: an RNN encoder-decoder with no .config, its own forward and its
    own evaluation learns, and resuming equals an uninterrupted run, as for the Transformer."""
    val_batches = list(loaders()[1])

    def evaluate_fn(model):
        with torch.no_grad():
            losses = [cross_entropy(_bahdanau_logits(model, batch), batch.tgt_out, 0).item() for batch in val_batches]
        return {"loss": sum(losses) / len(losses)}

    config = tiny_config.replace(max_steps=12, eval_every=6, warmup_steps=4, lr_factor=0.2)  # peak lr 0.018
    kwargs = dict(forward=_bahdanau_logits, evaluate_fn=evaluate_fn, d_model=32, progress=False)
    full = _bahdanau(toy)
    history = train(full, loaders()[0], None, config, **kwargs)
    assert history["step"] == list(range(1, 13)) and len(history["eval"]) == 2
    assert sum(history["loss"][-3:]) < sum(history["loss"][:3])

    first = _bahdanau(toy)
    train(first, loaders()[0], None, config.replace(max_steps=6), out_dir=tmp_path, **kwargs)
    checkpoint = load_checkpoint(tmp_path / "last.pt")
    assert checkpoint["step"] == 6 and checkpoint["model_config"] is None
    resumed = _bahdanau(toy, seed=7)                      # other weights: the checkpoint overwrites them
    train(resumed, loaders()[0], None, config, resume_from=tmp_path / "last.pt", **kwargs)
    assert params_equal(full, resumed)
    with pytest.raises(ValueError, match="d_model: expected the width that scales the learning-rate schedule"):
        train(_bahdanau(toy), loaders()[0], None, config, forward=_bahdanau_logits, progress=False)


def test_the_teaching_loss_trains_like_the_fused_default(make_model, loaders, tiny_config):
    """loss_fn is pluggable: the hand-written cross_entropy gives the run the fused default gives."""
    config = tiny_config.replace(max_steps=8, eval_every=8)
    fused = train(make_model(), *loaders(), config, progress=False)
    smoothing = config.label_smoothing
    teaching = train(make_model(), *loaders(), config, progress=False,
                     loss_fn=lambda logits, targets: cross_entropy(logits, targets, 0, smoothing))
    assert teaching["loss"] == pytest.approx(fused["loss"], rel=1e-5)


def test_a_time_budget_stops_training_then_evaluates(make_model, loaders, tiny_config, tmp_path, monkeypatch):
    """The clock is faked: every step takes 'one minute', so a 2.5-minute budget stops after step 3."""
    from transformer_course.training import trainer as trainer_module
    clock = iter(range(0, 10_000, 60))
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: float(next(clock)))
    config = tiny_config.replace(max_steps=50, eval_every=100, max_minutes=2.5, average_last=2)
    history = train(make_model(), *loaders(), config, out_dir=tmp_path, progress=False)
    assert history["stop_reason"] == "time_budget" and history["step"][-1] == 3
    assert history["eval"][-1]["step"] == 3 and (tmp_path / "last.pt").exists()
