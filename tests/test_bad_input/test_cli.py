"""The command line under bad input: one clear line on stderr, the right exit status, and no run damaged.

Every failing command here runs against a copy of a real run folder, fingerprinted before and after: a
command that fails before training starts must leave it byte-identical.
"""
import io
import sys
from pathlib import Path

import pytest
import torch
from bad_input_helpers import TRAIN, fingerprint

from transformer_course.__main__ import main

PREFIX = "transformer-course: error: "


def run(argv, capsys):
    """(exit status, stdout, stderr lines) of main(argv)."""
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err.splitlines()


def assert_one_error_line(err_lines, *culprits, usage=False):
    """stderr is one error line naming every culprit (after the usage, when the flags themselves are wrong)."""
    lines = [line for line in err_lines if not line.startswith("transformer-course: warning")]
    if usage:
        assert lines[0].startswith("usage: transformer-course"), lines
        lines = [line for line in lines if not line.startswith("usage:") and not line.startswith(" ")]
    assert len(lines) == 1, err_lines
    assert lines[0].startswith(PREFIX), lines[0]
    for culprit in culprits:
        assert culprit in lines[0], (culprit, lines[0])
    assert "Traceback" not in "\n".join(err_lines)


def train_argv(out, *extra):
    return [*TRAIN, "--out", out, *extra]


# -- train: bad values of known flags are refused by the parser, naming the flag ------------------------------

BAD_TRAIN_VALUES = [
    (["--max-steps", "-1"], "--max-steps", "int >= 1"),
    (["--max-steps", "0"], "--max-steps", "got '0'"),
    (["--max-steps", "ten"], "--max-steps", "'ten'"),
    (["--max-minutes", "0"], "--max-minutes", "minutes > 0"),
    (["--max-minutes", "soon"], "--max-minutes", "'soon'"),
    (["--batch-size", "0"], "--batch-size", "int >= 1"),
    (["--threads", "0"], "--threads", "int >= 1"),
    (["--seed", "-3"], "--seed", "int >= 0"),
    (["--device", "gpu"], "--device", "cuda:<index>"),
    (["--task", "poetry"], "--task", "'poetry'"),
    (["--src-lang", "xx"], "--src-lang", "'xx'"),
    (["--tgt-lang", "klingon"], "--tgt-lang", "choose from"),
    (["--preset", "huge"], "--preset", "'huge'"),
    (["--precision", "fp8"], "--precision", "'fp8'"),
    (["--max-number", "0"], "--max-number", "int >= 1"),
    (["--n-val", "0"], "--n-val", "int >= 1"),
    (["--monitor", "speed"], "--monitor", "'speed'"),
]


@pytest.mark.parametrize("extra, flag, detail", BAD_TRAIN_VALUES, ids=[b[1] + "=" + b[0][1] for b in BAD_TRAIN_VALUES])
def test_bad_flag_values_are_one_line_and_leave_the_run_intact(run_copy, capsys, extra, flag, detail):
    before = fingerprint(run_copy)
    status, out, err = run(train_argv(run_copy, "--resume", *extra), capsys)
    assert status == 2
    assert_one_error_line(err, f"argument {flag}", detail)
    assert out == ""
    assert fingerprint(run_copy) == before


# -- train: values that only the command can judge ------------------------------------------------------------

