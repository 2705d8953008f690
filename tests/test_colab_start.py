"""A simulated Colab start in Colab's own runtime: its preinstalled versions (tests/data/colab_pip_freeze.txt, a
dated snapshot of Colab's `pip freeze`: ipywidgets 7.7.1, numpy 2.1.3, ...) in a virtual environment built once
by `python3 tools/run.py colab-snapshot` (the `test` command runs it first), WITHOUT the course package. The
Colab copies of the widgets chapter and the training chapter (colab/NAME.ipynb, what the Colab button opens) are
executed there top to bottom as *Runtime → Run all* does, their install cell's URL replaced by a wheel of this
checkout (TC_PACKAGE_URL). pip must change none of Colab's versions when the install cell installs the package,
every widget must redraw when a control moves, and Run all must leave the learner's exercise stubs as they were
(no solution cell may run and overwrite them). Nothing needs the network: the wheel is built here without build
isolation, and pip runs with no index, from the snapshot's cached wheels.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import execute_notebooks, run

ROOT = Path(__file__).resolve().parent.parent

for _module in ("nbclient", "nbformat", "ipykernel", "setuptools"):  # the book's and the build's tools
    pytest.importorskip(_module)
import nbformat  # noqa: E402
import widget_probe  # noqa: E402  (tests/, on sys.path as pytest's rootdir-less test folder)

import transformer_course  # noqa: E402
from transformer_course import versions  # noqa: E402

if Path(transformer_course.__file__).resolve().parent.parent != ROOT:
    # a leg of the matrix (its package installed from a wheel, nbclient among ipywidgets 7's dependencies)
    pytest.skip("simulated Colab starts build this checkout's wheel: they run in the checkout's environment "
                "(the README's test command), not in a leg of the matrix", allow_module_level=True)


def _stub_names(nb) -> list[str]:
    """The functions the learner is to write: defined in a code cell whose body raises NotImplementedError."""
    names = []
    for cell in nb.cells:
        if cell.cell_type == "code" and "raise NotImplementedError" in cell.source:
            names += re.findall(r"^def (\w+)\(", cell.source, flags=re.MULTILINE)
    return names


# ------------------------------------------------------------------------------- Colab's preinstalled versions

# The widgets chapter (ipywidgets, the shipped model) and the training chapter (PyTorch, tqdm, sacrebleu).
SNAPSHOT_CHAPTERS = ["a4_widgets.ipynb", "09_training.ipynb"]


def test_every_floor_admits_colabs_preinstalled_version():
    """The declared floors are at most Colab's versions (pip would otherwise upgrade what Colab preinstalls)."""
    python, preinstalled = run.colab_snapshot()
    assert versions.release(versions.PYTHON_FLOOR) <= versions.release(".".join(python.split(".")[:2]))
    for requirement in versions.REQUIREMENTS:
        if requirement.name in preinstalled:
            colab = preinstalled[requirement.name].split("+")[0]
            assert versions.release(requirement.floor) <= versions.release(colab), (requirement, colab)
    assert {"ipywidgets", "numpy", "matplotlib", "torch"} <= set(preinstalled)


def _snapshot_python() -> Path:
    """The simulated Colab runtime's interpreter; a skip here (a failure where CI is set) when it cannot be built."""
    try:
        return run.colab_snapshot_env()
    except run.ColabSnapshotMissing as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI: {err}")
        pytest.skip(str(err))


