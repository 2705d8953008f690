"""The library under bad input: configs, checkpoints, data files and the exercise checkers.

Each case asserts that the error names the culprit (the field, file, line or argument) and says what was
expected; file cases also assert that nothing on disk changed.
"""
import json
import shutil

import numpy as np
import pytest
import torch
from bad_input_helpers import fingerprint

from transformer_course.config import ModelConfig, TrainConfig, get_preset
from transformer_course.data.corpora import (
    CorpusError,
    load_tsv_corpus,
    read_parallel_files,
    read_tsv_pairs,
    split_pairs,
)
from transformer_course.data.vocab import Vocab
from transformer_course.exercises import (
    ExerciseError,
    check_layer_norm,
    check_masked_softmax,
    check_noam_lr,
    check_split_heads,
)
from transformer_course.training import checkpoint as ckpt
from transformer_course.training.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_pretrained,
    model_from_checkpoint,
    pretrained_dir,
)

# -- configuration: every field type-checked when a config is built ------------------------------------------


@pytest.mark.parametrize("cls, kwargs, error, message", [
    (ModelConfig, {"norm_first": "false"}, TypeError, "ModelConfig.norm_first: expected a bool, got str"),
    (ModelConfig, {"tie_output_embedding": 1}, TypeError, "ModelConfig.tie_output_embedding: expected a bool, got int"),
    (ModelConfig, {"dropout": "0.1"}, TypeError, "ModelConfig.dropout: expected a float, got str"),
    (ModelConfig, {"d_model": True}, TypeError, "ModelConfig.d_model: expected an int, got bool"),
    (ModelConfig, {"n_heads": 4.0}, TypeError, "ModelConfig.n_heads: expected an int, got float"),
    (ModelConfig, {"positional": None}, TypeError, "ModelConfig.positional: expected a str, got NoneType"),
    (ModelConfig, {"layer_norm_eps": 0.0}, ValueError, r"ModelConfig.layer_norm_eps: expected a value > 0.0"),
    (ModelConfig, {"n_encoder_layers": -1}, ValueError, r"ModelConfig.n_encoder_layers: expected a value >= 0"),
    (TrainConfig, {"max_steps": -1}, ValueError, r"TrainConfig.max_steps: expected a value >= 1, got -1"),
    (TrainConfig, {"compile": "yes"}, TypeError, "TrainConfig.compile: expected a bool, got str"),
    (TrainConfig, {"lr_factor": "0.5"}, TypeError, "TrainConfig.lr_factor: expected a float, got str"),
    (TrainConfig, {"adam_beta2": 1.0}, ValueError, r"TrainConfig.adam_beta2: expected a value in \[0.0, 1.0\)"),
    (TrainConfig, {"label_smoothing": -0.1}, ValueError, r"TrainConfig.label_smoothing: expected a value in"),
    (TrainConfig, {"clip_grad_norm": -1.0}, ValueError, r"TrainConfig.clip_grad_norm: expected a value >= 0.0"),
    (TrainConfig, {"precision": "fp8"}, ValueError, "TrainConfig.precision: expected 'fp32', 'bf16' or 'fp16'"),
])
def test_configs_check_every_field(cls, kwargs, error, message):
    with pytest.raises(error, match=message):
        cls(**kwargs)


def test_replace_and_from_dict_check_too():
    with pytest.raises(TypeError, match=r"ModelConfig.norm_first: expected a bool"):
        get_preset("tiny").replace(norm_first="false")
    with pytest.raises(ValueError, match="unknown field 'width'"):
        ModelConfig.from_dict({**get_preset("tiny").to_dict(), "width": 3})
    assert isinstance(get_preset("tiny").replace(dropout=0).dropout, float)   # ints are fine for floats


# -- checkpoints: one CheckpointError naming the file ---------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    from transformer_course.data.tasks import reverse_task
    from transformer_course.torch.transformer import Transformer
    from transformer_course.training.checkpoint import save_checkpoint
    data = reverse_task(n_train=20, n_val=4, n_test=4, max_len=4, seed=0)
    sv, tv = data.build_vocabs()
    model = Transformer(get_preset("tiny").replace(src_vocab_size=len(sv), tgt_vocab_size=len(tv)))
    path = tmp_path / "model.pt"
    save_checkpoint(path, model, src_vocab=sv, tgt_vocab=tv)
    return path


