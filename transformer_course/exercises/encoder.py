"""Checks for chapter 7 (the encoder): layer normalisation, the position-wise feed-forward network, the
residual wrapper around a sublayer (post-LN or pre-LN) and a whole encoder layer assembled from its submodules.

Each check calls the learner's function on small fixed float64 inputs, compares with a reference written out
here (independent of the package code the chapter teaches; the residual check compares with the package's
`residual`, which the chapter shows), and recognises the usual slips: normalising over
the wrong axis, the unbiased variance, a forgotten epsilon or gain/bias; a missing or misplaced ReLU, missing
biases in the feed-forward network; the norm in the wrong place, a missing residual, dropout after the addition;
in a whole layer, the sublayers in the wrong order, one LayerNorm used twice and the padding mask ignored (the
encoder-layer check compares with the package's own `EncoderLayer.forward`).
"""
from __future__ import annotations

import functools

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_layer_norm", "check_feed_forward", "check_residual", "check_encoder_layer"]


# ----------------------------------------------------------------------------------------------------------
# references and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _layer_norm(x, gamma, beta, eps=1e-5, axis=-1, ddof=0, use_eps=True, affine=True, eps_outside=False):
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True, ddof=ddof)
    if eps_outside:
        xhat = (x - mean) / (np.sqrt(var) + eps)
    else:
        xhat = (x - mean) / np.sqrt(var + (eps if use_eps else 0.0))
    return xhat * gamma + beta if affine else xhat


def _relu(x):
    return np.maximum(x, 0.0)


def _feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=True, relu_outside=False, biases=True,
                  relu_before_bias=False):
    b_1 = b_1 if biases else 0.0
    b_2 = b_2 if biases else 0.0
    if relu_before_bias:
        h = _relu(x @ W_1) + b_1
    else:
        h = x @ W_1 + b_1
        h = _relu(h) if relu_inside else h
    out = h @ W_2 + b_2
    return _relu(out) if relu_outside else out




# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_layer_norm(fn):
    """Check `fn(x, gamma, beta, eps=1e-5)` = gamma * (x - mean) / sqrt(var + eps) + beta over the last axis.

    x: (B, T, D); gamma, beta: (D,); the variance is the biased one (divide by D), as in torch.nn.LayerNorm.
    """
    rng = np.random.default_rng(2016)
    B, T, D = 2, 3, 6
    x = rng.normal(size=(B, T, D))
    x[0, 1] = 0.5 + 0.004 * rng.normal(size=D)     # a row with a tiny variance: there eps matters
    gamma = rng.uniform(0.5, 1.5, size=D)
    beta = rng.normal(scale=0.3, size=D)
    eps = 1e-5
    got = as_numpy(call_learner(fn, x, gamma, beta, eps=eps), "fn(x, gamma, beta, eps)")
    expected = _layer_norm(x, gamma, beta, eps)
    hints = [
        (_layer_norm(x, gamma, beta, eps, axis=0), "the statistics were taken over axis 0 (the batch): "
                                                   "LayerNorm normalises each position's vector over its D "
                                                   "features, the LAST axis (mean(-1, keepdims=True))."),
        (_layer_norm(x, gamma, beta, eps, axis=1), "the statistics were taken over axis 1 (the positions): "
                                                   "LayerNorm normalises over the D features of one position, "
                                                   "the LAST axis."),
        (_layer_norm(x, gamma, beta, eps, axis=(0, 1)), "the statistics were shared by all positions of the "
                                                        "batch, as BatchNorm does; LayerNorm computes one mean "
                                                        "and variance per position, over the last axis."),
        (_layer_norm(x, gamma, beta, eps, ddof=1), "this is the UNBIASED variance (divided by D - 1). "
                                                   "LayerNorm uses the biased one, divided by D: np.var's "
                                                   "default (ddof=0), or unbiased=False in torch."),
        (_layer_norm(x, gamma, beta, eps, use_eps=False), "eps is missing: divide by sqrt(var + eps), which "
                                                          "keeps a (nearly) constant row from dividing by "
                                                          "(nearly) zero. Look at row [0, 1] of x."),
        (_layer_norm(x, gamma, beta, eps, eps_outside=True), "eps was added to the standard deviation; "
                                                             "torch.nn.LayerNorm adds it to the VARIANCE: "
                                                             "(x - mean) / sqrt(var + eps)."),
        (_layer_norm(x, gamma, beta, eps, affine=False), "the normalisation is right but gamma and beta were "
                                                         "not applied: return xhat * gamma + beta."),
        (_layer_norm(x, gamma, beta, eps) - beta, "beta is missing: return xhat * gamma + beta."),
        (_layer_norm(x, gamma, beta, eps, affine=False) + beta, "gamma is missing: return xhat * gamma + beta."),
    ]
    compare_arrays(got, expected, "your layer norm", atol=1e-7, rtol=1e-6, hints=hints)
    means = (got - beta) / gamma
    if not np.allclose(means.mean(-1), 0.0, atol=1e-6):
        raise ExerciseError("before gamma and beta, every row should have mean 0.")
    passed("every position's vector is normalised over its features (biased variance, eps inside the "
           "square root), then scaled by gamma and shifted by beta.")


