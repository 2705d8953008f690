"""Weights NumPy <-> PyTorch. The only module that knows both layouts.

NumPy stores a linear map as W (in, out) and b (out,), so y = x @ W + b; nn.Linear stores weight (out, in)
and bias, so y = x @ weight.T + bias. The parameter trees have the same nesting: a submodule `W_q`
(nn.Linear) becomes the keys "W_q" and "b_q" of its parent's dict, an nn.ModuleList becomes a list, a
Parameter keeps its name (E, gamma, beta, P), every other submodule becomes a nested dict under its name.
Recurrent layers (for Bahdanau's model) follow the NumPy `bahdanau` module: an nn.GRUCell becomes
{W_ih (in, 3h), W_hh (h, 3h), b_ih, b_hh} (gate columns [r | z | n], as torch), a one-layer nn.GRU becomes that
dict, or {"forward": ..., "backward": ...} when bidirectional; an nn.Embedding becomes {"E": weight}.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..utils import to_numpy

__all__ = ["torch_to_numpy", "numpy_to_torch"]


def _bias_key(weight_key: str) -> str:
    """W_q -> b_q, W_1 -> b_1, W_out -> b_out: the paper's naming of a projection's bias."""
    return "b" + weight_key[1:] if weight_key.startswith("W") else weight_key + "_bias"


def _special_layout(module: nn.Module) -> dict | None:
    """{numpy key: (torch parameter, transpose?)} or nested dicts of them, for modules with their own layout."""
    if isinstance(module, nn.Embedding):
        return {"E": (module.weight, False)}
    if isinstance(module, nn.GRUCell):
        return {"W_ih": (module.weight_ih, True), "W_hh": (module.weight_hh, True),
                "b_ih": (module.bias_ih, False), "b_hh": (module.bias_hh, False)}
    if isinstance(module, nn.GRU):
        if module.num_layers != 1 or not module.bias:
            raise ValueError("model: only one-layer nn.GRU with biases converts (as the NumPy bahdanau module)")

        def direction(suffix):
            return {"W_ih": (getattr(module, "weight_ih_l0" + suffix), True),
                    "W_hh": (getattr(module, "weight_hh_l0" + suffix), True),
                    "b_ih": (getattr(module, "bias_ih_l0" + suffix), False),
                    "b_hh": (getattr(module, "bias_hh_l0" + suffix), False)}
        if module.bidirectional:
            return {"forward": direction(""), "backward": direction("_reverse")}
        return direction("")
    return None


def _layout_to_numpy(layout: dict, dtype) -> dict:
    return {key: (_layout_to_numpy(value, dtype) if isinstance(value, dict)
                  else (_to_array(value[0], dtype).T.copy() if value[1] else _to_array(value[0], dtype)))
            for key, value in layout.items()}


def _layout_from_numpy(layout: dict, params, path: str) -> None:
    if not isinstance(params, dict):
        raise TypeError(f"{path}: expected a dict of parameters, got {type(params).__name__}")
    extra = sorted(set(params) - set(layout))
    if extra:
        raise ValueError(f"{path}: unexpected keys {extra}")
    for key, value in layout.items():
        if isinstance(value, dict):
            _layout_from_numpy(value, _get(params, key, path), f"{path}[{key!r}]")
        else:
            _copy(value[0], _get(params, key, path), f"{path}[{key!r}]", transpose=value[1])


def torch_to_numpy(model: nn.Module, dtype=None) -> dict:
    """The parameters of `model` as the NumPy twin's nested dict of arrays (Linear weights transposed)."""
    special = _special_layout(model)
    if special is not None:
        return _layout_to_numpy(special, dtype)
    params = {}
    for name, param in model.named_parameters(recurse=False):
        params[name] = _to_array(param, dtype)
    for name, child in model.named_children():
        if child is None:
            continue
        if _special_layout(child) is not None:
            params[name] = torch_to_numpy(child, dtype)
        elif isinstance(child, nn.Linear):
            params[name] = _to_array(child.weight, dtype).T.copy()  # (out, in) -> (in, out)
            if child.bias is not None:
                params[_bias_key(name)] = _to_array(child.bias, dtype)
        elif isinstance(child, nn.ModuleList):
            params[name] = [torch_to_numpy(layer, dtype) for layer in child]
        elif any(True for _ in child.parameters()):      # skip parameter-free modules (dropout, positions)
            params[name] = torch_to_numpy(child, dtype)
    return params


def _to_array(tensor: torch.Tensor, dtype) -> np.ndarray:
    array = to_numpy(tensor)
    return array.astype(dtype) if dtype is not None else array.copy()


def numpy_to_torch(params: dict, model: nn.Module, path: str = "params") -> nn.Module:
    """Copy the NumPy twin's parameters into `model` (in place, keeping the model's dtype and device).

    Every parameter of the model must be present with the right shape; a missing key, an extra key or a
    wrong shape raises a ValueError that names the key.
    """
    if not isinstance(params, dict):
        raise TypeError(f"{path}: expected a dict of parameters, got {type(params).__name__}")
    special = _special_layout(model)
    if special is not None:
        with torch.no_grad():
            _layout_from_numpy(special, params, path)
        return model
    expected = set()
    with torch.no_grad():
        for name, param in model.named_parameters(recurse=False):
            expected.add(name)
            _copy(param, _get(params, name, path), f"{path}[{name!r}]", transpose=False)
        for name, child in model.named_children():
            if child is None:
                continue
            if _special_layout(child) is not None:
                expected.add(name)
                numpy_to_torch(_get(params, name, path), child, f"{path}[{name!r}]")
            elif isinstance(child, nn.Linear):
                expected.add(name)
                _copy(child.weight, _get(params, name, path), f"{path}[{name!r}]", transpose=True)
                if child.bias is not None:
                    expected.add(_bias_key(name))
                    _copy(child.bias, _get(params, _bias_key(name), path), f"{path}[{_bias_key(name)!r}]", False)
            elif isinstance(child, nn.ModuleList):
                expected.add(name)
                layers = _get(params, name, path)
                if len(layers) != len(child):
                    raise ValueError(f"{path}[{name!r}]: expected {len(child)} layers, got {len(layers)}")
                for i, (layer_params, layer) in enumerate(zip(layers, child)):
                    numpy_to_torch(layer_params, layer, f"{path}[{name!r}][{i}]")
            elif any(True for _ in child.parameters()):
                expected.add(name)
                numpy_to_torch(_get(params, name, path), child, f"{path}[{name!r}]")
    extra = sorted(set(params) - expected)
    if extra:
        raise ValueError(f"{path}: unexpected keys {extra} (the model has no such parameters; check the config)")
    return model


def _get(params: dict, key: str, path: str):
    if key not in params:
        raise ValueError(f"{path}: missing key {key!r}; present: {sorted(params)}")
    return params[key]


def _copy(param: torch.Tensor, array, where: str, transpose: bool) -> None:
    value = torch.as_tensor(np.asarray(array))
    if transpose:
        value = value.T                                  # (in, out) -> (out, in)
    if tuple(value.shape) != tuple(param.shape):
        raise ValueError(f"{where}: expected shape {tuple(param.T.shape) if transpose else tuple(param.shape)}, "
                         f"got {tuple(np.shape(array))}")
    param.copy_(value.to(dtype=param.dtype, device=param.device))