def _corpus(tmp_path, text, name="corpus.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BAD_TRAIN_COMMANDS = {
    "same languages": (["--task", "numbers", "--src-lang", "fr", "--tgt-lang", "fr"],
                       ["--src-lang/--tgt-lang", "'fr'"]),
    "languages on a toy task": (["--tgt-lang", "de"], ["--tgt-lang", "numbers, trans-de-en and multi30k only"]),
    "tokenizer on a toy task": (["--tokenizer", "bpe"], ["--tokenizer", "--task tsv, trans-de-en and multi30k"]),
    "multi30k without a folder": (["--task", "multi30k"], ["--corpus", "folder of Multi30k's files"]),
    "multi30k with split sizes": (["--task", "multi30k", "--corpus", "m30k", "--n-val", "5"],
                                  ["--n-val", "its own splits"]),
    "bpe without its size": (["--task", "tsv", "--corpus", "{two_lines}", "--tokenizer", "bpe"],
                             ["--vocab-size", "tokenizer 'bpe'"]),
    "ding languages": (["--task", "trans-de-en", "--src-lang", "fr"], ["--src-lang/--tgt-lang", "de->en or en->de"]),
    "ding corpus missing": (["--task", "trans-de-en", "--corpus", "{tmp}/absent"],
                            ["--corpus", "absent", "apt-get install trans-de-en"]),
    "corpus on a toy task": (["--corpus", "x.tsv"], ["--corpus", "--task tsv"]),
    "tsv without corpus": (["--task", "tsv"], ["--corpus", "TSV file"]),
    "tsv corpus missing": (["--task", "tsv", "--corpus", "{tmp}/missing.tsv"], ["--corpus", "missing.tsv"]),
    "tsv corpus is a folder": (["--task", "tsv", "--corpus", "{tmp}"], ["--corpus", "folder"]),
    "tsv malformed line": (["--task", "tsv", "--corpus", "{malformed}"], ["malformed.tsv:2", "columns"]),
    "tsv empty target": (["--task", "tsv", "--corpus", "{empty_target}"], ["empty_target.tsv:1", "empty target"]),
    "tsv too small to split": (["--task", "tsv", "--corpus", "{two_lines}", "--n-test", "5"], ["n_val + n_test"]),
    "tsv with n-train": (["--task", "tsv", "--corpus", "{two_lines}", "--n-train", "5"], ["--n-train"]),
    "numbers range too small": (["--task", "numbers", "--max-number", "3"], ["max_number", "0..3"]),
    "unknown model field": (["--set", "width=3"], ["--set", "'width'"]),
    "model field not a number": (["--set", "d_model=big"], ["--set d_model", "'big'"]),
    "model field not a bool": (["--set", "norm_first=maybe"], ["--set norm_first", "true or false"]),
    "model sizes that do not divide": (["--set", "d_model=15"], ["--set", "divisible by n_heads"]),
    "dropout out of range": (["--set", "dropout=1.5"], ["--set", "ModelConfig.dropout", "[0.0, 1.0)"]),
    "override without =": (["--set", "d_model"], ["--set", "KEY=VALUE"]),
    "training field out of range": (["--train-set", "lr_factor=-1"],
                                    ["--train-set", "TrainConfig.lr_factor", ">= 0.0"]),
    "unknown training field": (["--train-set", "speed=3"], ["--train-set", "'speed'"]),
    "training field given twice": (["--train-set", "seed=3", "--seed", "4"], ["--train-set seed=", "--seed", "once"]),
    "device given twice": (["--train-set", "device=cpu", "--device", "cpu"], ["--train-set device=", "--device"]),
    "resume and overwrite": (["--resume", "--overwrite"], ["--resume and --overwrite"]),
    "export under a file": (["--resume", "--export", "{file}/sub/name"], ["--export", "is a file"]),
}


@pytest.mark.parametrize("case", sorted(BAD_TRAIN_COMMANDS))
def test_bad_commands_are_one_line_and_leave_the_run_intact(run_copy, tmp_path, capsys, case):
    extra, culprits = BAD_TRAIN_COMMANDS[case]
    paths = {"tmp": tmp_path, "file": _corpus(tmp_path, "x", "plain.txt"),
             "malformed": _corpus(tmp_path, "Go.\tVa !\nno tab here\n", "malformed.tsv"),
             "empty_target": _corpus(tmp_path, "Go.\t \n", "empty_target.tsv"),
             "two_lines": _corpus(tmp_path, "Go.\tVa !\nHi.\tSalut !\n", "two_lines.tsv")}
    extra = [a.format(**paths) for a in extra]
    # flags that choose the task replace the toy task's flags
    base = [a for a in TRAIN if a not in ("--task", "reverse", "--max-len", "5", "--n-train", "60")] \
        if "--task" in extra else list(TRAIN)
    if "--n-train" in extra and "--n-train" in base:
        base = base[:base.index("--n-train")] + base[base.index("--n-train") + 2:]
    argv = [*base, "--out", run_copy, *extra]
    if "--resume" not in argv and "--overwrite" not in argv:
        argv.append("--resume")
    before = fingerprint(run_copy)
    status, _out, err = run(argv, capsys)
    assert status == 2
    assert_one_error_line(err, *culprits)
    assert fingerprint(run_copy) == before


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has CUDA")
def test_unavailable_device_is_refused_before_anything_runs(run_copy, capsys):
    before = fingerprint(run_copy)
    status, _, err = run(train_argv(run_copy, "--resume", "--device", "cuda"), capsys)
    assert status == 2
    assert_one_error_line(err, "--device", "CUDA is not available")
    assert fingerprint(run_copy) == before