@exercise_check
def check_feed_forward(fn):
    """Check `fn(x, W_1, b_1, W_2, b_2)` = max(0, x W_1 + b_1) W_2 + b_2, applied at every position.

    x: (B, T, D); W_1: (D, F); b_1: (F,); W_2: (F, D); b_2: (D,). Vectors are rows: x @ W_1, not W_1 @ x.
    """
    rng = np.random.default_rng(2017)
    B, T, D, F = 2, 4, 3, 12
    x = rng.normal(size=(B, T, D))
    W_1 = rng.normal(scale=0.7, size=(D, F))
    b_1 = rng.normal(scale=0.5, size=F)
    W_2 = rng.normal(scale=0.5, size=(F, D))
    b_2 = rng.normal(scale=0.5, size=D)
    try:
        result = call_learner(fn, x, W_1, b_1, W_2, b_2)
    except ValueError as err:
        raise ExerciseError(f"your function raised ValueError: {err}. Shapes: x (B, T, D) = {x.shape}, "
                            f"W_1 (D, F) = {W_1.shape}, W_2 (F, D) = {W_2.shape}; vectors are rows, so the "
                            "first product is x @ W_1.") from err
    got = as_numpy(result, "fn(x, W_1, b_1, W_2, b_2)")
    expected = _feed_forward(x, W_1, b_1, W_2, b_2)
    hints = [
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=False), "there is no ReLU: without it the two "
                                                                  "linear maps collapse into one. Apply "
                                                                  "max(0, .) to x @ W_1 + b_1."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_outside=True), "a ReLU was applied to the OUTPUT too; the "
                                                                  "paper's FFN has one ReLU, between the two "
                                                                  "linear maps, and returns h @ W_2 + b_2 as "
                                                                  "is (it may be negative)."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=False, relu_outside=True),
         "the ReLU is in the wrong place: it belongs between the layers, max(0, x @ W_1 + b_1) @ W_2 + b_2."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, biases=False), "the biases b_1 and b_2 are missing."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_before_bias=True), "b_1 was added after the ReLU; add it "
                                                                      "before: max(0, x @ W_1 + b_1)."),
        (_feed_forward(x, W_1, b_1, W_2, 0.0 * b_2), "b_2 is missing: the second layer is h @ W_2 + b_2."),
        (_feed_forward(x, W_1, 0.0 * b_1, W_2, b_2), "b_1 is missing: the first layer is x @ W_1 + b_1."),
    ]
    compare_arrays(got, expected, "your feed-forward output", atol=1e-8, rtol=1e-7, hints=hints)
    passed("max(0, x W_1 + b_1) W_2 + b_2, the same two-layer network at every position.")


