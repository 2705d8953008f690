"""A handful of the battery's cases as real processes: exit statuses, stderr as a user sees it, locales."""
import os
import subprocess
import sys

import pytest


def cli(*args, stdin=b"", locale=None):
    env = dict(os.environ)
    if locale is not None:
        env.pop("PYTHONUTF8", None)
        env.pop("PYTHONIOENCODING", None)
        env.update(LC_ALL=locale, LANG=locale)
    result = subprocess.run([sys.executable, "-m", "transformer_course", *args], input=stdin, capture_output=True,
                            env=env, timeout=300)
    return result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8").splitlines()


def test_a_bad_value_is_one_line_and_status_2(tmp_path):
    status, out, err = cli("train", "--max-steps", "-1", "--out", str(tmp_path / "run"))
    assert (status, out) == (2, "")
    assert err == ["transformer-course: error: argument --max-steps: expected an int >= 1, got '-1'"]
    assert not (tmp_path / "run").exists()


def test_no_command_shows_the_usage():
    status, _, err = cli()
    assert status == 2 and err[0].startswith("usage: transformer-course")
    assert err[-1] == ("transformer-course: error: the following arguments are required: "
                       "{train,translate,evaluate,doctor}")


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_undecodable_input_is_an_error_whatever_the_locale(locale):
    status, out, err = cli("translate", "--pretrained", "numbers-en-fr", stdin=b"seven\nsev\xe8n\n", locale=locale)
    assert (status, out) == (2, "")
    assert err == ["transformer-course: error: stdin line 2: byte 3 (0xe8) is not valid UTF-8; save the text as UTF-8"]


def test_a_pipe_keeps_one_line_per_input_line():
    status, out, err = cli("translate", "--pretrained", "numbers-en-fr", "--with-source",
                           stdin=b"ninety-seven\n\nseventy-one\n", locale="C")
    assert status == 0 and err == []
    assert out.split("\n")[:-1] == ["ninety-seven\tquatre-vingt-dix-sept", "", "seventy-one\tsoixante et onze"]


def test_debug_shows_the_traceback():
    status, _, err = cli("translate", "--pretrained", "numbers-en-fr", "--debug", " ".join(["one"] * 200))
    assert status == 2
    assert err[0] == "Traceback (most recent call last):" and "UsageError" in "\n".join(err)
    assert err[-1].startswith("transformer-course: error: sentence 1: 200 tokens")