# -- train: existing runs are never overwritten or mixed up ---------------------------------------------------

def test_an_existing_run_needs_resume_or_overwrite(run_copy, capsys):
    before = fingerprint(run_copy)
    status, _, err = run(train_argv(run_copy), capsys)
    assert status == 2
    assert_one_error_line(err, "--out", "already holds a run", "--resume", "--overwrite")
    assert fingerprint(run_copy) == before


def test_resume_with_other_data_keeps_the_runs_vocabularies(run_copy, capsys):
    before = fingerprint(run_copy)
    argv = ["train", "--task", "numbers", "--max-number", "999", "--preset", "tiny", "--max-steps", "4",
            "--device", "cpu", "--no-progress", "--out", run_copy, "--resume"]
    status, _, err = run(argv, capsys)
    assert status == 2
    assert_one_error_line(err, "--resume", "src_vocab", "different vocabulary")
    assert fingerprint(run_copy) == before           # src_vocab.json and tgt_vocab.json untouched


def test_resume_with_other_model_settings(run_copy, capsys):
    before = fingerprint(run_copy)
    status, _, err = run(train_argv(run_copy, "--resume", "--set", "d_model=32"), capsys)
    assert status == 2
    assert_one_error_line(err, "--resume", "last.pt", "d_model")
    assert fingerprint(run_copy) == before


@pytest.mark.parametrize("damage", ["truncated", "empty", "text"])
def test_resume_from_a_damaged_checkpoint(run_copy, capsys, damage):
    last = run_copy / "last.pt"
    data = last.read_bytes()
    last.write_bytes({"truncated": data[: len(data) // 2], "empty": b"", "text": b"not a checkpoint\n"}[damage])
    before = fingerprint(run_copy)
    status, _, err = run(train_argv(run_copy, "--resume"), capsys)
    assert status == 2
    assert_one_error_line(err, "--resume", str(last))
    assert fingerprint(run_copy) == before


def test_resume_without_last_pt_in_a_run(run_copy, capsys):
    (run_copy / "last.pt").unlink()
    before = fingerprint(run_copy)
    status, _, err = run(train_argv(run_copy, "--resume"), capsys)
    assert status == 2
    assert_one_error_line(err, "--resume", "no last.pt", "--overwrite")
    assert fingerprint(run_copy) == before


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_out_that_cannot_be_a_folder(tmp_path, capsys, where):
    file = tmp_path / "notes.txt"
    file.write_text("mine\n", encoding="utf-8")
    out = file if where == "a file" else file / "run"
    status, _, err = run(train_argv(out), capsys)
    assert status == 2
    assert_one_error_line(err, "--out", "is a file")
    assert file.read_text(encoding="utf-8") == "mine\n"


def test_resume_with_nothing_to_resume_says_so(tmp_path, capsys):
    status, out, err = run(train_argv(tmp_path / "fresh", "--resume"), capsys)
    assert status == 0
    assert any("warning: --resume: nothing to resume" in line for line in err)
    assert "trained 4 steps" in out


def test_overwrite_replaces_the_run_and_its_stale_files(run_copy, capsys):
    (run_copy / "averaged.pt").write_bytes((run_copy / "last.pt").read_bytes())   # from an older recipe
    status, out, _ = run(train_argv(run_copy, "--overwrite"), capsys)
    assert status == 0 and "trained 4 steps" in out
    assert not (run_copy / "averaged.pt").exists()


def test_a_failed_write_during_training_leaves_a_resumable_run(tmp_path, capsys, monkeypatch):
    """The second checkpoint write fails (a full disk): exit 1, one line; the first last.pt is intact and the
    run resumes to the end."""
    from transformer_course.training import checkpoint as ckpt
    out = tmp_path / "run"
    real_save, calls = torch.save, []

    def failing_save(obj, f, *args, **kwargs):
        calls.append(f)
        real_save(obj, f, *args, **kwargs)
        if len(calls) == 3:                          # best.pt and last.pt at step 2, then the next write
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.torch, "save", failing_save)
    status, _, err = run(train_argv(out, "--train-set", "eval_every=2"), capsys)
    monkeypatch.undo()
    assert status == 1
    assert_one_error_line(err, "No space left on device", "--debug")
    assert ckpt.load_checkpoint(out / "last.pt")["step"] == 2
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    status, out_text, _ = run(train_argv(out, "--resume", "--train-set", "eval_every=2"), capsys)
    assert status == 0 and "trained 4 steps" in out_text


# -- tsv corpora of any size ----------------------------------------------------------------------------------

def test_the_shipped_sample_corpus_trains(tmp_path, capsys):
    from transformer_course.data import corpora
    sample = corpora.__file__.replace("corpora.py", "files/sample_en_fr.tsv")
    status, out, _ = run(["train", "--task", "tsv", "--corpus", sample, "--preset", "tiny", "--max-steps", "2",
                          "--device", "cpu", "--no-progress", "--out", tmp_path / "tsv"], capsys)
    assert status == 0
    assert "18 train / 1 val / 1 test pairs" in out


# -- translate ------------------------------------------------------------------------------------------------

def translate(run_dir, *extra):
    return ["translate", "--checkpoint", run_dir, "--device", "cpu", *extra]


def test_translate_keeps_one_line_per_input_line(trained_run, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"abc\n\ncab\n   \nba\n"), encoding="utf-8"))
    status, out, _err = run(translate(trained_run), capsys)
    assert status == 0
    lines = out.split("\n")[:-1]
    assert len(lines) == 5 and lines[1] == "" and lines[3] == ""


