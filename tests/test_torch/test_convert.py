"""Weights PyTorch -> NumPy -> PyTorch, layouts and errors (parity of the maths is in tests/test_parity)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_helpers import SMALL

from transformer_course.torch.attention import MultiHeadAttention
from transformer_course.torch.convert import numpy_to_torch, torch_to_numpy
from transformer_course.torch.transformer import Transformer


@pytest.mark.parametrize("overrides", [{}, {"norm_first": True, "positional": "learned",
                                             "tie_output_embedding": False}])
def test_round_trip_is_exact(overrides):
    torch.manual_seed(0)
    model = Transformer(SMALL.replace(**overrides))
    params = torch_to_numpy(model)
    layer = params["encoder"]["layers"][0]
    assert set(layer) == {"self_attn", "ffn", "norm1", "norm2"}
    assert set(layer["self_attn"]) == {"W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o"}
    assert set(params["decoder"]["layers"][1]) == {"self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3"}
    assert params["src_embedding"]["E"].shape == (SMALL.src_vocab_size, SMALL.d_model)
    np.testing.assert_array_equal(layer["ffn"]["W_1"], model.encoder.layers[0].ffn.W_1.weight.detach().numpy().T)
    torch.manual_seed(1)
    other = Transformer(SMALL.replace(**overrides))
    numpy_to_torch(params, other)
    for (name, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        assert torch.equal(a, b), name


def test_float64_conversion_and_errors():
    mha = MultiHeadAttention(8, 2)
    params = torch_to_numpy(mha, dtype=np.float64)
    assert params["W_q"].dtype == np.float64 and params["W_q"].shape == (8, 8)
    bad = dict(params, W_q=np.zeros((8, 4)))
    with pytest.raises(ValueError, match=r"params\['W_q'\]: expected shape \(8, 8\), got \(8, 4\)"):
        numpy_to_torch(bad, mha)
    missing = {k: v for k, v in params.items() if k != "b_o"}
    with pytest.raises(ValueError, match="missing key 'b_o'"):
        numpy_to_torch(missing, mha)
    with pytest.raises(ValueError, match=r"unexpected keys \['extra'\]"):
        numpy_to_torch(dict(params, extra=np.zeros(3)), mha)
