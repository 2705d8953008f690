"""Chapter 9's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.training import check_label_smoothing_targets, check_noam_lr


# ------------------------------------------------------------------------------------------- the schedule
def good_noam(step, d_model, warmup):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def test_noam_reference_passes(capsys):
    assert check_noam_lr(good_noam) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_noam_package_passes():
    pytest.importorskip("torch")
    from transformer_course.training.schedule import noam_lr
    assert check_noam_lr(noam_lr) is True


def test_noam_not_attempted(capsys):
    def stub(step, d_model, warmup):
        raise NotImplementedError
    assert check_noam_lr(stub) is False
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, words", [
    (lambda s, d, w: d ** -0.5 * min(s ** -0.5, s * w ** -0.5), "warmup^-0.5"),
    (lambda s, d, w: d ** -0.5 * min(s ** -0.5, s / w), "step / warmup"),
    (lambda s, d, w: d ** 0.5 * min(s ** -0.5, s * w ** -1.5), "wrong exponent's sign"),
    (lambda s, d, w: d ** -1.0 * min(s ** -0.5, s * w ** -1.5), "exponent is -1"),
    (lambda s, d, w: min(s ** -0.5, s * w ** -1.5), "factor is missing"),
    (lambda s, d, w: d ** -0.5 * max(s ** -0.5, s * w ** -1.5), "max"),
    (lambda s, d, w: good_noam(s + 1, d, w), "s + 1"),
])
def test_noam_hints(wrong, words):
    with pytest.raises(ExerciseError) as err:
        check_noam_lr(wrong)
    assert words in str(err.value)


def test_noam_step_minus_one_divides_by_zero():
    with pytest.raises(ExerciseError, match="divided by zero"):
        check_noam_lr(lambda s, d, w: good_noam(s - 1, d, w))


def test_noam_step_minus_one_guarded():
    def guarded(s, d, w):
        s = s - 1
        return 0.0 if s == 0 else good_noam(s, d, w)
    with pytest.raises(ExerciseError, match="s - 1"):
        check_noam_lr(guarded)


# ----------------------------------------------------------------------------------------- label smoothing
def good_targets(targets, V, eps, pad_id=0):
    targets = np.asarray(targets)
    q = np.full(targets.shape + (V,), eps / V)
    np.put_along_axis(q, targets[..., None], 1 - eps + eps / V, axis=-1)
    q[targets == pad_id] = 0.0
    return q


def test_label_smoothing_reference_passes(capsys):
    assert check_label_smoothing_targets(good_targets) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_label_smoothing_matches_torch_loss():
    """The reference q gives exactly the package's (and torch's) smoothed loss."""
    torch = pytest.importorskip("torch")
    from transformer_course.torch.loss import cross_entropy
    rng = np.random.default_rng(0)
    targets = np.array([[5, 2, 7, 0], [3, 4, 1, 6]])
    logits = torch.tensor(rng.normal(size=(2, 4, 8)))
    q = torch.tensor(good_targets(targets, 8, 0.1))
    manual = -(q * torch.log_softmax(logits, -1)).sum() / (torch.tensor(targets) != 0).sum()
    got = cross_entropy(logits, torch.tensor(targets), pad_id=0, label_smoothing=0.1)
    assert torch.allclose(manual, got)


def test_label_smoothing_torch_tensors_accepted():
    torch = pytest.importorskip("torch")

    def torch_version(targets, V, eps, pad_id=0):
        t = torch.as_tensor(targets)
        q = torch.full((*t.shape, V), eps / V, dtype=torch.float64)
        q.scatter_(-1, t[..., None], 1 - eps + eps / V)
        q[t == pad_id] = 0
        return q
    assert check_label_smoothing_targets(torch_version) is True


def v_minus_one(targets, V, eps, pad_id=0):
    q = np.full(targets.shape + (V,), eps / (V - 1))
    np.put_along_axis(q, targets[..., None], 1 - eps, axis=-1)
    q[targets == pad_id] = 0.0
    return q


def no_pad_rows(targets, V, eps, pad_id=0):
    q = np.full(targets.shape + (V,), eps / V)
    np.put_along_axis(q, targets[..., None], 1 - eps + eps / V, axis=-1)
    return q


def target_not_lowered(targets, V, eps, pad_id=0):
    q = np.full(targets.shape + (V,), eps / V)
    np.put_along_axis(q, targets[..., None], 1 + eps / V, axis=-1)
    q[targets == pad_id] = 0.0
    return q


def annotated(targets, V, eps, pad_id=0):
    q = np.full(targets.shape + (V,), eps / (V - 2))
    np.put_along_axis(q, targets[..., None], 1 - eps, axis=-1)
    q[..., pad_id] = 0.0
    q[targets == pad_id] = 0.0
    return q


def wrong_shape(targets, V, eps, pad_id=0):
    return good_targets(targets, V, eps, pad_id).reshape(-1, V)


@pytest.mark.parametrize("wrong, words", [
    (v_minus_one, "V - 1"),
    (no_pad_rows, "padding should be all zeros"),
    (target_not_lowered, "take eps away"),
    (annotated, "Annotated Transformer"),
    (wrong_shape, "axes"),
])
def test_label_smoothing_hints(wrong, words):
    with pytest.raises(ExerciseError) as err:
        check_label_smoothing_targets(wrong)
    assert words in str(err.value)


def test_label_smoothing_none_returned():
    with pytest.raises(ExerciseError, match="return"):
        check_label_smoothing_targets(lambda t, V, eps, pad_id=0: None)
