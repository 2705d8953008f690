"""Appendix A's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.backprop import (
    check_attention_backward,
    check_embedding_backward,
    check_encoder_layer_backward,
    check_label_smoothing_backward,
    check_layernorm_backward,
    check_linear_backward,
    check_merge_heads_backward,
    check_softmax_backward,
    check_softmax_walk,
)


# ---------------------------------------------------------------------------------------- softmax backward
def good_softmax_backward(dout, y):
    return y * (dout - (dout * y).sum(axis=-1, keepdims=True))


def test_softmax_reference_passes(capsys):
    assert check_softmax_backward(good_softmax_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_softmax_stub_is_not_attempted(capsys):
    def stub(dout, y):
        raise NotImplementedError

    assert check_softmax_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda d, y: y * d, "diagonal of the Jacobian"),
    (lambda d, y: -good_softmax_backward(d, y), "sign is flipped"),
    (lambda d, y: y * (d - (d * y).sum(axis=-2, keepdims=True)), "axis -2"),
    (lambda d, y: y * (d - (d * y).sum(axis=0, keepdims=True)), "axis 0"),
    (lambda d, y: d - (d * y).sum(axis=-1, keepdims=True), "leading factor y"),
    (lambda d, y: y * (d - d.sum(axis=-1, keepdims=True)), "weight dout by y"),
    (lambda d, y: y * (d * y).sum(axis=-1, keepdims=True), "y y^T part"),
    (lambda d, y: y * (d - (d * y).sum(axis=-1, keepdims=True)) + 0.01, "should sum to 0"),
    (lambda d, y: good_softmax_backward(d, y)[..., :-1], "axis 2 has size 4 instead of 5"),
    (lambda d, y: None, "forget to `return`"),
])
def test_softmax_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint.replace("^", r"\^").replace("`", ".")):
        check_softmax_backward(fn)


# ---------------------------------------------------------------------------------------- LayerNorm backward
def good_layernorm_backward(dout, x, gamma, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    g = dout * gamma
    return rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))


def _variant(mean_term=True, var_term=True, sign=1.0, axis=-1, use_gamma=True, use_rstd=True, scale=1.0):
    def fn(dout, x, gamma, eps=1e-5):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        rstd = 1.0 / np.sqrt(var + eps)
        xhat = (x - mean) * rstd
        g = dout * gamma if use_gamma else dout
        out = g.copy()
        if mean_term:
            out -= sign * g.mean(axis, keepdims=True)
        if var_term:
            out -= sign * xhat * (g * xhat).mean(axis, keepdims=True)
        return scale * (out * rstd if use_rstd else out)
    return fn


def _variance_term(dout, x, gamma, eps):
    """rstd * xhat * mean(g * xhat): keeping a wrong multiple of it leaves the row sums at 0."""
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    return rstd * xhat * (dout * gamma * xhat).mean(-1, keepdims=True)


def test_layernorm_reference_passes(capsys):
    assert check_layernorm_backward(good_layernorm_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_layernorm_package_backward_passes(capsys):
    from transformer_course.numpy import layernorm_backward, layernorm_forward

    def package(dout, x, gamma, eps=1e-5):
        _, cache = layernorm_forward(x, {"gamma": gamma, "beta": np.zeros_like(gamma)}, eps)
        return layernorm_backward(dout, cache)[0]

    assert check_layernorm_backward(package) is True


def test_layernorm_stub_is_not_attempted(capsys):
    def stub(dout, x, gamma, eps=1e-5):
        raise NotImplementedError

    assert check_layernorm_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (_variant(mean_term=False, var_term=False), "as constants"),
    (_variant(mean_term=False), "mean correction is missing"),
    (_variant(var_term=False), "variance correction is missing"),
    (_variant(sign=-1.0), "sign error"),
    (_variant(axis=-2), "axis -2"),
    (_variant(axis=0), "batch norm"),
    (_variant(use_gamma=False), "gamma is missing"),
    (_variant(use_rstd=False), "1 / sqrt"),
    (_variant(scale=6.0), "MEANS over the D features"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps) + 0.3 * _variance_term(d, x, g, eps),
     "should be orthogonal"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps) + 0.01, "should sum to 0"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps)[0], "has 2 axes"),
])
def test_layernorm_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_layernorm_backward(fn)


def test_learner_cannot_spoil_inputs():
    def in_place(dout, x, gamma, eps=1e-5):
        result = good_layernorm_backward(dout, x, gamma, eps)
        x[...] = 0.0
        dout[...] = 0.0
        return result

    assert check_layernorm_backward(in_place) is True


# ---------------------------------------------------------------------------------- attention backward
def good_attention_backward(dout, q, k, v, mask):
    scale = 1.0 / np.sqrt(q.shape[-1])
    scores = np.where(mask, q @ k.swapaxes(-1, -2) * scale, -np.inf)      # (B, T, T)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)                              # (B, T, T)
    dv = weights.swapaxes(-1, -2) @ dout                                   # (B, T, Dh)
    dweights = dout @ v.swapaxes(-1, -2)                                   # (B, T, T)
    dscores = weights * (dweights - (dweights * weights).sum(-1, keepdims=True))
    return dscores @ k * scale, dscores.swapaxes(-1, -2) @ q * scale, dv


def _attention_variant(scale_power=-0.5, use_mask=True, dk_transposed=True, dv_transposed=True,
                       dq_transposed=False, correction=True):
    def fn(dout, q, k, v, mask):
        Dh = q.shape[-1]
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(Dh)
        if use_mask:
            scores = np.where(mask, scores, -1e9)                          # a large negative fill works too
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        dv = (weights.swapaxes(-1, -2) if dv_transposed else weights) @ dout
        dweights = dout @ v.swapaxes(-1, -2)
        inner = (dweights * weights).sum(-1, keepdims=True) if correction else 0.0
        dscores = weights * (dweights - inner) * Dh ** scale_power
        dq = (dscores.swapaxes(-1, -2) if dq_transposed else dscores) @ k
        dk = (dscores.swapaxes(-1, -2) if dk_transposed else dscores) @ q
        return dq, dk, dv
    return fn


def test_attention_reference_passes(capsys):
    assert check_attention_backward(good_attention_backward) is True
    assert "✔ Correct" in capsys.readouterr().out
    assert check_attention_backward(_attention_variant()) is True          # -1e9 instead of -inf


def test_attention_package_backward_passes():
    from transformer_course.numpy import scaled_dot_product_attention_backward, scaled_dot_product_attention_forward

    def package(dout, q, k, v, mask):
        _, cache = scaled_dot_product_attention_forward(q, k, v, mask)
        return scaled_dot_product_attention_backward(dout, cache)

    assert check_attention_backward(package) is True


def test_attention_stub_is_not_attempted(capsys):
    def stub(dout, q, k, v, mask):
        raise NotImplementedError

    assert check_attention_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _leaky_dk(dout, q, k, v, mask):
    dq, dk, dv = good_attention_backward(dout, q, k, v, mask)
    dk = dk + (~mask.any(axis=1))[..., None] * 0.1                         # gradient at the padded keys
    return dq, dk, dv


def _unbalanced_dk(dout, q, k, v, mask):
    dq, dk, dv = good_attention_backward(dout, q, k, v, mask)
    dk = dk.copy()
    dk[:, 0] += 0.1                                                        # key 0, allowed for every query
    return dq, dk, dv


@pytest.mark.parametrize("fn, hint", [
    (_attention_variant(scale_power=0.0), "1 / sqrt.Dh. is missing"),
    (_attention_variant(scale_power=0.5), "multiplied by sqrt"),
    (_attention_variant(scale_power=-1.0), "SQUARE ROOT"),
    (_attention_variant(use_mask=False), "dv is not right yet: gradient leaks to masked keys"),
    (_attention_variant(dk_transposed=False), "dk = dscores.T @ q"),
    (_attention_variant(dq_transposed=True), "dq is not right yet: a product is transposed"),
    (_attention_variant(dv_transposed=False), "dv = weights.T @ dout"),
    (_attention_variant(correction=False), "diagonal of its Jacobian"),
    (_leaky_dk, "dk is not right yet: gradient leaks to masked keys"),
    (_unbalanced_dk, "summed over the keys it should be 0"),
    (lambda d, q, k, v, m: good_attention_backward(d, q, k, v, m)[:2], "three gradients"),
    (lambda d, q, k, v, m: (d @ v.swapaxes(-1, -2), *good_attention_backward(d, q, k, v, m)[1:]),
     "dq has shape .2, 5, 5., expected .2, 5, 4."),
])
def test_attention_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_attention_backward(fn)


def test_attention_learner_cannot_spoil_inputs():
    def in_place(dout, q, k, v, mask):
        result = good_attention_backward(dout, q, k, v, mask)
        for a in (dout, q, k, v):
            a[...] = 0.0
        mask[...] = True
        return result

    assert check_attention_backward(in_place) is True



# ------------------------------------------------------------------------ label-smoothed cross-entropy backward
def good_label_smoothing_backward(logits, targets, eps_ls, pad_id):
    V = logits.shape[-1]
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)                                          # (B, T, V)
    q = (1 - eps_ls) * np.eye(V)[targets] + eps_ls / V                     # (B, T, V)
    keep = (targets != pad_id)[..., None]                                  # (B, T, 1)
    return (p - q) * keep / keep.sum()


def _ls_variant(smooth="V", zero_pad=True, denom="real", sign=1.0, axis=-1, pad_is_zero=False):
    def fn(logits, targets, eps_ls, pad_id):
        B, T, V = logits.shape
        p = np.exp(logits - logits.max(axis, keepdims=True))
        p /= p.sum(axis, keepdims=True)
        one_hot = np.eye(V)[targets]
        q = {"V": (1 - eps_ls) * one_hot + eps_ls / V,
             "V-1": np.where(one_hot == 1, 1 - eps_ls, eps_ls / (V - 1)),
             "off-target": np.where(one_hot == 1, 1 - eps_ls, eps_ls / V),
             "none": one_hot}[smooth]
        keep = targets != (0 if pad_is_zero else pad_id)
        n = {"real": keep.sum(), "all": B * T, "none": 1}[denom]
        grad = sign * (p - q) / n
        return grad * keep[..., None] if zero_pad else grad
    return fn


def test_label_smoothing_reference_passes(capsys):
    assert check_label_smoothing_backward(good_label_smoothing_backward) is True
    assert "✔ Correct" in capsys.readouterr().out
    assert check_label_smoothing_backward(_ls_variant()) is True


def test_label_smoothing_package_backward_passes():
    from transformer_course.numpy import cross_entropy_backward, cross_entropy_forward

    def package(logits, targets, eps_ls, pad_id):
        _, cache = cross_entropy_forward(logits, targets, pad_id, eps_ls)
        return cross_entropy_backward(1.0, cache)

    assert check_label_smoothing_backward(package) is True


def test_label_smoothing_torch_autograd_passes():
    torch = pytest.importorskip("torch")

    def autograd(logits, targets, eps_ls, pad_id):
        z = torch.tensor(logits, requires_grad=True)
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), torch.tensor(targets).reshape(-1),
                                                 ignore_index=pad_id, label_smoothing=eps_ls)
        loss.backward()
        return z.grad

    assert check_label_smoothing_backward(autograd) is True


def test_label_smoothing_stub_is_not_attempted(capsys):
    def stub(logits, targets, eps_ls, pad_id):
        raise NotImplementedError

    assert check_label_smoothing_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _ls_off_by(amount):
    def fn(logits, targets, eps_ls, pad_id):
        return good_label_smoothing_backward(logits, targets, eps_ls, pad_id) * (1 + amount)
    return fn


def _ls_row_shift(logits, targets, eps_ls, pad_id):
    return good_label_smoothing_backward(logits, targets, eps_ls, pad_id) + (targets != pad_id)[..., None] * 0.01


def _ls_pad_leak(logits, targets, eps_ls, pad_id):
    return good_label_smoothing_backward(logits, targets, eps_ls, pad_id) + (targets == pad_id)[..., None] * 0.01


def _ls_hardcoded_input_one(logits, targets, eps_ls, pad_id):
    """Right on the first input only: the second input (eps_ls=0.2, pad_id=3) must catch it."""
    return good_label_smoothing_backward(logits, targets, 0.1, 0)


@pytest.mark.parametrize("fn, hint", [
    (_ls_variant(smooth="none"), "one-hot target: eps_ls was ignored"),
    (_ls_variant(smooth="V-1"), "V - 1 wrong classes"),
    (_ls_variant(smooth="off-target"), "target class also receives its share"),
    (_ls_variant(sign=-1.0), "sign is flipped"),
    (_ls_variant(zero_pad=False), "rows of padded positions must be 0: they do not enter"),
    (_ls_variant(zero_pad=False, denom="all"), "averaged over all B . T positions"),
    (_ls_variant(denom="all"), "divided by all B . T positions"),
    (_ls_variant(denom="none"), "division by n_tok is missing"),
    (_ls_variant(axis=-2), "axis -2"),
    (_ls_variant(axis=0), "axis 0"),
    (_ls_variant(pad_is_zero=True), "input 2 .*padding was taken to be id 0"),
    (_ls_pad_leak, "rows of padded positions must be 0, but one entry is 0.01"),
    (_ls_row_shift, "each real row should sum to 0"),
    (_ls_off_by(0.05), "25 of 30 values differ"),
    (_ls_hardcoded_input_one, "input 2"),
    (lambda z, y, e, p: good_label_smoothing_backward(z, y, e, p)[..., 0], "has 2 axes"),
    (lambda z, y, e, p: None, "forget to `return`"),
])
def test_label_smoothing_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint.replace("`", ".")):
        check_label_smoothing_backward(fn)


def test_label_smoothing_learner_cannot_spoil_inputs():
    def in_place(logits, targets, eps_ls, pad_id):
        result = good_label_smoothing_backward(logits, targets, eps_ls, pad_id)
        logits[...] = 0.0
        targets[...] = pad_id
        return result

    assert check_label_smoothing_backward(in_place) is True


# ---------------------------------------------------------------------------------------- softmax, primitive walk
def _walk(dr_fn=None, ds_fn=None, de_fn=None, dz_fn=None, dm_fn=None, dx_fn=None, drop=None):
    """The correct walk; each *_fn(locals) replaces one line with a mistake, `drop` leaves a key out."""
    def fn(dout, x):
        m = x.max(axis=-1, keepdims=True)
        z = x - m
        e = np.exp(z)
        s = e.sum(axis=-1, keepdims=True)
        r = 1 / s
        v = dict(dout=dout, x=x, m=m, z=z, e=e, s=s, r=r)
        v["dr"] = dr_fn(v) if dr_fn else (dout * e).sum(axis=-1, keepdims=True)
        v["ds"] = ds_fn(v) if ds_fn else -v["dr"] / s ** 2
        v["de"] = de_fn(v) if de_fn else dout * r + v["ds"]
        v["dz"] = dz_fn(v) if dz_fn else v["de"] * e
        v["dm"] = dm_fn(v) if dm_fn else -v["dz"].sum(axis=-1, keepdims=True)
        v["dx"] = dx_fn(v) if dx_fn else v["dz"] + (x == m) * v["dm"]
        out = {k: v[k] for k in ("dr", "ds", "de", "dz", "dm", "dx")}
        if drop:
            del out[drop]
        return out
    return fn


def test_softmax_walk_reference_passes(capsys):
    assert check_softmax_walk(_walk()) is True
    out = capsys.readouterr().out
    assert "✔ Correct" in out and "dm is 0 up to rounding" in out


def test_softmax_walk_without_the_max_route_passes():
    """dm is 0 up to rounding, so leaving out the max's route (dx = dz) is not an error."""
    assert check_softmax_walk(_walk(dx_fn=lambda v: v["dz"])) is True


