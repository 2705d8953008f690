"""The package skeleton: config dataclasses and presets, set_seed, show_source/show_diff, the course style."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from transformer_course import ModelConfig, TrainConfig, get_preset, get_train_preset, set_seed
from transformer_course.config import MODEL_PRESETS, TRAIN_PRESETS
from transformer_course.display import show_diff, show_source

# Vaswani et al. (2017), Table 3: N, d_model, d_ff, h, P_drop of the base and the big model.
PAPER_TABLE_3 = {"paper-base": (6, 512, 2048, 8, 0.1), "paper-big": (6, 1024, 4096, 16, 0.3)}


def _table_3_row(config: ModelConfig) -> tuple:
    assert config.n_encoder_layers == config.n_decoder_layers   # the paper's N is both stacks' depth
    return (config.n_encoder_layers, config.d_model, config.d_ff, config.n_heads, config.dropout)


def test_model_config_is_frozen_and_defaults_to_the_papers_base_model():
    config = ModelConfig()
    assert _table_3_row(config) == PAPER_TABLE_3["paper-base"]
    assert config.d_head == 64                                  # d_k = d_v = d_model / h = 64 (section 3.2.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.d_model = 256


def test_train_config_defaults_to_the_papers_adam_and_smoothing():
    config = TrainConfig()
    # section 5.3: Adam with beta1 = 0.9, beta2 = 0.98, epsilon = 1e-9; section 5.4: label smoothing 0.1
    assert (config.adam_beta1, config.adam_beta2, config.adam_eps) == (0.9, 0.98, 1e-9)
    assert config.label_smoothing == 0.1


def test_paper_presets_are_table_3_and_names_are_checked():
    for name, row in PAPER_TABLE_3.items():
        assert _table_3_row(get_preset(name)) == row
    for name, preset in MODEL_PRESETS.items():
        assert get_preset(name) == preset
    for name, preset in TRAIN_PRESETS.items():
        assert get_train_preset(name) == preset
    with pytest.raises(ValueError, match="preset: expected one of"):
        get_preset("huge")
    with pytest.raises(ValueError, match="huge"):
        get_train_preset("huge")


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 30, "n_heads": 4}, "divisible by n_heads"),
    ({"d_model": 0}, r"d_model: expected a value >= 1, got 0"),
    ({"positional": "rotary"}, "positional: expected one of 'sinusoidal', 'learned', 'rope', 'alibi', got 'rotary'"),
    ({"positional": "rope", "d_model": 12, "n_heads": 4}, r"'rope' rotates pairs .* must be even; got 12 / 4 = 3"),
    ({"dropout": 1.5}, r"dropout: expected a value in \[0.0, 1.0\)"),
    ({"pad_id": 5000}, "pad_id"),
])
def test_model_config_rejects_bad_values_with_a_clear_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kwargs)


def test_replace_checks_names_and_types():
    config = get_preset("course")
    assert config.replace(d_model=256, n_heads=8).d_model == 256
    assert config.replace(dropout=0).dropout == 0.0  # an int is accepted for a float field
    with pytest.raises(ValueError, match="unknown field 'd_modle'"):
        config.replace(d_modle=256)
    with pytest.raises(TypeError, match="d_model: expected an int, got str"):
        config.replace(d_model="256")
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="fp8")


def test_config_round_trips_through_a_dict():
    config = get_preset("tiny").replace(norm_first=True)
    assert ModelConfig.from_dict(config.to_dict()) == config


def test_set_seed_reproduces_python_numpy_and_torch():
    torch = pytest.importorskip("torch")
    rng = set_seed(7)
    first = (random.random(), np.random.rand(), torch.rand(1).item(), rng.normal())  # noqa: NPY002 (the global one)
    rng = set_seed(7)
    second = (random.random(), np.random.rand(), torch.rand(1).item(), rng.normal())  # noqa: NPY002
    assert first == second
    with pytest.raises(ValueError, match="seed: expected a non-negative int"):
        set_seed(-1)


def test_show_source_gives_highlighted_html_and_plain_text():
    view = show_source(set_seed)
    text = repr(view)
    assert text.startswith("# transformer_course/utils.py\n")
    assert "def set_seed(seed: int)" in text
    html = view._repr_html_()
    assert "set_seed" in html and "<span" in html and "style=" in html  # inline styles: no extra CSS needed
    assert "/work/" not in text + html  # no absolute paths in stored notebook outputs


def test_show_source_names_the_file_of_a_decorated_function():
    pytest.importorskip("torch")
    from transformer_course.torch.decoding import greedy_decode  # wrapped by a torch grad-mode decorator
    text = repr(show_source(greedy_decode))
    assert text.startswith("# transformer_course/torch/decoding.py\n")
    assert "def greedy_decode(" in text


def test_show_source_does_not_change_when_lines_are_inserted_above(tmp_path, monkeypatch):
    # Stored chapter outputs hold these views: an edit elsewhere in the shown file must leave them as they were.
    import importlib
    import sys

    body = 'def shown(x):\n    """Twice x."""\n    return 2 * x  # (B, T, D)\n'
    inserted = "import math\n\n\ndef other():\n    return math.pi\n\n\n"
    views = []
    for name, above in (("shown_before", ""), ("shown_after", inserted)):
        (tmp_path / f"{name}.py").write_text(above + body)
        monkeypatch.syspath_prepend(str(tmp_path))
        module = importlib.import_module(name)
        view = show_source(module.shown)
        views.append((repr(view).replace(name, "MODULE"), view._repr_html_().replace(name, "MODULE")))
        sys.modules.pop(name)
    assert views[0] == views[1]
    assert "lines" not in views[0][0]


def test_show_source_rejects_objects_without_source():
    with pytest.raises(TypeError, match="obj: expected a function, class or module"):
        show_source(42)


def test_show_diff_aligns_the_two_sources():
    view = show_diff(get_preset, get_train_preset)
    text = repr(view)
    assert text.startswith("--- transformer_course/config.py")
    assert "- def get_preset(name: str) -> ModelConfig:\n+ def get_train_preset(name: str) -> TrainConfig:" in text
    assert view._repr_html_().count("<tr") == len(view.rows) + 1  # a header, then one row per pair of lines


def test_course_style_shapes_the_figures_drawn_after_it():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from transformer_course.viz import use_course_style
    from transformer_course.viz.style import ATTENTION_CMAP

    with matplotlib.rc_context():   # leave the other tests' settings alone
        matplotlib.rcdefaults()     # whatever an earlier test in this process set
        plain_figure, plain_axes = plt.subplots()
        use_course_style()
        figure, axes = plt.subplots()
        image = axes.imshow(np.eye(3))
        assert plain_axes.spines["top"].get_visible() and not axes.spines["top"].get_visible()
        assert not axes.spines["right"].get_visible() and axes.spines["left"].get_visible()
        assert image.get_cmap().name == ATTENTION_CMAP          # attention maps: one colormap in every chapter
        plt.close(plain_figure)
        plt.close(figure)


def test_the_models_never_import_the_data_package():
    """The models take the special token ids from transformer_course.special_tokens, never from data/."""
    import ast
    from pathlib import Path

    import transformer_course

    package = Path(transformer_course.__file__).parent
    offenders = []
    for side in ("numpy", "torch"):
        for path in sorted((package / side).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom):
                    target = "." * node.level + (node.module or "")
                    if target in ("..data", "transformer_course.data") or target.startswith(
                            ("..data.", "transformer_course.data.")):
                        offenders.append(f"{side}/{path.name}:{node.lineno} imports {target}")
                elif isinstance(node, ast.Import):
                    offenders += [f"{side}/{path.name}:{node.lineno} imports {alias.name}" for alias in node.names
                                  if alias.name.startswith("transformer_course.data")]
    assert len(list((package / "numpy").glob("*.py"))) > 5 and len(list((package / "torch").glob("*.py"))) > 5
    assert not offenders, offenders
