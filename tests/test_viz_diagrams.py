"""The architecture diagrams: their labels, the shapes they write for a given config, readable text that stays
inside the figure, and clear errors for bad input."""
import struct

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from transformer_course.config import ModelConfig, get_preset
from transformer_course.viz import diagrams

# Sizes chosen so that no two of them coincide: a label that shows the wrong size cannot pass by accident.
ODD = ModelConfig(d_model=96, n_heads=3, d_ff=200, n_encoder_layers=5, n_decoder_layers=7)
ODD_HEAD = 32          # 96 / 3

MIN_PX = 10            # the smallest text size we allow on the website at 100% zoom
MAX_WIDTH_IN = 7.2     # 720 px: tools/check_site.py measured such a figure shown 672 px wide (dark theme, 1280 px
                       # window), 93%, so the smallest text (9 pt, 12.5 px) stays above 10 px


def texts(fig):
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def joined(fig):
    return "\n".join(texts(fig))


ALL = {
    "encoder_decoder": lambda: diagrams.encoder_decoder_diagram(),
    "rnnsearch": lambda: diagrams.rnnsearch_diagram(),
    "soft_lookup": lambda: diagrams.soft_lookup_diagram(),
    "sdpa": lambda: diagrams.scaled_dot_product_attention_diagram(),
    "sdpa_config": lambda: diagrams.scaled_dot_product_attention_diagram(get_preset("course")),
    "multi_head": lambda: diagrams.multi_head_attention_diagram(get_preset("course")),
    "transformer_post": lambda: diagrams.transformer_diagram(get_preset("paper-base")),
    "transformer_pre": lambda: diagrams.transformer_diagram(get_preset("course"), norm_first=True),
    "encoder_layer": lambda: diagrams.encoder_layer_diagram(get_preset("paper-base")),
    "decoder_layer": lambda: diagrams.decoder_layer_diagram(ODD, norm_first=True),
    "teacher_forcing": lambda: diagrams.teacher_forcing_diagram(),
    "kv_cache": lambda: diagrams.kv_cache_diagram(get_preset("course")),
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("name", sorted(ALL))
def test_text_is_readable_and_inside_the_figure(name):
    fig = ALL[name]()
    assert fig.get_figwidth() <= MAX_WIDTH_IN + 1e-9
    assert fig.dpi == 100
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    for text in fig.findobj(matplotlib.text.Text):
        if not text.get_text() or not text.get_visible():
            continue
        assert text.get_fontsize() * fig.dpi / 72 >= MIN_PX, text.get_text()
        box = text.get_window_extent(renderer)
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, f"{text.get_text()!r} sticks out sideways"
        assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, f"{text.get_text()!r} sticks out vertically"


@pytest.mark.parametrize("name", sorted(ALL))
def test_background_is_opaque(name):
    fig = ALL[name]()
    assert fig.get_facecolor()[3] == 1.0


def test_encoder_decoder_has_one_context_vector():
    found = texts(diagrams.encoder_decoder_diagram(S=5, T=2))
    assert [f"$h_{i}$" for i in range(1, 6)] == [t for t in found if t.startswith("$h_")]
    assert [t for t in found if t.startswith("$s_")] == ["$s_1$", "$s_2$"]
    assert found.count("$c$") == 1
    assert "(B, E)" in found and "(B, D)" in found and "p: (B, V)" in found


def test_rnnsearch_labels_and_shapes():
    found = texts(diagrams.rnnsearch_diagram(S=3))
    for i in (1, 2, 3):
        assert f"$\\overrightarrow{{h}}_{i}$" in found and f"$\\overleftarrow{{h}}_{i}$" in found
    assert "$\\overrightarrow{h}_4$" not in found
    text = "\n".join(found)
    for label in ("a(s_{t-1}, h_i)", "\\alpha_{t,i}", "c_t = \\sum_i \\alpha_{t,i} h_i", "$s_{t-1}$", "$s_t$"):
        assert label in text
    for shape in ("(B, 2D)", "(B, S, 2D)", "(B, S)", "(B, V)", "(B, E)"):
        assert shape in text


def test_soft_lookup_has_a_row_per_key():
    found = texts(diagrams.soft_lookup_diagram(n_keys=3))
    for letter in ("k", "e", "v"):
        assert [t for t in found if t.startswith(f"${letter}_")] == [f"${letter}_{i}$" for i in (1, 2, 3)]
    assert [t for t in found if t.startswith("$\\alpha_")] == [f"$\\alpha_{i}$" for i in (1, 2, 3)]
    text = "\n".join(found)
    assert "$(1, d_k)$" in text and "$(T_k, d_k)$" in text and "$(T_k, d_v)$" in text and "$(1, d_v)$" in text


def test_scaled_dot_product_attention_letters_and_config():
    letters = joined(diagrams.scaled_dot_product_attention_diagram())
    for label in ("MatMul", "Scale", "Mask (optional)", "SoftMax", "(B, $T_q$, $T_k$)", "(B, $T_k$, $d_v$)"):
        assert label in letters
    without_mask = joined(diagrams.scaled_dot_product_attention_diagram(mask=False))
    assert "Mask" not in without_mask and "SoftMax" in without_mask
    course = joined(diagrams.scaled_dot_product_attention_diagram(get_preset("course")))
    assert "(B, 4, $T_q$, 32)" in course and "(B, 4, $T_q$, $T_k$)" in course and "\\sqrt{32}" in course
    odd = joined(diagrams.scaled_dot_product_attention_diagram(ODD))
    assert f"(B, 3, $T_k$, {ODD_HEAD})" in odd


def test_multi_head_shows_the_split_and_merge_shapes():
    course = joined(diagrams.multi_head_attention_diagram(get_preset("course")))
    # the layer's sizes, and none of the whole model's
    assert "$D$ = 128, $H$ = 4, $D_h$ = 32" in course and "$F$ =" not in course and "$N$ =" not in course
    assert "$x_q W^Q$" in course and "$x_{kv} W^K$" in course and "$x_{kv} W^V$" in course       # its two inputs
    for shape in ("(B, $T_q$, 128)", "(B, $T_q$, 4, 32)", "(B, 4, $T_k$, 32)", "(B, 4, $T_q$, $T_k$)"):
        assert shape in course
    for name in ("Q", "K", "V", "O"):
        assert f"W^{name}" in course
    odd = joined(diagrams.multi_head_attention_diagram(ODD))
    assert f"(B, 3, $T_q$, {ODD_HEAD})" in odd and "(B, $T_k$, 96)" in odd


def test_transformer_post_and_pre_layer_norm():
    post = texts(diagrams.transformer_diagram(get_preset("paper-base")))
    assert post.count("Add & Norm") == 5 and "LayerNorm" not in post and "final LayerNorm" not in post
    assert "6 ×" in post and "(B, S, 512)" in post and "(B, T, 512)" in post and "(B, T, V)" in post
    assert "memory: (B, S, 512)" in post
    pre = texts(diagrams.transformer_diagram(get_preset("course"), norm_first=True))
    assert "Add & Norm" not in pre and pre.count("LayerNorm") == 5 and pre.count("final LayerNorm") == 2
    assert pre.count("+") == 5 and "2 ×" in pre
    odd = texts(diagrams.transformer_diagram(ODD))
    assert "5 ×" in odd and "7 ×" in odd


def test_norm_first_defaults_to_the_config():
    pre = ModelConfig(d_model=64, n_heads=2, d_ff=128, norm_first=True)
    assert "Add & Norm" not in texts(diagrams.transformer_diagram(pre))
    assert "Add & Norm" in texts(diagrams.transformer_diagram(pre, norm_first=False))


def test_encoder_and_decoder_layers():
    enc = joined(diagrams.encoder_layer_diagram(get_preset("paper-base")))
    assert "$H$ = 8 heads of $D_h$ = 64" in enc and "(B, S, 2048)" in enc and "(B, S, 512)" in enc
    assert "M_{\\mathrm{src}}" in enc and "cross" not in enc and "post-LN" in enc
    assert enc.count("Dropout, $P_{\\mathrm{drop}}$ = 0.1") == 2          # on each sublayer's output
    qkv = ["$Q$", "$K$", "$V$"]                  # self-attention reads queries, keys and values from its input
    assert [t for t in texts(diagrams.encoder_layer_diagram()) if t in qkv] == qkv
    dec = texts(diagrams.decoder_layer_diagram(ODD, norm_first=True))
    text = "\n".join(dec)
    assert "Masked multi-head self-attention" in text and "cross-attention" in text
    assert "causal AND padding, (B, T, T)" in text and f"$H$ = 3 heads of $D_h$ = {ODD_HEAD}" in text
    assert "(B, T, 200)" in text and "(B, S, 96)" in text and "pre-LN" in text
    assert dec.count("LayerNorm") == 3 and dec.count("+") == 3
    assert sum(t.startswith("Dropout") for t in dec) == 3
    assert [t for t in dec if t in qkv] == qkv                       # self-attention only; cross-attention's text
    assert not set(qkv) & set(texts(diagrams.transformer_diagram()))    # the compact layers have no fan


def test_teacher_forcing_shifts_the_target_right():
    found = texts(diagrams.teacher_forcing_diagram(["trois", "mille"]))
    boxes = [t for t in found if t in ("trois", "mille") or "bos" in t or "eos" in t]
    # the target row (trois, mille, <eos>), then column by column: what it reads, what it predicts
    assert boxes == ["trois", "$\\langle$bos$\\rangle$", "trois", "mille", "trois", "mille",
                     "$\\langle$eos$\\rangle$", "mille", "$\\langle$eos$\\rangle$"]
    assert "(B, T)" in found and "logits (B, T, V)" in found


def test_kv_cache_grows_one_entry_per_step():
    cfg = get_preset("course")
    found = texts(diagrams.kv_cache_diagram(cfg, steps=4))
    assert [t for t in found if t.startswith("K, V:")] == [f"K, V: (B, 4, {t}, 32)" for t in (1, 2, 3, 4)]
    assert found.count("$k_1$") == 4 and found.count("$k_4$") == 1 and found.count("$v_3$") == 2
    assert "one query; scores: (B, 4, 1, 4)" in found
    assert any("(B, 4, S, 32)" in t for t in found)


def test_letters_without_a_config():
    text = joined(diagrams.kv_cache_diagram())
    assert "K, V: (B, H, 2, $D_h$)" in text
    assert "(B, S, D)" in joined(diagrams.encoder_layer_diagram())


@pytest.mark.parametrize("build", [diagrams.multi_head_attention_diagram, diagrams.transformer_diagram,
                                   diagrams.encoder_layer_diagram, diagrams.decoder_layer_diagram,
                                   diagrams.kv_cache_diagram, diagrams.scaled_dot_product_attention_diagram])
def test_a_wrong_config_type_is_refused(build):
    with pytest.raises(TypeError, match="config: expected a ModelConfig"):
        build({"d_model": 128, "n_heads": 4})


@pytest.mark.parametrize("build, argument", [
    (lambda v: diagrams.encoder_decoder_diagram(S=v), "S"),
    (lambda v: diagrams.encoder_decoder_diagram(T=v), "T"),
    (lambda v: diagrams.rnnsearch_diagram(S=v), "S"),
    (lambda v: diagrams.soft_lookup_diagram(n_keys=v), "n_keys"),
    (lambda v: diagrams.kv_cache_diagram(steps=v), "steps"),
])
def test_sizes_out_of_range_are_refused(build, argument):
    for bad in (-1, 0, 7):
        with pytest.raises(ValueError, match=rf"{argument}: expected an integer in \[1, 6\], got {bad}"):
            build(bad)
    with pytest.raises(TypeError, match=rf"{argument}: expected an integer"):
        build(2.0)


def test_negative_model_sizes_are_refused_by_the_config():
    with pytest.raises(ValueError, match="d_model"):
        ModelConfig(d_model=-128)


def test_other_bad_arguments():
    with pytest.raises(TypeError, match="norm_first: expected True or False"):
        diagrams.transformer_diagram(norm_first="pre")
    with pytest.raises(TypeError, match="mask: expected True or False"):
        diagrams.scaled_dot_product_attention_diagram(mask=1)
    with pytest.raises(TypeError, match="target: expected a sequence of token strings"):
        diagrams.teacher_forcing_diagram("trois mille")
    with pytest.raises(ValueError, match=r"len\(target\): expected an integer in \[1, 5\], got 0"):
        diagrams.teacher_forcing_diagram([])
    with pytest.raises(TypeError, match="fig: expected a matplotlib Figure"):
        diagrams.retina("figure.png")


def test_retina_has_twice_the_pixels_at_the_same_display_width():
    fig = diagrams.soft_lookup_diagram()
    width_px = round(fig.get_figwidth() * fig.dpi)
    image = diagrams.retina(fig)
    assert image.width == width_px
    png_width, = struct.unpack(">I", image.data[16:20])           # the IHDR chunk: width, then height
    assert png_width == 2 * width_px
    assert not plt.fignum_exists(fig.number)                      # closed: a notebook shows it once