@exercise_check
def check_residual(fn):
    """Check `fn(x, sublayer, norm, norm_first=False, dropout=0.0, training=False)`: the sublayer wrapped in a
    residual connection, post-LN `norm(x + Dropout(sublayer(x)))` or pre-LN `x + Dropout(sublayer(norm(x)))`,
    dropout only while training, against the package's `transformer_course.torch.sublayer.residual`.

    x: a torch tensor (B, S, D); sublayer and norm: callables (B, S, D) -> (B, S, D). With dropout, the check fixes
    torch's seed and expects one F.dropout (or nn.Dropout) call, on the sublayer's output.
    """
    import torch
    import torch.nn.functional as F

    from ..torch.sublayer import residual

    gen = torch.Generator().manual_seed(2016)
    B, S, D = 2, 3, 6
    x = 2.0 + 1.5 * torch.randn(B, S, D, generator=gen, dtype=torch.float64)       # (B, S, D): not normalised
    W = torch.randn(D, D, generator=gen, dtype=torch.float64) / D ** 0.5           # (D, D)
    norm = torch.nn.LayerNorm(D).double()
    with torch.no_grad():
        norm.weight.copy_(0.5 + torch.rand(D, generator=gen, dtype=torch.float64))
        norm.bias.copy_(0.3 * torch.randn(D, generator=gen, dtype=torch.float64))

    def sublayer(h):                                     # (B, S, D) -> (B, S, D): nonlinear, with an offset
        return torch.tanh(h @ W) + 0.5

    def run(f, norm_first, dropout=0.0, training=False, seed=0):
        """f's output on a fresh copy of x, with torch's global seed fixed (the caller's random state is kept)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            with torch.no_grad():
                return f(x.clone(), sublayer, norm, norm_first=norm_first, dropout=dropout, training=training)

    def learner(norm_first, dropout=0.0, training=False, seed=0):
        return call_learner(run, fn, norm_first, dropout, training, seed)

    def wrong(f, seed=0):
        """What a slip `f()` (no arguments) returns under the same seed, as an array."""
        return run(lambda *args, **kwargs: f(), False, seed=seed).numpy()

    drop = F.dropout
    layouts = {False: "post-LN (norm_first=False)", True: "pre-LN (norm_first=True)"}
    # 1. no dropout: where the norm goes, and the residual itself
    for norm_first, layout in layouts.items():
        got = learner(norm_first)
        expected = run(residual, norm_first)
        other = run(residual, not norm_first)
        hints = [(other, f"this is the other layout: {layout} is "
                  + ("x + sublayer(norm(x)), the norm on the sublayer's input only." if norm_first else
                     "norm(x + sublayer(x)), the norm after the addition."))]
        if norm_first:
            hints += [(sublayer(norm(x)), "the residual is missing: pre-LN returns x + sublayer(norm(x)), the "
                                          "input added back to the sublayer's output."),
                      (norm(x) + sublayer(norm(x)), "the residual adds the NORMALISED x; pre-LN adds the "
                                                   "sublayer's output to the un-normalised x: x + sublayer(norm(x))."),
                      (norm(x + sublayer(norm(x))), "pre-LN has no norm after the addition: return "
                                                   "x + sublayer(norm(x)); only the sublayer's input is normalised."),
                      (x + sublayer(x), "the norm is missing: pre-LN applies it to the sublayer's input, "
                                        "x + sublayer(norm(x)).")]
        else:
            hints += [(norm(sublayer(x)), "the residual is missing: post-LN normalises x + sublayer(x), the input "
                                          "added back to the sublayer's output."),
                      (x + sublayer(x), "the norm is missing: post-LN returns norm(x + sublayer(x))."),
                      (norm(x) + sublayer(norm(x)), "this normalises before the sublayer and adds norm(x); post-LN "
                                                   "is norm(x + sublayer(x)), the norm after the addition.")]
        with torch.no_grad():
            hints = [(h.numpy(), message) for h, message in hints]
        compare_arrays(got, expected.numpy(), f"your {layout} output", atol=1e-8, rtol=1e-7, hints=hints)
    # 2. dropout only while training
    for norm_first, layout in layouts.items():
        got = learner(norm_first, dropout=0.5, training=False)
        always = wrong(lambda nf=norm_first: x + drop(sublayer(norm(x)), 0.5) if nf
                       else norm(x + drop(sublayer(x), 0.5)))
        compare_arrays(got, run(residual, norm_first).numpy(), f"your {layout} output with training=False",
                       atol=1e-8, rtol=1e-7,
                       hints=[(always, "dropout was applied with training=False; in evaluation dropout is the "
                                       "identity: F.dropout(sub, dropout, training=training).")])
    # 3. where the dropout goes, with the seed fixed: on the sublayer's output, before the addition
    for norm_first, layout in layouts.items():
        got = learner(norm_first, dropout=0.5, training=True, seed=7)
        expected = run(residual, norm_first, 0.5, True, seed=7)
        slip = functools.partial(wrong, seed=7)
        with torch.no_grad():
            if norm_first:
                hints = [(slip(lambda: drop(x + sublayer(norm(x)), 0.5)), "the dropout is after the addition: it "
                          "then drops entries of x as well. Drop only the sublayer's output, before adding it: "
                          "x + F.dropout(sublayer(norm(x)), dropout)."),
                         (slip(lambda: x + sublayer(norm(drop(x, 0.5)))), "the dropout is on the sublayer's "
                          "input; the paper drops its OUTPUT, before the addition.")]
            else:
                hints = [(slip(lambda: norm(drop(x + sublayer(x), 0.5))), "the dropout is after the addition: it "
                          "then drops entries of x as well. Drop only the sublayer's output, before adding it: "
                          "norm(x + F.dropout(sublayer(x), dropout))."),
                         (slip(lambda: drop(norm(x + sublayer(x)), 0.5)), "the dropout is after the norm; the "
                          "paper drops the sublayer's output, before the addition and the norm."),
                         (slip(lambda: norm(x + sublayer(drop(x, 0.5)))), "the dropout is on the sublayer's "
                          "input; the paper drops its OUTPUT, before the addition.")]
            hints.append((run(residual, norm_first).numpy(), "no dropout was applied with training=True and "
                          "dropout=0.5: drop the sublayer's output, F.dropout(sub, dropout, training=training)."))
        try:
            compare_arrays(got, expected.numpy(), f"your {layout} output with dropout", atol=1e-8, rtol=1e-7,
                           hints=hints)
        except ExerciseError as err:
            if "is not right yet" in str(err):
                raise
            raise ExerciseError(f"{err} The check fixes torch's seed and expects one F.dropout(sub, dropout) "
                                "(or nn.Dropout) call on the sublayer's output, before the addition.") from None
    passed("post-LN norm(x + Dropout(sublayer(x))) and pre-LN x + Dropout(sublayer(norm(x))), with dropout only "
           "while training, as the package's `residual`.")


def _encoder_layer_slip(x, layer, mask, norm_first=None, order=("attention", "ffn"), residuals=(True, True),
                        norms=None):
    """One encoder layer written out with the submodules of `layer` (eval mode: no dropout), with one slip:
    norm_first overrides the layer's placement, order puts the FFN first, residuals drops a sublayer's residual
    (in the order the sublayers run), norms picks the LayerNorm of each sublayer, mask=None ignores the padding."""
    import torch

    norm_first = layer.norm_first if norm_first is None else norm_first
    norms = (layer.norm1, layer.norm2) if norms is None else norms
    sublayers = {"attention": lambda h: layer.self_attn(h, h, mask, need_weights=False)[0],   # (B, S, D)
                 "ffn": layer.ffn}                                                             # (B, S, D)
    with torch.no_grad():
        for name, keep, norm in zip(order, residuals, norms):
            sublayer = sublayers[name]
            if norm_first:
                sub = sublayer(norm(x))                                   # (B, S, D)
                x = x + sub if keep else sub                              # (B, S, D)
            else:
                sub = sublayer(x)                                         # (B, S, D)
                x = norm(x + sub) if keep else norm(sub)                  # (B, S, D)
    return x.numpy()


@exercise_check
def check_encoder_layer(fn):
    """Check `fn(x, layer, mask=None)`: one encoder layer's forward pass, written with the submodules of the
    package's `EncoderLayer` `layer` (`self_attn`, `ffn`, `norm1`, `norm2`, and `norm_first` for the placement),
    against the layer's own forward.

    x: a torch tensor (B, S, D); mask: a bool tensor (B, 1, S), True at the real tokens; the layer is in eval mode,
    so there is no dropout. `fn` returns the layer's output (B, S, D), without the attention weights.
    """
    import torch

    from ..torch.encoder import EncoderLayer
    from ..torch.masks import lengths_to_mask

    B, S, D, H, F_inner = 2, 5, 8, 2, 16
    with torch.random.fork_rng(devices=[]):                       # the caller's random state is kept
        torch.manual_seed(2017)
        x = 1.0 + 2.0 * torch.randn(B, S, D, dtype=torch.float64)  # (B, S, D): far from normalised
        layers = {}
        for norm_first in (False, True):
            layer = EncoderLayer(D, H, F_inner, dropout=0.1, norm_first=norm_first).double().eval()
            with torch.no_grad():                                 # random weights everywhere: zero biases and unit
                for name, param in layer.named_parameters():     # gains would hide a LayerNorm used twice
                    if name.endswith("gamma"):
                        param.copy_(0.5 + torch.rand_like(param))
                    else:
                        param.copy_(0.4 * torch.randn_like(param))
            layers[norm_first] = layer
    mask = lengths_to_mask(torch.tensor([S, 3]), S)               # (B, 1, S): the second sequence is padded
    layouts = {False: "post-LN (norm_first=False, the paper)", True: "pre-LN (norm_first=True)"}
    for norm_first, layer in layers.items():
        layout = layouts[norm_first]
        with torch.no_grad():
            expected = layer(x.clone(), mask)[0].numpy()           # (B, S, D): the package's own forward
            result = call_learner(fn, x.clone(), layer, mask=mask)
        if isinstance(result, (tuple, list)):
            raise ExerciseError(f"your function returned a {type(result).__name__}; return only the layer's "
                                "output, a tensor (B, S, D) (the package's layer also returns the attention "
                                "weights, the exercise does not).")
        got = as_numpy(result, f"my_encoder_layer on the {layout} layer")
        add_back = "x + sublayer(norm(x))" if norm_first else "norm(x + sublayer(x))"
        hints = [
            (_encoder_layer_slip(x, layer, mask, norm_first=not norm_first),
             f"the LayerNorms are in the other layout's place; this layer is {layout}: each sublayer is "
             f"{add_back}. Read layer.norm_first."),
            (_encoder_layer_slip(x, layer, mask, residuals=(False, True)),
             f"the self-attention sublayer has no residual: add its input back, {add_back}."),
            (_encoder_layer_slip(x, layer, mask, residuals=(True, False)),
             f"the feed-forward sublayer has no residual: add its input back, {add_back}."),
            (_encoder_layer_slip(x, layer, mask, residuals=(False, False)),
             f"neither sublayer has a residual: each one is {add_back}."),
            (_encoder_layer_slip(x, layer, mask, order=("ffn", "attention"), norms=(layer.norm1, layer.norm2)),
             "the feed-forward network runs before the self-attention; an encoder layer runs self-attention "
             "first (with norm1), then the FFN (with norm2)."),
            (_encoder_layer_slip(x, layer, mask, order=("ffn", "attention"), norms=(layer.norm2, layer.norm1)),
             "the feed-forward network runs before the self-attention; an encoder layer runs self-attention "
             "first (with norm1), then the FFN (with norm2)."),
            (_encoder_layer_slip(x, layer, mask, norms=(layer.norm1, layer.norm1)),
             "the same LayerNorm (norm1) is used around both sublayers; each sublayer has its own, with its own "
             "gamma and beta: norm1 around the self-attention, norm2 around the FFN."),
            (_encoder_layer_slip(x, layer, mask, norms=(layer.norm2, layer.norm2)),
             "the same LayerNorm (norm2) is used around both sublayers; each sublayer has its own, with its own "
             "gamma and beta: norm1 around the self-attention, norm2 around the FFN."),
            (_encoder_layer_slip(x, layer, mask, norms=(layer.norm2, layer.norm1)),
             "the two LayerNorms are swapped: norm1 goes with the self-attention, norm2 with the FFN."),
            (_encoder_layer_slip(x, layer, None),
             "the padding mask is ignored: the second sequence has 3 real tokens and 2 of padding, and its real "
             "tokens attended to the padding. Pass the mask to the self-attention, "
             "layer.self_attn(h, h, mask)."),
        ]
        compare_arrays(got, expected, f"your {layout} output", atol=1e-5, rtol=1e-5, hints=hints)
    passed("self-attention then the feed-forward network, each in its residual wrapper with its own LayerNorm, "
           "post-LN and pre-LN, with the padding mask, as the package's EncoderLayer.")