def test_softmax_walk_torch_autograd_passes():
    torch = pytest.importorskip("torch")

    def autograd_walk(dout, x):
        xt = torch.tensor(x, requires_grad=True)
        m = xt.max(dim=-1, keepdim=True).values
        z = xt - m
        e = torch.exp(z)
        s = e.sum(dim=-1, keepdim=True)
        r = 1 / s
        p = e * r
        inter = {"dr": r, "ds": s, "de": e, "dz": z, "dm": m}
        for t in inter.values():
            t.retain_grad()
        (p * torch.tensor(dout)).sum().backward()
        out = {k: t.grad.numpy() for k, t in inter.items()}
        out["dx"] = xt.grad.numpy()
        return out

    assert check_softmax_walk(autograd_walk) is True


def test_softmax_walk_stub_is_not_attempted(capsys):
    def stub(dout, x):
        raise NotImplementedError

    assert check_softmax_walk(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda d, x: [1, 2], "should return a dict"),
    (_walk(drop="dz"), 'no key "dz"'),
    (_walk(dr_fn=lambda v: v["dout"] * v["e"]), "one number per row.*SUM"),
    (_walk(dr_fn=lambda v: (v["dout"] * v["e"]).sum(axis=-1)), "shapes of two arrays do not fit"),
    (_walk(dm_fn=lambda v: -v["dz"].sum(axis=-1), dx_fn=lambda v: v["dz"]), "dm .*keepdims=True"),
    (_walk(dr_fn=lambda v: (v["dout"] * v["e"] * v["r"]).sum(axis=-1, keepdims=True)), "next to r is e, not p"),
    (_walk(dr_fn=lambda v: v["dout"].sum(axis=-1, keepdims=True)), "OTHER factor"),
    (_walk(ds_fn=lambda v: v["dr"] / v["s"] ** 2), "sign is flipped"),
    (_walk(ds_fn=lambda v: -v["dr"] / v["s"]), "not -1/s"),
    (_walk(ds_fn=lambda v: -1 / v["s"] ** 2), "chain rule"),
    (_walk(de_fn=lambda v: v["dout"] * v["r"]), "e is used twice"),
    (_walk(de_fn=lambda v: v["ds"] + 0 * v["e"]), "first use of e is missing"),
    (_walk(de_fn=lambda v: v["dout"] * v["r"] + v["ds"] * v["e"]), "not ds \\* e"),
    (_walk(de_fn=lambda v: v["dout"] * v["r"] + v["ds"] / 5), "not a mean"),
    (_walk(dz_fn=lambda v: v["de"]), "local derivative of exp is missing"),
    (_walk(dz_fn=lambda v: v["de"] * v["z"]), "not z"),
    (_walk(dz_fn=lambda v: v["de"] * np.exp(v["x"])), "not exp\\(x\\)"),
    (_walk(dm_fn=lambda v: -v["dz"]), "dm.*one number per row"),
    (_walk(dm_fn=lambda v: v["dz"].sum(axis=-1, keepdims=True) + 1.0), "dm .*values differ"),
    (_walk(dx_fn=lambda v: -v["dz"]), "passes dz to x unchanged"),
    (_walk(dx_fn=lambda v: None), "dx is None"),
])
def test_softmax_walk_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_softmax_walk(fn)