def test_translate_warns_about_unknown_tokens(trained_run, capsys):
    status, out, err = run(translate(trained_run, "abc", "azq"), capsys)
    assert status == 0 and len(out.splitlines()) == 2
    assert err == ["transformer-course: warning: sentence 2: unknown to the model, translated as <unk>: 'q', 'z'"]


def test_translate_warns_on_empty_input(trained_run, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))
    status, out, err = run(translate(trained_run), capsys)
    assert status == 0 and out == ""
    assert len(err) == 1 and "warning: no input" in err[0]


def test_translate_refuses_undecodable_input_naming_line_and_byte(trained_run, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"abc\nab\xe9c\n"), encoding="utf-8"))
    status, out, err = run(translate(trained_run), capsys)
    assert status == 2 and out == ""
    assert_one_error_line(err, "stdin line 2", "byte 2", "0xe9", "UTF-8")


def test_translate_refuses_undecodable_arguments(trained_run, capsys):
    status, _, err = run(translate(trained_run, "abc", "ab\udce9c"), capsys)
    assert status == 2
    assert_one_error_line(err, "sentence 2", "not valid UTF-8")


def test_translate_refuses_a_sentence_longer_than_the_model_reads(trained_run, capsys):
    status, out, err = run(translate(trained_run, "abc", "a" * 40), capsys)
    assert status == 2 and out == ""
    assert_one_error_line(err, "sentence 2", "40 tokens", "at most 31", "max_len 32")


@pytest.mark.parametrize("extra, culprits, usage", [
    (["--beam-size", "0", "abc"], ["--beam-size", "int >= 1"], False),
    (["--device", "tpu", "abc"], ["--device", "'tpu'"], False),
    (["--pretrained", "numbers-en-fr"], ["--pretrained", "not allowed with"], True),
    (["--sample", "--temperature", "0", "abc"], ["--temperature", "> 0, got 0", "greedy", "leave out --sample"],
     False),
    (["--sample", "--temperature", "-0.5", "abc"], ["--temperature", "> 0", "'-0.5'"], False),
    (["--sample", "--temperature", "inf", "abc"], ["--temperature", "> 0", "'inf'"], False),
    (["--sample", "--top-k", "0", "abc"], ["--top-k", "int >= 1"], False),
    (["--sample", "--top-k", "1000", "abc"], ["--top-k", "[1, ", "target vocabulary", "1000"], False),
    (["--sample", "--top-p", "0", "abc"], ["--top-p", "(0, 1]", "'0'"], False),
    (["--sample", "--top-p", "1.01", "abc"], ["--top-p", "(0, 1]", "'1.01'"], False),
    (["--sample", "--top-p", "nan", "abc"], ["--top-p", "(0, 1]", "'nan'"], False),
    (["--sample", "--seed", "-1", "abc"], ["--seed", "int >= 0"], False),
    (["--sample", "--beam-size", "2", "abc"], ["--beam-size", "--sample", "one translation"], False),
    (["--top-p", "0.9", "abc"], ["--top-p", "without --sample"], False),
    (["--seed", "3", "abc"], ["--seed", "without --sample"], False),
])
def test_translate_bad_flags(trained_run, capsys, extra, culprits, usage):
    status, out, err = run(translate(trained_run, *extra), capsys)
    assert status == 2 and out == ""
    assert_one_error_line(err, *culprits, usage=usage)


