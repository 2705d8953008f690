"""Device and precision helpers: nothing is tied to one device; autocast and compile run on CPU too."""
from __future__ import annotations

import pytest
import torch
from torch_helpers import SMALL, lively_model, random_batch

from transformer_course.torch.device import PRECISIONS, autocast, maybe_compile, needs_grad_scaler, pick_device
from transformer_course.torch.loss import cross_entropy


def test_pick_device_auto_and_by_name():
    auto = pick_device()
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert auto.type == expected
    assert pick_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ValueError, match="name: expected 'auto', 'cpu'"):
        pick_device("gpu0")
    with pytest.raises(TypeError, match="name: expected a device name"):
        pick_device(0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda:0")


@pytest.mark.parametrize("precision", sorted(PRECISIONS))
def test_autocast_runs_a_training_step_on_cpu(precision):
    model = lively_model().train()
    src, tgt = random_batch()
    with autocast("cpu", precision):
        logits = model(src, tgt)
        loss = cross_entropy(logits, tgt, SMALL.pad_id, label_smoothing=0.1)
    expected = PRECISIONS[precision] or torch.float32
    assert logits.dtype == expected and loss.dtype == torch.float32
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert needs_grad_scaler(precision) == (precision == "fp16")


def test_compile_wraps_the_same_parameters():
    model = lively_model()
    compiled = maybe_compile(model, backend="eager")     # the cheap backend: traces without code generation
    assert set(map(id, compiled.parameters())) == set(map(id, model.parameters()))
    src, tgt = random_batch()
    torch.testing.assert_close(compiled(src, tgt), model(src, tgt))
    assert maybe_compile(model, enabled=False) is model