@pytest.mark.parametrize("damage, message", [
    ("empty", "the file is empty"),
    ("truncated", "truncated or not a torch checkpoint"),
    ("text", "truncated or not a torch checkpoint"),
    ("folder", "no checkpoint there .it is a folder"),
    ("newer format", "format version '2', but this transformer-course reads version '1'"),
    ("other format", "not a transformer-course checkpoint"),
    ("not a dict", "not a transformer-course checkpoint .* got 'list'"),
])
def test_unusable_checkpoints(saved, tmp_path, damage, message):
    path = tmp_path / "bad.pt"
    data = saved.read_bytes()
    if damage == "folder":
        path.mkdir()
    elif damage in ("empty", "truncated", "text"):
        path.write_bytes({"empty": b"", "truncated": data[: len(data) // 2], "text": b"weights\n"}[damage])
    else:
        content = {"newer format": {"format": "transformer-course-checkpoint/2"},
                   "other format": {"state_dict": torch.zeros(1)}, "not a dict": [1, 2]}[damage]
        torch.save(content, path)
    with pytest.raises(CheckpointError, match=f"{path}: {message}"):
        load_checkpoint(path)
    assert issubclass(CheckpointError, ValueError)


def test_checkpoint_whose_weights_do_not_match_its_config(saved):
    checkpoint = torch.load(saved, weights_only=True)
    checkpoint["model_config"]["d_ff"] = 64                  # the stored weights have d_ff 32
    torch.save(checkpoint, saved)
    with pytest.raises(CheckpointError, match=r"model.pt: its weights do not match its model config"):
        model_from_checkpoint(saved)


def test_checkpoint_with_an_invalid_config(saved):
    checkpoint = torch.load(saved, weights_only=True)
    checkpoint["model_config"]["norm_first"] = "false"
    torch.save(checkpoint, saved)
    with pytest.raises(CheckpointError, match=r"model.pt: its model config cannot be used .*norm_first"):
        model_from_checkpoint(saved)


@pytest.fixture
def shipped_copy(tmp_path):
    for suffix in (".json", ".safetensors"):
        shutil.copy(pretrained_dir() / f"numbers-en-fr{suffix}", tmp_path)
    return tmp_path


@pytest.mark.parametrize("damage, message", [
    ("unknown name", r"name: expected one of \['numbers-en-fr'\], got 'numbers-xx'"),
    ("corrupt weights", "numbers-en-fr.safetensors: sha256 differs"),
    ("missing weights", "numbers-en-fr.safetensors: the weights named by numbers-en-fr.json are missing"),
    ("broken json", "numbers-en-fr.json: not valid JSON"),
    ("truncated weights, no hash check", "numbers-en-fr.safetensors: truncated or not a safetensors file"),
])
def test_unusable_shipped_models(shipped_copy, damage, message):
    weights, meta = shipped_copy / "numbers-en-fr.safetensors", shipped_copy / "numbers-en-fr.json"
    name, check_hash = "numbers-en-fr", True
    if damage == "unknown name":
        name = "numbers-xx"
    elif damage == "corrupt weights":
        data = bytearray(weights.read_bytes())
        data[-1] ^= 1
        weights.write_bytes(bytes(data))
    elif damage == "missing weights":
        weights.unlink()
    elif damage == "broken json":
        meta.write_text(meta.read_text(encoding="utf-8")[:-20], encoding="utf-8")
    else:
        weights.write_bytes(weights.read_bytes()[:500])
        check_hash = False
    before = fingerprint(shipped_copy)
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(name, directory=shipped_copy, check_hash=check_hash)
    assert fingerprint(shipped_copy) == before


def test_a_failing_vocabulary_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "src_vocab.json"
    Vocab.build(["abc"], "char").save(path)
    before = path.read_bytes()

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(type(path), "write_text", full_disk)
    with pytest.raises(OSError, match="No space left"):
        Vocab.build(["xyz"], "char").save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["src_vocab.json"]


# -- data files -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, error, message", [
    ("Go.\tVa !\nHi.\n", CorpusError, r"corpus.tsv:2: expected at least 2 tab-separated columns, got 1"),
    ("Go.\t\n", CorpusError, r"corpus.tsv:1: empty target sentence"),
    ("\tVa !\n", CorpusError, r"corpus.tsv:1: empty source sentence"),
    ("\n\n", CorpusError, r"corpus.tsv: the corpus file is empty"),
])
def test_malformed_corpora_name_the_file_and_line(tmp_path, content, error, message):
    path = tmp_path / "corpus.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=message):
        read_tsv_pairs(path)


def test_corpus_split_sizes(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("".join(f"s{i}\tt{i}\n" for i in range(3)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"n_val \+ n_test: expected fewer than the 3 distinct sources, got 2 \+ 1"):
        load_tsv_corpus(path, n_val=2, n_test=1)
    with pytest.raises(ValueError, match="n_val: expected an int >= 0, got -1"):
        split_pairs([("a", "b")] * 3, n_val=-1, n_test=0)
    data = load_tsv_corpus(path)                             # defaults scale down to a tiny corpus
    assert (len(data.train), len(data.val), len(data.test)) == (1, 1, 1)


def test_parallel_files_of_different_lengths(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "a.de").write_text("eins\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"a.en has 2 lines but .*a.de has 1"):
        read_parallel_files(tmp_path / "a.en", tmp_path / "a.de")


@pytest.mark.parametrize("content, message", [
    ("{not json", "vocab.json: not a vocabulary file"),
    ('{"tokenizer": "char", "tokens": ["a", "b"]}', "vocab.json: not a vocabulary file .*first four tokens"),
    ('{"tokenizer": "spaces", "tokens": ["<pad>", "<bos>", "<eos>", "<unk>"]}', "vocab.json: .*tokenizer"),
    ('{"tokenizer": "bpe", "tokens": ["<pad>", "<bos>", "<eos>", "<unk>"]}', "vocab.json: .*its 'bpe' entry"),
    ('{"tokenizer": "char", "tokens": ["<pad>", "<bos>", "<eos>", "<unk>", 7]}', "list of strings"),
])
def test_malformed_vocabulary_files(tmp_path, content, message):
    path = tmp_path / "vocab.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        Vocab.load(path)


def test_missing_vocabulary_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"path: no vocabulary file at .*nope.json"):
        Vocab.load(tmp_path / "nope.json")


def test_translate_api_refuses_long_and_non_string_input():
    from transformer_course.training.evaluate import translate
    model, sv, tv = load_pretrained("numbers-en-fr")
    with pytest.raises(ValueError, match=r"sentences\[1\]: 201 tokens .* at most 128"):
        translate(model, ["one", " ".join(["one"] * 200)], sv, tv)
    with pytest.raises(TypeError, match=r"sentences\[0\]: expected a string, got int"):
        translate(model, [7], sv, tv)
    assert not model.training


# -- exercise checkers: every learner slip is an ExerciseError with a hint ---------------------------------------

def test_passing_a_result_instead_of_the_function():
    with pytest.raises(ExerciseError, match=r"check_masked_softmax expects your function itself.*got a ndarray "
                                            r"\(its result\?\)"):
        check_masked_softmax(np.zeros((2, 3)))
    with pytest.raises(ExerciseError, match=r"check_noam_lr expects your function itself.*got a NoneType"):
        check_noam_lr(None)


def test_a_list_where_an_array_is_needed():
    def layer_norm(x, gamma, beta, eps=1e-5):
        rows = [list(r) for r in x.reshape(-1, x.shape[-1])]
        return rows.mean(-1)                                 # a list has no .mean
    with pytest.raises(ExerciseError, match=r"layer_norm\(\.\.\.\) raised AttributeError.*np\.asarray"):
        check_layer_norm(layer_norm)


def test_a_function_with_the_wrong_parameters():
    def split_heads(x):                                      # forgot n_heads
        return x
    with pytest.raises(ExerciseError, match=r"split_heads\(\.\.\.\) raised TypeError.*2 positional argument"):
        check_split_heads(split_heads)


def test_a_shape_mismatch_inside_the_function():
    def masked_softmax(scores, mask):
        return scores @ np.ones((scores.shape[-1] + 1, 2))   # a wrong matmul
    with pytest.raises(ExerciseError, match=r"masked_softmax\(\.\.\.\) raised ValueError.*\.shape"):
        check_masked_softmax(masked_softmax)


def test_the_original_traceback_stays_attached():
    def masked_softmax(scores, mask):
        return scores.softmax()
    with pytest.raises(ExerciseError) as info:
        check_masked_softmax(masked_softmax)
    assert isinstance(info.value.__cause__, AttributeError)


def test_checkpoint_module_exports_the_error():
    assert ckpt.CheckpointError is CheckpointError and "CheckpointError" in ckpt.__all__
    assert json.loads((pretrained_dir() / "numbers-en-fr.json").read_text(encoding="utf-8"))["format"] == \
        ckpt.PRETRAINED_FORMAT