def test_colabs_preinstalled_versions_stay_and_the_chapters_run_on_them(tmp_path, monkeypatch):
    """pip installs the package next to Colab's versions without changing one (the dry run's report lists only
    the package and what Colab lacks), then the widgets chapter (every widget redraws when a control moves:
    tests/widget_probe.py) and the training chapter run top to bottom, with ipywidgets 7.7.1 and the rest.

    Colab runs Python 3.13 and a CPU build of torch 2.11; here it is Python 3.11 and torch 2.13.0 (CPU), the
    builds at hand offline (run.COLAB_SIMULATED_*). The cached environment is never changed: a fresh one
    without packages of its own sees it through a .pth file, and every install goes there."""
    base = _snapshot_python()
    layer = tmp_path / "colab-runtime"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(layer)], check=True)
    python = layer / "bin" / "python"
    paths = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           check=True, capture_output=True, text=True).stdout.strip()
    base_site = subprocess.run([str(base), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip()
    # addsitedir (not a plain path): the preinstalled packages' own .pth files are processed as in Colab
    (Path(paths) / "colab_preinstalled.pth").write_text(f"import site; site.addsitedir({base_site!r})\n")
    _, preinstalled = run.colab_snapshot()
    preinstalled["torch"] = run.COLAB_SIMULATED_TORCH

    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "PYTHONPATH")}
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(run.COLAB_WHEELS), PIP_DISABLE_PIP_VERSION_CHECK="1",
               IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"))
    wheel = run.build_wheel(sys.executable, tmp_path / "wheels")
    env["TC_PACKAGE_URL"] = str(wheel)

    # 1. what the install cell's pip would do: nothing preinstalled may change
    report_file = tmp_path / "report.json"
    dry = subprocess.run([str(python), "-m", "pip", "install", "-q", "--dry-run", "--report", str(report_file),
                          str(wheel)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert dry.returncode == 0, f"pip cannot install the package next to Colab's versions:\n{dry.stderr[-3000:]}"
    install = {run.normalize_name(item["metadata"]["name"]): item["metadata"]["version"]
               for item in json.loads(report_file.read_text())["install"]}
    changed = {name: f"{preinstalled[name]} -> {version}" for name, version in install.items() if name in preinstalled}
    assert not changed, f"installing the package would change Colab's preinstalled packages: {changed}"
    assert "transformer-course" in install
    print("the install cell adds:", ", ".join(f"{name} {version}" for name, version in sorted(install.items())))

    # 2. the chapters, top to bottom, each starting with its install cell (the widgets chapter then moves controls).
    # The kernel runs in the simulated runtime; the front end (nbclient) is this test's, as Colab's front end is
    # not the runtime's either (and the runtime's nbclient with its pyzmq can miss a reply while output widgets
    # sync, stalling a cell until its timeout).
    kernels = tmp_path / "jupyter" / "kernels" / "colab-runtime"
    kernels.mkdir(parents=True)
    kernel_env = {key: env[key] for key in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "PIP_DISABLE_PIP_VERSION_CHECK",
                                            "IPYTHONDIR", "JUPYTER_DATA_DIR", "TC_PACKAGE_URL")}
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "simulated Colab runtime", "language": "python", "env": kernel_env}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    workdir = tmp_path / "book"      # not the checkout: its transformer_course/ folder must not shadow the install
    workdir.mkdir()
    for name in SNAPSHOT_CHAPTERS:
        nb = nbformat.read(ROOT / "colab" / name, as_version=4)
        extra = widget_probe.cells() if name == "a4_widgets.ipynb" else []
        stubs = _stub_names(nb)
        if stubs:  # after Run all, a last cell reports which stubs still raise NotImplementedError
            extra = [*extra, "import json\nprint(json.dumps({name: 'NotImplementedError' in globals()[name]"
                             f".__code__.co_names for name in {stubs!r}}}))"]
        nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
        start = time.perf_counter()
        execute_notebooks.notebook_client(nb, timeout=300, kernel_name="colab-runtime",
                                          resources={"metadata": {"path": str(workdir)}}).execute()
        print(f"colab/{name}: {time.perf_counter() - start:.1f} s")
        if stubs:
            still_stubs = json.loads(nb.cells.pop().outputs[0]["text"])
            assert still_stubs == dict.fromkeys(stubs, True), f"Run all overwrote the learner's stubs: {still_stubs}"
            verdicts = ["".join(output.get("text", "") for output in cell.outputs) for cell in nb.cells
                        if cell.cell_type == "code" and "raise NotImplementedError" in cell.source
                        and "check_" in cell.source]
            # every stub's check ran and reported the exercise as not attempted yet (no solution replaced it)
            assert verdicts and all("not attempted yet" in text for text in verdicts), verdicts
        if name == "a4_widgets.ipynb":
            found = widget_probe.report("".join(output.get("text", "") for output in nb.cells[-1].outputs))
            assert found["ipywidgets"] == preinstalled["ipywidgets"], found
            assert set(found["moved"]) == {"softmax_scaling", "mask", "positional", "warmup", "attention_explorer"}
            assert not any(found["unmoved"].values()), f"controls that were not moved: {found['unmoved']}"

    # 3. after the installs, every preinstalled package still has Colab's version, and the package is the wheel's
    after = run.installed_versions(python, sorted(preinstalled))
    differ = {name: f"{version} -> {after.get(name)}" for name, version in preinstalled.items()
              if after.get(name, "-").split("+")[0] != version.split("+")[0]}
    assert not differ, f"the chapters' install cells changed Colab's preinstalled packages: {differ}"
    where = subprocess.run([str(python), "-c", "import transformer_course; print(transformer_course.__file__)"],
                           capture_output=True, text=True, cwd=workdir, check=True, env=env).stdout
    assert str(layer) in where, f"the package was not installed into the simulated runtime: {where}"
