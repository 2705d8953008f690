"""`transformer-course train | translate | evaluate` through main(argv): the paths that work.

Bad input is the subject of tests/test_bad_input/.
"""
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
    assert main(TRAIN + ["--out", str(out / "run"), "--export", str(out / "export" / "toy")]) == 0
    return out / "run"


def test_train_writes_a_run(run_dir):
    for name in ("model.pt", "last.pt", "best.pt", "src_vocab.json", "tgt_vocab.json", "history.json"):
        assert (run_dir / name).exists(), name
    assert (run_dir.parent / "export" / "toy.safetensors").exists()
    history = json.loads((run_dir / "history.json").read_text())
    assert history["step"][-1] == 4
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]


def test_translate_args_and_stdin(run_dir, capsys, monkeypatch):
    assert main(["translate", "--checkpoint", str(run_dir), "--device", "cpu", "abc", "cab"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    monkeypatch.setattr(sys, "stdin", io.StringIO("abc\ncab\n"))
    assert main(["translate", "--checkpoint", str(run_dir / "model.pt"), "--device", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == lines


def test_evaluate_prints_metrics_and_signature(run_dir, capsys):
    assert main(["evaluate", "--checkpoint", str(run_dir), "--device", "cpu", "--split", "val"]) == 0
    out = capsys.readouterr().out
    assert "exact match" in out and "BLEU" in out and "(nrefs:1|" in out and "chrF" in out


def test_resume_continues(run_dir, capsys):
    assert main(TRAIN[:TRAIN.index("--max-steps")] + ["--max-steps", "6", "--device", "cpu", "--no-progress",
                                                      "--out", str(run_dir), "--resume"]) == 0
    out = capsys.readouterr().out
    assert "resuming from" in out and "trained 6 steps" in out


def test_module_entry_point_help():
    result = subprocess.run([sys.executable, "-m", "transformer_course", "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "train" in result.stdout and "translate" in result.stdout


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_train_with_a_position_term_in_attention(positional, tmp_path, capsys):
    """`--set positional=rope|alibi` trains the numbers task, and the run translates after reloading."""
    out = tmp_path / positional
    assert main(["train", "--task", "numbers", "--max-number", "299", "--preset", "tiny", "--max-steps", "3",
                 "--device", "cpu", "--threads", "1", "--no-progress", "--set", f"positional={positional}",
                 "--out", str(out)]) == 0
    assert json.loads((out / "history.json").read_text())["step"][-1] == 3
    capsys.readouterr()
    assert main(["translate", "--checkpoint", str(out), "--device", "cpu", "seven"]) == 0
    assert capsys.readouterr().out.strip()              # one line of output (untrained: any words)


@pytest.mark.parametrize("flags, preset, task, overrides", [
    (["--task", "numbers", "--max-number", "99999"], "course", "numbers", {}),
    (["--task", "reverse"], "course", "reverse", {}),
    (["--preset", "tiny", "--max-steps", "1200"], "tiny", "numbers", {"max_steps": 1200}),
    (["--preset", "paper-base", "--task", "sort"], "paper", "sort", {}),
    (["--preset", "gpu", "--task", "trans-de-en"], "gpu", "trans-de-en", {}),
    (["--preset", "gpu", "--task", "multi30k", "--corpus", "multi30k"], "gpu", "multi30k", {}),
    (["--train-set", "patience=2", "--monitor", "loss", "--seed", "3"], "course", "numbers",
     {"patience": 2, "monitor": "loss", "seed": 3}),
    (["--train-set", "device=cpu"], "course", "numbers", {"device": "cpu"}),
    (["--device", "cpu", "--compile"], "course", "numbers", {"device": "cpu", "compile": True}),
])
def test_the_command_line_trains_the_recipe_the_api_names(flags, preset, task, overrides, tmp_path):
    """`train` resolves its TrainConfig as `train_recipe(preset, task, **flags)`: what a notebook or a
    benchmark gets by calling train_recipe with the same names (the preset, then the task's stop rule)."""
    from transformer_course.__main__ import _data_args, build_parser, resolve_train_config
    from transformer_course.config import train_recipe
    args = build_parser().parse_args(["train", *flags, "--out", str(tmp_path / "run")])
    assert resolve_train_config(args, _data_args(args)) == train_recipe(preset, task, **overrides)


def test_train_trans_de_en_with_bpe_then_translate_and_evaluate(tmp_path, capsys):
    """`--task trans-de-en` on a file in the Ding dictionary's format (the project's own sentences): a joint BPE
    vocabulary is learned and saved with the run, and the run translates and evaluates after reloading."""
    corpus = tmp_path / "de-en"
    corpus.write_text("# written for this test\n" + "\n".join(
        f"Der Hund {i} läuft nach Hause. :: The dog {i} runs home." for i in range(30)) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "--task", "trans-de-en", "--corpus", str(corpus), "--n-test", "4", "--n-val", "4",
                 "--vocab-size", "40", "--preset", "tiny", "--max-steps", "2", "--device", "cpu", "--threads", "1",
                 "--no-progress", "--out", str(out)]) == 0
    assert "task ding-de-en: 22 train / 4 val / 4 test pairs; vocabularies 40 / 40" in capsys.readouterr().out
    assert json.loads((out / "src_vocab.json").read_text())["tokenizer"] == "bpe"
    assert main(["translate", "--checkpoint", str(out), "--device", "cpu", "Der Hund 3 läuft."]) == 0
    assert capsys.readouterr().out.count("\n") == 1      # one line (untrained after two steps: any pieces)
    assert main(["evaluate", "--checkpoint", str(out), "--device", "cpu", "--split", "test"]) == 0
    report = capsys.readouterr().out
    assert "ding-de-en test: 4 pairs" in report and "chrF" in report and "(nrefs:1|" in report


def _write_multi30k_sample(root):
    """Multi30k's layout (train/val/test_2016_flickr, one gzip file per language, line-aligned), with sentences
    written for this test."""
    import gzip
    root.mkdir()
    animals = [("dog", "Hund"), ("cat", "Katze"), ("horse", "Pferd"), ("bird", "Vogel"), ("child", "Kind")]
    places = [("on the grass", "auf dem Gras"), ("in the water", "im Wasser"), ("near a house", "bei einem Haus")]
    lines = {"en": [], "de": []}
    for en_animal, de_animal in animals:
        for en_place, de_place in places:
            lines["en"].append(f"A {en_animal} sits {en_place}.")
            lines["de"].append(f"Ein {de_animal} sitzt {de_place}.")
    splits = {"train": slice(0, 11), "val": slice(11, 13), "test_2016_flickr": slice(13, 15)}
    for stem, part in splits.items():
        for lang in ("en", "de"):
            with gzip.open(root / f"{stem}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(lines[lang][part]) + "\n")


def test_train_multi30k_from_a_folder_then_evaluate(tmp_path, capsys):
    """`--task multi30k --corpus DIR` reads Multi30k's own splits from files in its format (English to German by
    default, a joint BPE), and the run evaluates after reloading; a folder without the files is one clear error
    that names --corpus and --download."""
    corpus = tmp_path / "multi30k"
    _write_multi30k_sample(corpus)
    out = tmp_path / "run"
    assert main(["train", "--task", "multi30k", "--corpus", str(corpus), "--vocab-size", "60", "--preset", "tiny",
                 "--max-steps", "2", "--device", "cpu", "--threads", "1", "--no-progress", "--out", str(out)]) == 0
    assert "task multi30k-en-de: 11 train / 2 val / 2 test pairs; vocabularies 60 / 60" in capsys.readouterr().out
    assert main(["evaluate", "--checkpoint", str(out), "--device", "cpu", "--split", "test"]) == 0
    report = capsys.readouterr().out
    assert "multi30k-en-de test: 2 pairs" in report and "chrF" in report
    # the corpus moved (a shipped model meets its corpus in another folder): the error says which flags read it
    # from there, and with them the model is scored on its own test split again, not refused as seen data
    moved = corpus.rename(tmp_path / "elsewhere")
    assert main(["evaluate", "--checkpoint", str(out), "--device", "cpu", "--split", "test"]) == 2
    flags = "--task multi30k --src-lang en --tgt-lang de --vocab-size 60"
    assert f"give the data flags: {flags} --corpus PATH" in capsys.readouterr().err
    assert main(["evaluate", "--checkpoint", str(out), "--device", "cpu", "--split", "test", *flags.split(),
                 "--corpus", str(moved)]) == 0
    assert capsys.readouterr().out == report
    corpus = moved
    assert main(["train", "--task", "multi30k", "--corpus", str(tmp_path / "empty"), "--preset", "tiny",
                 "--out", str(tmp_path / "run2")]) == 2
    err = capsys.readouterr().err
    assert "--corpus: no train.en or train.en.gz in" in err and "--download" in err
    assert not (tmp_path / "run2").exists()                  # a failing command leaves nothing behind
    assert main(["train", "--task", "trans-de-en", "--download", "--out", str(tmp_path / "run3")]) == 2
    assert "--download: applies to --task multi30k only" in capsys.readouterr().err
    assert main(["train", "--task", "multi30k", "--corpus", str(corpus), "--tgt-lang", "es",
                 "--out", str(tmp_path / "run4")]) == 2
    assert "--tgt-lang: multi30k has en, de, fr, got 'es'" in capsys.readouterr().err


def test_the_api_trains_what_the_command_line_trains(tmp_path):
    """prepare_run + train + finish_run, the pieces `train` is made of, given the configuration the command line
    resolves, leave the same weights and test scores as the command (run_dir's module fixture is not reused: the
    resume test continues it)."""
    import torch

    from transformer_course.__main__ import _data_args, build_parser, resolve_train_config
    from transformer_course.config import get_preset
    from transformer_course.data.spec import load_task, task_spec
    from transformer_course.training import finish_run, prepare_run, train
    from transformer_course.training.checkpoint import load_checkpoint
    from transformer_course.training.run import cpu_settings

    cli_out, api_out = tmp_path / "cli", tmp_path / "api"
    assert main(TRAIN + ["--out", str(cli_out)]) == 0
    args = build_parser().parse_args(TRAIN + ["--out", str(api_out)])
    spec = task_spec("reverse", max_len=5, n_train=60)  # the task the command trains, through the API
    assert _data_args(args) == spec
    train_config = resolve_train_config(args, spec)
    data = load_task(spec)
    vocabs = data.build_vocabs()
    model_config = get_preset("tiny").replace(src_vocab_size=len(vocabs[0]), tgt_vocab_size=len(vocabs[1]))
    with cpu_settings(args.threads):                 # the command's own process settings
        model, loader, evaluate_fn = prepare_run(data, vocabs, model_config, train_config)
        history = train(model, loader, train_config, evaluate_fn=evaluate_fn, vocabs=vocabs, callbacks=[])
        test = finish_run(api_out, model, history, data, vocabs, train_config)
    cli, api = load_checkpoint(cli_out / "model.pt"), load_checkpoint(api_out / "model.pt")
    assert cli["model_config"] == api["model_config"]
    for name, weight in cli["model"].items():
        assert torch.equal(weight, api["model"][name]), name
    assert cli["extra"]["test"] == test == api["extra"]["test"]
    assert json.loads((api_out / "history.json").read_text())["step"][-1] == 4


def test_cpu_settings_flush_denormals_inside_and_restore_the_process_after():
    import torch

    from transformer_course.training.run import cpu_settings

    tiny = torch.tensor([1e-39], dtype=torch.float32)     # below float32's smallest normal number, 1.2e-38
    threads = torch.get_num_threads()
    with cpu_settings(1):
        if not torch.set_flush_denormal(True):
            pytest.skip("this processor cannot flush denormals (no SSE3)")
        assert torch.get_num_threads() == 1
        assert (tiny * 1.0).item() == 0.0                  # flushed to zero inside
    assert torch.get_num_threads() == threads
    assert (tiny * 1.0).item() > 0.0                      # a denormal again after
    with pytest.raises(ValueError, match="threads: expected a positive int or None, got 0"), cpu_settings(0):
        pass