def test_softmax_walk_learner_cannot_spoil_inputs():
    def in_place(dout, x):
        result = _walk()(dout, x)
        x[...] = 0.0
        dout[...] = 0.0
        return result

    assert check_softmax_walk(in_place) is True


# ---------------------------------------------------------------------------------------- linear layer backward
def good_linear_backward(dout, x, W):
    D_in, D_out = W.shape
    return dout @ W.T, x.reshape(-1, D_in).T @ dout.reshape(-1, D_out), dout.reshape(-1, D_out).sum(0)


def test_linear_reference_passes(capsys):
    assert check_linear_backward(good_linear_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_linear_einsum_and_torch_autograd_pass():
    torch = pytest.importorskip("torch")

    def einsum(dout, x, W):
        return dout @ W.T, np.einsum("bti,bto->io", x, dout), np.einsum("bto->o", dout)

    def autograd(dout, x, W):
        xt, Wt = torch.tensor(x, requires_grad=True), torch.tensor(W, requires_grad=True)
        bt = torch.zeros(W.shape[1], dtype=torch.float64, requires_grad=True)
        ((xt @ Wt + bt) * torch.tensor(dout)).sum().backward()
        return xt.grad, Wt.grad, bt.grad

    assert check_linear_backward(einsum) is True and check_linear_backward(autograd) is True


def test_linear_stub_is_not_attempted(capsys):
    def stub(dout, x, W):
        raise NotImplementedError

    assert check_linear_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _linear(dx=None, dW=None, db=None):
    def fn(dout, x, W):
        good = good_linear_backward(dout, x, W)
        return (dx(dout, x, W) if dx else good[0], dW(dout, x, W) if dW else good[1],
                db(dout, x, W) if db else good[2])
    return fn


@pytest.mark.parametrize("fn, hint", [
    (_linear(dx=lambda d, x, W: d @ W), "dx, input 1 .* the weight is not transposed"),
    (_linear(dW=lambda d, x, W: good_linear_backward(d, x, W)[1].T), "dW, input 1 .* is transposed"),
    (_linear(dW=lambda d, x, W: np.einsum("bti,bto->bio", x, d)), "one matrix per batch entry"),
    (_linear(dW=lambda d, x, W: x[0].T @ d[0]), "only batch entry 0"),
    (_linear(db=lambda d, x, W: d), "db, input 1 .* broadcast to every position"),
    (_linear(db=lambda d, x, W: d.sum(axis=0)), "summed over ALL leading axes"),
    (_linear(db=lambda d, x, W: d.reshape(-1, W.shape[1]).mean(0)), "SUM of dout over the positions, not the mean"),
    (_linear(db=lambda d, x, W: d[0].sum(0)), "db, .*only batch entry 0"),
    (_linear(dx=lambda d, x, W: d @ W.T + 0.01), "dx, input 1 .* values differ"),
    (lambda d, x, W: good_linear_backward(d, x, W)[:2], "the gradients of x, W and b"),
])
def test_linear_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_linear_backward(fn)


def test_linear_bug_seen_only_on_the_rectangular_input_names_it():
    """Right on the square input 1 only: the rectangular input 2 still catches it, and says which input."""
    def square_only(dout, x, W):
        dx, dW, db = good_linear_backward(dout, x, W)
        return dx, (dW if W.shape[0] == W.shape[1] else dW[:, :-1]), db

    with pytest.raises(ExerciseError, match=r"dW, input 2 \(D_in = 4, D_out = 5\), has shape"):
        check_linear_backward(square_only)


def test_linear_learner_cannot_spoil_inputs():
    def in_place(dout, x, W):
        result = tuple(a.copy() for a in good_linear_backward(dout, x, W))
        for a in (dout, x, W):
            a[...] = 0.0
        return result

    assert check_linear_backward(in_place) is True


# ---------------------------------------------------------------------------------------- embedding backward
def good_embedding_backward(dout, tokens, V):
    D = dout.shape[-1]
    dE = np.zeros((V, D))
    np.add.at(dE, tokens.reshape(-1), dout.reshape(-1, D) * np.sqrt(D))
    return dE


def test_embedding_reference_passes(capsys):
    assert check_embedding_backward(good_embedding_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_embedding_one_hot_matmul_passes():
    def one_hot(dout, tokens, V):
        D = dout.shape[-1]
        return np.eye(V)[tokens.reshape(-1)].T @ dout.reshape(-1, D) * np.sqrt(D)   # (V, B*T) @ (B*T, D)

    assert check_embedding_backward(one_hot) is True


def test_embedding_stub_is_not_attempted(capsys):
    def stub(dout, tokens, V):
        raise NotImplementedError

    assert check_embedding_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _overwrite(dout, tokens, V):
    D = dout.shape[-1]
    dE = np.zeros((V, D))
    dE[tokens] += dout * np.sqrt(D)
    return dE


def _overwrite_assign(dout, tokens, V):
    D = dout.shape[-1]
    dE = np.zeros((V, D))
    dE[tokens.reshape(-1)] = dout.reshape(-1, D) * np.sqrt(D)
    return dE


@pytest.mark.parametrize("fn, hint", [
    (_overwrite, "repeated tokens .* hold ONE position's gradient"),
    (_overwrite_assign, "np.add.at"),
    (lambda d, t, V: good_embedding_backward(d, t, V) / np.sqrt(d.shape[-1]), "sqrt.D. times too small"),
    (lambda d, t, V: good_embedding_backward(d, t, V) / d.shape[-1], "divided by sqrt.D."),
    (lambda d, t, V: good_embedding_backward(d, t, V) + 0.01, "tokens 2 and 4 do not occur"),
    (lambda d, t, V: good_embedding_backward(d, t, V).T, "dE has shape .4, 7., expected .7, 4."),
    (lambda d, t, V: None, "forget to `return`".replace("`", ".")),
])
def test_embedding_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_embedding_backward(fn)


# ---------------------------------------------------------------------------------------- encoder layer (capstone)
def good_encoder_layer_backward(dout, cache):
    from transformer_course.numpy import feedforward_backward, layernorm_backward, self_attention_backward

    dh2, dffn = feedforward_backward(dout, cache["ffn"])                 # (B, T, D): at LN2's output
    dx1_branch, dnorm2 = layernorm_backward(dh2, cache["norm2"])         # (B, T, D): at LN2's input
    dx1 = dout + dx1_branch                                              # identity path of the FFN block
    dh1, dattn = self_attention_backward(dx1, cache["self_attn"])        # (B, T, D)
    dx_branch, dnorm1 = layernorm_backward(dh1, cache["norm1"])          # (B, T, D)
    return dx1 + dx_branch, {"self_attn": dattn, "ffn": dffn, "norm1": dnorm1, "norm2": dnorm2}


def test_encoder_layer_reference_passes(capsys):
    assert check_encoder_layer_backward(good_encoder_layer_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_encoder_layer_stub_is_not_attempted(capsys):
    def stub(dout, cache):
        raise NotImplementedError

    assert check_encoder_layer_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _encoder_mistake(**kw):
    from transformer_course.exercises.backprop import _encoder_layer_variant

    return lambda dout, cache: _encoder_layer_variant(dout, cache, **kw)


def _missing_attn_residual(dout, cache):
    from transformer_course.numpy import feedforward_backward, layernorm_backward, self_attention_backward

    dh2, dffn = feedforward_backward(dout, cache["ffn"])
    dx1_branch, dnorm2 = layernorm_backward(dh2, cache["norm2"])
    dx1 = dout + dx1_branch
    dh1, dattn = self_attention_backward(dx1, cache["self_attn"])
    dx_branch, dnorm1 = layernorm_backward(dh1, cache["norm1"])
    return dx_branch, {"self_attn": dattn, "ffn": dffn, "norm1": dnorm1, "norm2": dnorm2}   # forgot + dx1


@pytest.mark.parametrize("fn, hint", [
    (_encoder_mistake(skip_ffn=True), "feed-forward block's residual gradient is missing"),
    (_missing_attn_residual, "attention block's residual gradient is missing"),
    (_encoder_mistake(skip_ffn=True, skip_attn=True), "both residual gradients are missing"),
    (_encoder_mistake(norm_first_in_backward=True), "LayerNorm's backward ran on the wrong gradient"),
    (_encoder_mistake(swap_norms=True), "the other one's cache"),
    (_encoder_mistake(post_ln=True), "post-LN block's backward"),
    (_encoder_mistake(blocks_reversed=True), "wrong order"),
    (lambda dout, cache: good_encoder_layer_backward(dout, cache)[0], "return a pair"),
    (lambda dout, cache: (good_encoder_layer_backward(dout, cache)[0], {"ffn": {}}), "grads has no"),
])
def test_encoder_layer_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_encoder_layer_backward(fn)


def test_encoder_layer_unknown_error_names_the_array():
    def off(dout, cache):
        dx, grads = good_encoder_layer_backward(dout, cache)
        return dx * 1.01, grads

    with pytest.raises(ExerciseError, match="dx"):
        check_encoder_layer_backward(off)


# ---------------------------------------------------------------------------------------- merging heads backward
def good_merge_heads_backward(d_merged, n_heads):
    B, T, D = d_merged.shape
    return d_merged.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3)


def test_merge_heads_reference_passes(capsys):
    assert check_merge_heads_backward(good_merge_heads_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_merge_heads_index_loop_and_torch_autograd_pass():
    torch = pytest.importorskip("torch")

    def loop(d_merged, n_heads):
        B, T, D = d_merged.shape
        Dh = D // n_heads
        d_heads = np.zeros((B, n_heads, T, Dh))
        for h in range(n_heads):                         # head h received features h*Dh .. (h+1)*Dh - 1
            d_heads[:, h] = d_merged[:, :, h * Dh:(h + 1) * Dh]
        return d_heads

    def autograd(d_merged, n_heads):
        B, T, D = d_merged.shape
        heads = torch.zeros((B, n_heads, T, D // n_heads), dtype=torch.float64, requires_grad=True)
        (heads.transpose(1, 2).reshape(B, T, D) * torch.tensor(d_merged)).sum().backward()
        return heads.grad

    assert check_merge_heads_backward(loop) is True and check_merge_heads_backward(autograd) is True


def test_merge_heads_stub_is_not_attempted(capsys):
    def stub(d_merged, n_heads):
        raise NotImplementedError

    assert check_merge_heads_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _sizes(d, H):
    B, T, D = d.shape
    return B, T, H, D // H


@pytest.mark.parametrize("fn, hint", [
    (lambda d, H: d.reshape(_sizes(d, H)[0], H, _sizes(d, H)[1], -1), "plain reshape of d_merged"),
    (lambda d, H: d.reshape(_sizes(d, H)).transpose(0, 2, 3, 1), "wrong axes were transposed"),
    (lambda d, H: d.reshape(*_sizes(d, H)[:2], -1, H).transpose(0, 3, 1, 2), r"split as \(Dh, H\)"),
    (lambda d, H: d.reshape(_sizes(d, H)), "the transpose is missing"),
    (lambda d, H: d.copy(), "shape of the merge's OUTPUT"),
    (lambda d, H: good_merge_heads_backward(d, H).swapaxes(1, 3),
     r"has shape \(2, 5, 4, 3\), expected .* = \(2, 3, 4, 5\)"),
    (lambda d, H: good_merge_heads_backward(d, H) * 2, "120 of 120 values differ"),
    (lambda d, H: good_merge_heads_backward(d, H) * (1 if H == 3 else 2), r"input 2 \(B=1, T=3, H=2, Dh=4\)"),
    (lambda d, H: None, "forget to .return."),
])
def test_merge_heads_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_merge_heads_backward(fn)


def test_merge_heads_learner_cannot_spoil_inputs():
    def in_place(d_merged, n_heads):
        result = good_merge_heads_backward(d_merged, n_heads).copy()
        d_merged[...] = 0.0
        return result

    assert check_merge_heads_backward(in_place) is True
