"""A simulated Colab start: a fresh virtual environment WITHOUT the course package, the Colab copy of a chapter
(colab/NAME.ipynb, what the Colab button opens) executed top to bottom as *Runtime → Run all* does, its install
cell's URL replaced by a wheel of this checkout (TC_PACKAGE_URL). Run all must leave the learner's exercise
stubs as they were: no solution cell may run and overwrite them.

Colab comes with torch, numpy, matplotlib, ipykernel and friends preinstalled; the simulation gives the fresh
environment the same head start by making the test environment's third-party packages visible through a
.pth file (a plain path entry: the editable install of `transformer_course` is NOT visible through it). So
what is tested is exactly the notebook's path: the install cell installs the package, then the chapter runs.
Nothing needs the network: the wheel is built here without build isolation, and pip runs with no index.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import run  # noqa: E402  (tools/ is not a package)

for _module in ("nbclient", "nbformat", "ipykernel", "setuptools"):  # the book's and the build's tools
    pytest.importorskip(_module)
# A chapter that needs no trained model or long training: quick to execute.
CHAPTER_CANDIDATES = ["03_general_attention.ipynb", "01_attention_history.ipynb"]


def _chapter() -> Path | None:
    for name in CHAPTER_CANDIDATES:
        if (ROOT / "colab" / name).exists():
            return ROOT / "colab" / name
    return None


def _stub_names(nb: dict) -> list[str]:
    """The functions the learner is to write: defined in a code cell whose body raises NotImplementedError."""
    names = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code" and "raise NotImplementedError" in source:
            names += re.findall(r"^def (\w+)\(", source, flags=re.MULTILINE)
    return names


@pytest.mark.skipif(_chapter() is None, reason="no chapter notebook to run yet")
def test_chapter_runs_after_its_own_install_cell_in_a_fresh_environment(tmp_path):
    venv = tmp_path / "colab-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "colab_preinstalled.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    check = subprocess.run([str(python), "-c", "import transformer_course"], capture_output=True, text=True,
                           cwd=tmp_path)
    assert check.returncode != 0, "the fresh environment must not see the package before the install cell"

    chapter = _chapter()
    stubs = _stub_names(json.loads(chapter.read_text()))
    assert stubs, f"{chapter.name} has no exercise stub to check: choose a chapter with coding exercises"
    # After Run all, a last cell reports which stubs still raise NotImplementedError (were not overwritten).
    probe = ("import json\n"
             f"print(json.dumps({{n: 'NotImplementedError' in globals()[n].__code__.co_names for n in {stubs!r}}}))")
    runner = (
        "import json, sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "nb.cells.append(nbformat.v4.new_code_cell(sys.argv[3]))\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', record_timing=False,\n"
        "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "print('STUBS', nb.cells[-1].outputs[0]['text'].strip())\n"
        "print('VERDICTS', json.dumps([''.join(o.get('text', '') for o in c.outputs) for c in nb.cells\n"
        "                              if c.cell_type == 'code' and 'raise NotImplementedError' in c.source\n"
        "                              and 'check_' in c.source]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "PYTHONPATH")}
    # the install cell installs a wheel of this checkout instead of GitHub's copy, offline
    env["TC_PACKAGE_URL"] = str(run.build_wheel(sys.executable, tmp_path / "wheels"))
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # Run from a copy's folder so the checkout's own `transformer_course/` folder cannot shadow the install.
    workdir = tmp_path / "book"
    workdir.mkdir()
    result = subprocess.run([str(python), "-c", runner, str(chapter), str(workdir), probe], env=env, cwd=workdir,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("STUBS", "VERDICTS")))
    still_stubs = json.loads(lines["STUBS"])
    assert still_stubs == {name: True for name in stubs}, f"Run all overwrote the learner's stubs: {still_stubs}"
    verdicts = json.loads(lines["VERDICTS"])
    # every stub's check ran and reported the exercise as not attempted yet (no solution had replaced it)
    assert verdicts and all("not attempted yet" in text for text in verdicts), verdicts
    where = subprocess.run([str(python), "-c", "import transformer_course; print(transformer_course.__file__)"],
                           capture_output=True, text=True, cwd=workdir, check=True).stdout
    assert str(venv) in where, f"the package was not installed into the fresh environment: {where}"
