"""Checkpoints: atomic writes under a simulated crash, safe loading, vocab checks, averaging, export."""
import os

import pytest
import torch
from training_helpers import params_equal

from transformer_course.data.vocab import Vocab
from transformer_course.training import checkpoint as ckpt
from transformer_course.training.checkpoint import (
    average_state_dicts,
    check_vocabs,
    export_pretrained,
    load_checkpoint,
    load_pretrained,
    model_from_checkpoint,
    save_checkpoint,
)


def test_round_trip(make_model, toy, tmp_path):
    _, sv, tv = toy
    model = make_model()
    save_checkpoint(tmp_path / "m.pt", model, src_vocab=sv, tgt_vocab=tv, step=3)
    loaded, sv2, tv2, checkpoint = model_from_checkpoint(tmp_path / "m.pt")
    assert params_equal(model, loaded) and sv2 == sv and tv2 == tv and checkpoint["step"] == 3
    assert loaded.config == model.config


def test_atomic_write_survives_a_crash(make_model, tmp_path, monkeypatch):
    model = make_model()
    path = tmp_path / "last.pt"
    save_checkpoint(path, model, step=1)
    before = path.read_bytes()

    real_save = torch.save

    def crashing_save(obj, f, *args, **kwargs):          # writes half a file, then the "power fails"
        real_save(obj, f, *args, **kwargs)
        with open(f, "r+b") as handle:
            handle.truncate(100)
        raise KeyboardInterrupt("simulated crash during the write")

    monkeypatch.setattr(ckpt.torch, "save", crashing_save)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model, step=2)
    monkeypatch.undo()
    assert path.read_bytes() == before                   # the previous checkpoint is intact
    assert load_checkpoint(path)["step"] == 1
    assert sorted(os.listdir(tmp_path)) == ["last.pt"]   # no temporary file left behind


def test_loading_never_executes_code(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):                            # unpickling would create the marker file
            return (open, (str(marker), "w"))
    path = tmp_path / "evil.pt"
    torch.save({"format": ckpt.FORMAT, "payload": Evil()}, path)
    with pytest.raises(ckpt.CheckpointError, match=r"evil.pt: refused to load it.*never runs code"):
        load_checkpoint(path)
    assert not marker.exists()


def test_not_a_checkpoint(tmp_path):
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a transformer-course checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(ckpt.CheckpointError, match=r"missing.pt: no checkpoint there"):
        load_checkpoint(tmp_path / "missing.pt")


def test_vocabulary_mismatch_is_a_clear_error(make_model, run, tiny_config, toy, tmp_path):
    _, sv, tv = toy
    run(make_model(), tiny_config.replace(max_steps=2), vocabs=(sv, tv), out_dir=tmp_path)
    other = Vocab(list(reversed(tv.itos[4:])), tokenizer="char")          # same size, other ids
    with pytest.raises(ValueError, match=r"tgt_vocab: the checkpoint .* different vocabulary .* first difference"):
        run(make_model(), tiny_config, vocabs=(sv, other), resume_from=tmp_path / "last.pt")
    with pytest.raises(ValueError, match="src_vocab"):
        check_vocabs(load_checkpoint(tmp_path / "last.pt"), Vocab.build(["zz"], "char"), None)


def test_resume_with_other_model_config_fails(make_model, run, tiny_config, tmp_path):
    run(make_model(), tiny_config.replace(max_steps=2), out_dir=tmp_path)
    with pytest.raises(ValueError, match="resume_from"):
        run(make_model(d_ff=64), tiny_config, resume_from=tmp_path / "last.pt")


def test_average_state_dicts():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor(5)}
    out = average_state_dicts([a, b])
    assert torch.equal(out["w"], torch.tensor([2.0, 4.0])) and int(out["n"]) == 5
    with pytest.raises(ValueError, match="state_dicts"):
        average_state_dicts([])
    with pytest.raises(ValueError, match="same parameter names"):
        average_state_dicts([a, {"w": a["w"]}])


def test_export_and_load_pretrained(make_model, toy, tmp_path):
    _, sv, tv = toy
    model = make_model()
    info = export_pretrained(model, sv, tv, tmp_path, "toy", metadata={"note": "test"})
    assert (tmp_path / "toy.safetensors").stat().st_size == info["weights_bytes"]
    loaded, sv2, tv2 = load_pretrained("toy", directory=tmp_path)
    assert params_equal(model, loaded) and sv2 == sv and tv2 == tv and not loaded.training
    with pytest.raises(ValueError, match="name"):
        load_pretrained("nope", directory=tmp_path)
    (tmp_path / "toy.safetensors").write_bytes(b"corrupt")
    with pytest.raises(ValueError, match="sha256"):
        load_pretrained("toy", directory=tmp_path)