def test_translate_sample_is_seeded_and_top_k_one_is_greedy(trained_run, capsys):
    sentences = ["abc", "cab", "bca", "ccab"]
    status, greedy, _ = run(translate(trained_run, *sentences), capsys)
    assert status == 0
    status, top1, _ = run(translate(trained_run, "--sample", "--top-k", "1", "--temperature", "5", *sentences), capsys)
    assert status == 0 and top1 == greedy
    hot = ["--sample", "--temperature", "4"]
    draws = [run(translate(trained_run, *hot, "--seed", seed, *sentences), capsys) for seed in ("1", "1", "2")]
    assert all(status == 0 for status, _, _ in draws)
    assert draws[0][1] == draws[1][1] != draws[2][1]     # the same seed, the same draws; another seed, others
    assert len(draws[0][1].splitlines()) == 4


def test_unknown_shipped_model_lists_the_names(capsys):
    status, _, err = run(["translate", "--pretrained", "numbers-xx-yy", "one"], capsys)
    assert status == 2
    assert_one_error_line(err, "--pretrained", "'numbers-xx-yy'", "numbers-en-fr")


@pytest.mark.parametrize("damage", ["missing", "truncated", "empty", "folder without model.pt"])
def test_translate_with_an_unusable_checkpoint(run_copy, capsys, damage):
    model = run_copy / "model.pt"
    if damage == "missing":
        target = run_copy / "nothing-here.pt"
    elif damage == "folder without model.pt":
        model.unlink()
        target = run_copy
    else:
        data = model.read_bytes()
        model.write_bytes(data[:1000] if damage == "truncated" else b"")
        target = model
    status, out, err = run(translate(target, "abc"), capsys)
    assert status == 2 and out == ""
    assert_one_error_line(err, "--checkpoint", "model.pt" if damage != "missing" else "nothing-here.pt")


# -- evaluate -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra, culprits, usage", [
    (["--split", "dev"], ["--split", "'dev'"], False),
    (["--show-errors", "-1"], ["--show-errors", "int >= 0"], False),
    (["--task", "numbers", "--max-number", "199"], ["src_vocab", "different vocabulary"], False),
    (["--src-lang", "de"], ["--task", "without --task"], False),
])
def test_evaluate_bad_input(trained_run, capsys, extra, culprits, usage):
    status, out, err = run(["evaluate", "--checkpoint", trained_run, "--device", "cpu", *extra], capsys)
    assert status == 2 and out == ""
    assert_one_error_line(err, *culprits, usage=usage)


# -- the parser itself ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, culprit", [
    ([], "the following arguments are required: {train,translate,evaluate,doctor}"),
    (["trian"], "invalid choice: 'trian'"),
    (["train", "--out", "x", "--bogus"], "unrecognized arguments: --bogus"),
    (["train"], "the following arguments are required: --out"),
    (["translate", "abc"], "one of the arguments --checkpoint --pretrained is required"),
])
def test_wrong_flags_show_the_usage_then_one_line(capsys, argv, culprit):
    status, _out, err = run(argv, capsys)
    assert status == 2
    assert_one_error_line(err, culprit, usage=True)


def test_help_documents_the_exit_statuses(capsys):
    for argv in (["--help"], ["train", "--help"], ["translate", "--help"], ["evaluate", "--help"]):
        status, out, _ = run(argv, capsys)
        assert status == 0
        assert "exit status:" in out and "2    a mistake you can fix" in out and "--debug" in out


def test_debug_shows_the_traceback(run_copy, capsys):
    status, _, err = run(train_argv(run_copy, "--resume", "--set", "width=3", "--debug"), capsys)
    assert status == 2
    assert err[0] == "Traceback (most recent call last):"
    assert err[-1].startswith(PREFIX) and "'width'" in err[-1]


def test_readme_has_the_exit_status_table():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for code, meaning in (("0", "success"), ("1", "a failure while running"), ("2", "a mistake you can fix"),
                          ("130", "interrupted")):
        assert f"| {code} | {meaning}" in readme, code

