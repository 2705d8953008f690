"""display.glue hands numbers to the prose without myst-nb being required; load_results reads the results
files that benchmarks/ wrote into the package, so a chapter finds them wherever the package is installed."""
from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

from transformer_course.display import glue, load_results

ROOT = Path(__file__).resolve().parent.parent


def test_glue_without_myst_nb_does_nothing_and_returns_none(monkeypatch):
    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError("myst_nb is not installed here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    assert glue("accuracy", 0.933, decimals=3) is None


def test_glue_with_myst_nb_stores_the_value_under_its_name(monkeypatch):
    stored = {}
    myst_nb = pytest.importorskip("myst_nb")   # the book's extra: absent from the matrix's legs

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: stored.update({name: (value, display)}))
    assert glue("final_loss", 0.10704, decimals=3) is None
    assert stored == {"final_loss": (0.107, False)}


def test_glue_stores_a_float_rounded_to_the_decimals_the_prose_shows(monkeypatch):
    stored = {}
    myst_nb = pytest.importorskip("myst_nb")
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: stored.update({name: value}))
    # the last digits of 0.8761880490497608 differ on another processor (0.8761880698814408): never stored
    glue("ratio", 0.8761880490497608, decimals=1)
    glue("percent", 46.666666666666664, decimals=0)
    glue("steps", 400, decimals=0)                  # an int is exact: decimals leaves it as it is
    assert stored == {"ratio": 0.9, "percent": 47, "steps": 400}
    assert type(stored["percent"]) is int
    with pytest.raises(TypeError, match="decimals"):
        glue("loss", 0.0727)


@pytest.mark.parametrize("name", ["", "two words", "a.b", 3])
def test_glue_refuses_names_the_prose_could_not_reference(name):
    with pytest.raises(ValueError, match="name"):
        glue(name, 1.0)


def test_load_results_reads_the_installed_package_from_any_folder(tmp_path, monkeypatch):
    """In Colab there is no checkout: the files come with the package, whatever the working directory."""
    monkeypatch.chdir(tmp_path)
    shipped = json.loads((ROOT / "transformer_course" / "results" / "ablations.json").read_text())
    assert load_results("ablations") == shipped
    assert load_results("no_such_results") is None


@pytest.mark.parametrize("name", ["", "../ablations", "a.b", 3])
def test_load_results_refuses_names_that_are_not_file_stems(name):
    with pytest.raises(ValueError, match="name"):
        load_results(name)


def test_the_results_files_are_package_data():
    """pyproject.toml ships them, so an installed wheel has them too."""
    tomllib = pytest.importorskip("tomllib")     # Python 3.11 on; the 3.10 leg reads the same file
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "results/*.json" in package_data["transformer_course"]


def test_the_committed_results_files_record_how_they_were_made():
    """Every results file the chapters print names its command, date and machine, and has >= 3 seeds."""
    files = sorted((ROOT / "transformer_course" / "results").glob("*.json"))
    assert files, "no committed results files"
    for path in files:
        data = json.loads(path.read_text())
        assert data["command"].startswith("python benchmarks/") and data["date"] and data["machine"]["cpu"], path
        if "seeds" in data:
            assert len(set(data["seeds"])) >= 3, path


def test_glue_stores_a_numpy_scalar_as_the_python_number_a_format_spec_reads(monkeypatch):
    import numpy as np
    stored = {}
    myst_nb = pytest.importorskip("myst_nb")
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: stored.update({name: value}))
    glue("ratio", np.float64(0.8153725727367015), decimals=2)
    glue("count", np.int64(988))
    assert stored == {"ratio": 0.82, "count": 988}
    assert type(stored["ratio"]) is float and type(stored["count"]) is int
