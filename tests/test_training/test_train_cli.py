"""`python -m transformer_course train | translate | evaluate` through main(argv)."""
import io
import json
import subprocess
import sys

import pytest

from transformer_course.__main__ import main

TRAIN = ["train", "--task", "reverse", "--max-len", "5", "--n-train", "60", "--preset", "tiny", "--max-steps", "4",
         "--device", "cpu", "--threads", "1", "--no-progress"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert main(TRAIN + ["--out", str(out), "--export", str(out / "export" / "toy")]) == 0
    return out


def test_train_writes_a_run(run_dir, capsys):
    for name in ("model.pt", "last.pt", "best.pt", "src_vocab.json", "tgt_vocab.json", "history.json"):
        assert (run_dir / name).exists(), name
    assert (run_dir / "export" / "toy.safetensors").exists()
    history = json.loads((run_dir / "history.json").read_text())
    assert history["step"][-1] == 4


def test_translate_args_and_stdin(run_dir, capsys, monkeypatch):
    assert main(["translate", "--checkpoint", str(run_dir), "--device", "cpu", "abc", "cab"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    monkeypatch.setattr(sys, "stdin", io.StringIO("abc\n\ncab\n"))
    assert main(["translate", "--checkpoint", str(run_dir / "model.pt"), "--device", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == lines


def test_evaluate_prints_metrics_and_signature(run_dir, capsys):
    assert main(["evaluate", "--checkpoint", str(run_dir), "--device", "cpu", "--split", "val"]) == 0
    out = capsys.readouterr().out
    assert "exact match" in out and "BLEU signature  nrefs:1|" in out


def test_evaluate_on_data_with_another_vocabulary(run_dir):
    with pytest.raises(ValueError, match="different vocabulary"):
        main(["evaluate", "--checkpoint", str(run_dir), "--device", "cpu", "--task", "numbers",
              "--max-number", "99"])


def test_resume_continues(run_dir, capsys):
    assert main(TRAIN[:TRAIN.index("--max-steps")] + ["--max-steps", "6", "--device", "cpu", "--no-progress",
                                                      "--out", str(run_dir), "--resume"]) == 0
    assert "trained 6 steps" in capsys.readouterr().out


def test_help_and_bad_input(capsys, tmp_path):
    for argv in (["--help"], ["train", "--help"], ["translate", "--help"], ["evaluate", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--task", "poetry", "--out", str(tmp_path)])
    assert exit_info.value.code == 2 and "invalid choice: 'poetry'" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="unknown ModelConfig field"):
        main(TRAIN + ["--out", str(tmp_path), "--set", "width=3"])
    with pytest.raises(SystemExit, match="expects a int"):
        main(TRAIN + ["--out", str(tmp_path), "--set", "d_model=big"])
    with pytest.raises(SystemExit, match="no checkpoint"):
        main(["translate", "--checkpoint", str(tmp_path / "nothing"), "x"])


def test_module_entry_point_help():
    result = subprocess.run([sys.executable, "-m", "transformer_course", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "train" in result.stdout and "translate" in result.stdout
