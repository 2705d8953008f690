"""Property-based tests (hypothesis, derandomized, at most 50 examples each; see conftest.py).

The properties:
- tokenisers never raise on any Unicode text, and their normal form (detokenize after tokenize) is a fixed
  point: normalising twice changes nothing, and the tokens of the normal form are the tokens of the text;
- a vocabulary's encode never raises, gives ids inside the vocabulary (unseen tokens -> unk), and
  decode(encode(x)) is the tokeniser's normal form of x when the vocabulary was built from x;
- a vocabulary survives save -> load unchanged, whatever its tokens;
- the command line accepts an int flag exactly when it is in range, and otherwise exits with status 2 and one
  line naming the flag; a device name exactly when it has the documented form; `--set` values either become a
  typed config field or a one-line error naming `--set` and the field;
- translate's input checks never raise anything but the CLI's UsageError, and undecodable stdin bytes are
  reported at the first invalid byte of the first bad line.
"""
import contextlib
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transformer_course.__main__ import UsageError, _check_sentences, _decode_lines, _parse_overrides, build_parser
from transformer_course.config import ModelConfig, get_preset
from transformer_course.data.vocab import SPECIALS, UNK_ID, Vocab, get_tokenizer

TOKENIZERS = ["char", "word"]


@pytest.mark.parametrize("name", TOKENIZERS)
@given(text=st.text())
def test_normal_form_is_a_fixed_point(name, text):
    tok = get_tokenizer(name)
    tokens = tok.tokenize(text)
    normal = tok.detokenize(tokens)
    assert tok.tokenize(normal) == tokens
    assert tok.detokenize(tok.tokenize(normal)) == normal
    if name == "char":
        assert normal == text


@pytest.mark.parametrize("name", TOKENIZERS)
@given(seen=st.text(), other=st.text())
def test_encode_decode_round_trip(name, seen, other):
    vocab = Vocab.build([seen], name)
    ids = vocab.encode(seen, add_bos=True)
    assert all(0 <= i < len(vocab) for i in ids)
    tok = get_tokenizer(name)
    assert vocab.decode(ids) == tok.detokenize(tok.tokenize(seen))
    other_ids = vocab.encode(other)                      # never raises, whatever the text
    assert [i == UNK_ID for i in other_ids[:-1]] == [t not in vocab for t in tok.tokenize(other)]


@given(tokens=st.lists(st.text(min_size=1).filter(lambda t: t not in SPECIALS), unique=True, max_size=30),
       name=st.sampled_from(TOKENIZERS))
def test_vocabulary_save_load(tmp_path_factory, tokens, name):
    path = tmp_path_factory.mktemp("vocab") / "v.json"
    vocab = Vocab(tokens, tokenizer=name)
    vocab.save(path)
    assert Vocab.load(path) == vocab


def parse(argv):
    """(namespace or None, exit status, stderr lines) of the CLI's parser alone (nothing runs)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return build_parser().parse_args(argv), 0, []
        except SystemExit as exit_:
            return None, exit_.code, err.getvalue().splitlines()


INT_FLAGS = [("train", "--max-steps", 1), ("train", "--batch-size", 1), ("train", "--threads", 1),
             ("train", "--seed", 0), ("train", "--n-test", 1), ("translate", "--beam-size", 1),
             ("translate", "--top-k", 1), ("translate", "--seed", 0), ("evaluate", "--show-errors", 0)]


def command(sub):
    return {"train": ["train", "--out", "runs/x"], "translate": ["translate", "--pretrained", "numbers-en-fr"],
            "evaluate": ["evaluate", "--pretrained", "numbers-en-fr"]}[sub]


@pytest.mark.parametrize("sub, flag, low", INT_FLAGS, ids=[f[1] for f in INT_FLAGS])
@given(value=st.one_of(st.integers(-10**6, 10**6), st.text(max_size=8)))
def test_int_flags_accept_exactly_their_range(sub, flag, low, value):
    text = str(value)
    args, status, err = parse(command(sub) + [f"{flag}={text}"])
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is not None and number >= low:
        assert status == 0 and getattr(args, flag[2:].replace("-", "_")) == number
    else:
        assert status == 2 and len(err) == 1
        assert err[0].startswith(f"transformer-course: error: argument {flag}: expected an int >= {low}")


@given(name=st.one_of(st.sampled_from(["auto", "cpu", "mps", "cuda", "cuda:0", "cuda:12"]), st.text(max_size=10)))
def test_device_names(name):
    args, status, err = parse(command("train") + [f"--device={name}"])
    if re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", name):
        assert status == 0 and args.device == name
    else:
        assert status == 2 and len(err) == 1 and err[0].startswith("transformer-course: error: argument --device")


@given(field=st.sampled_from(["d_model", "dropout", "norm_first", "positional", "max_len"]),
       raw=st.one_of(st.text(max_size=6), st.integers(-5, 600).map(str), st.floats(-1, 2).map(str),
                     st.sampled_from(["true", "False", "0", "yes"])))
def test_set_overrides_are_typed_or_refused(field, raw):
    try:
        overrides = _parse_overrides(ModelConfig, [f"{field}={raw}"], "--set")
    except UsageError as err:
        assert str(err).startswith(f"--set {field}: expected")
        return
    try:
        config = get_preset("course").replace(**overrides)
    except (TypeError, ValueError) as err:               # a typed value out of range, named with its field
        assert f"ModelConfig.{field}" in str(err) or "ModelConfig: d_model" in str(err)
        return
    assert type(getattr(config, field)) is {"d_model": int, "max_len": int, "dropout": float, "norm_first": bool,
                                            "positional": str}[field]


@given(lines=st.lists(st.text(max_size=40), max_size=5))
def test_sentence_checks_only_raise_usage_errors(lines):
    vocab = Vocab.build(["one two three", "abc"], "word")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            _check_sentences([line.strip() for line in lines], "stdin line", vocab, max_len=8)
        except UsageError as error:
            assert re.match(r"stdin line \d+: \d+ tokens, but the model reads at most 7", str(error))
    warnings = err.getvalue().splitlines()
    assert all(line.startswith("transformer-course: warning: ") for line in warnings)


@given(raw=st.binary(max_size=60))
def test_undecodable_bytes_are_located(raw):
    try:
        lines = _decode_lines(raw)
    except UsageError as err:
        for number, line in enumerate(raw.splitlines(), start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as first:
                assert str(err).startswith(f"stdin line {number}: byte {first.start} (0x{line[first.start]:02x})")
                return
        raise AssertionError("an error was reported for valid UTF-8") from err
    assert lines == [line.strip() for line in raw.decode("utf-8").splitlines()] or \
        lines == [line.decode("utf-8").strip() for line in raw.splitlines()]
