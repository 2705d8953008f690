"""A simulated Colab start: a fresh virtual environment WITHOUT the course package, the chapter's own install
cell run with its URL replaced by a wheel of this checkout (TC_PACKAGE_URL), then the chapter executed top to
bottom.

Colab comes with torch, numpy, matplotlib, ipykernel and friends preinstalled; the simulation gives the fresh
environment the same head start by making the test environment's third-party packages visible through a
.pth file (a plain path entry: the editable install of `transformer_course` is NOT visible through it). So
what is tested is exactly the notebook's path: the install cell installs the package, then the chapter runs.
Nothing needs the network: the wheel is built here without build isolation, and pip runs with no index.
"""
from __future__ import annotations

import os
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
        if (ROOT / "book" / name).exists():
            return ROOT / "book" / name
    return None


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
    runner = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', record_timing=False,\n"
        "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "print('executed', len(nb.cells), 'cells')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "PYTHONPATH")}
    # the install cell installs a wheel of this checkout instead of GitHub's copy, offline
    env["TC_PACKAGE_URL"] = str(run.build_wheel(sys.executable, tmp_path / "wheels"))
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # Run from a copy's folder so the checkout's own `transformer_course/` folder cannot shadow the install.
    workdir = tmp_path / "book"
    workdir.mkdir()
    result = subprocess.run([str(python), "-c", runner, str(chapter), str(workdir)], env=env, cwd=workdir,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import transformer_course; print(transformer_course.__file__)"],
                           capture_output=True, text=True, cwd=workdir, check=True).stdout
    assert str(venv) in where, f"the package was not installed into the fresh environment: {where}"
