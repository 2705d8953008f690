"""`transformer-course doctor`: passes on the test machine, and a missing, old or broken piece gives a cross with
its fix, without a traceback, while the other checks still run.

Every kind of fix the doctor prints is also RUN here, as printed, in a throwaway virtual environment, with pip
kept off the network (PIP_CONFIG_FILE=/dev/null, local wheels only): a base dependency from a folder of wheels,
PyTorch's CPU build from a local PEP 503 index standing in for PyTorch's CPU index (TC_TORCH_INDEX_URL), the
package from a checkout (`pip install -e`), the shipped model restored in a git checkout. The wheels are the test
environment's own installed packages, packed back into wheels, so nothing is downloaded. The PyTorch install is
the slow one (about 30 to 60 s: a 190 MB wheel); it is skipped, with the reason, where the CPU wheel is not on
this machine.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tools import book
from transformer_course import doctor
from transformer_course.__main__ import main
from transformer_course.versions import REQUIREMENTS

ROOT = Path(__file__).resolve().parent.parent
FLOOR = {r.name: r.floor for r in REQUIREMENTS}
# PyTorch's CPU wheel for this machine: the find-links folder of this machine's pip (see `pip config list`)
TORCH_WHEEL_DIRS = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split()] + [Path("/opt/wheels")]


def _have_front_end() -> bool:
    return doctor._importable("ipykernel") and (doctor._importable("jupyterlab") or doctor._importable("notebook"))


@pytest.fixture
def neutral_cwd(tmp_path, monkeypatch):
    """Run from a folder outside any checkout, so the report does not depend on where pytest was started."""
    monkeypatch.chdir(tmp_path)


def test_doctor_passes_here(capsys, monkeypatch, neutral_cwd):
    if not _have_front_end():   # the matrix's legs install the package and pytest, not JupyterLab
        monkeypatch.setattr(doctor, "check_jupyter", lambda env=None: doctor.Check("Jupyter", True, "not here"))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].startswith(f"Python: {sys.executable} ")
    for name in ["Python", "transformer-course", *FLOOR, "Jupyter", "threads", "device", "shipped model",
                 "widgets"]:
        assert any(line.startswith("✓ " + name + " ") for line in lines), name
    # training passes; on a busy machine it may be slower than the warning threshold: "!" with advice
    assert any(re.match(r"[✓!] training .* loss", line) for line in lines)
    assert "'forty-two' -> 'quarante-deux'" in out
    assert "Everything the course needs works here" in lines[-1]


@pytest.fixture
def quick(monkeypatch, neutral_cwd):
    """The slow checks replaced by instant passes: these tests are about the report, not about training."""
    monkeypatch.setattr(doctor, "check_training", lambda: doctor.Check("training", True, "skipped in this test"))
    monkeypatch.setattr(doctor, "check_shipped_model", lambda: doctor.Check("shipped model", True, "skipped"))
    if not _have_front_end():
        monkeypatch.setattr(doctor, "check_jupyter", lambda env=None: doctor.Check("Jupyter", True, "not here"))


def test_a_missing_package_is_a_cross_with_its_fix(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: None if name == "ipywidgets" else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    missing = next(i for i, line in enumerate(lines) if line.startswith("✗ ipywidgets"))
    assert "not installed" in lines[missing]
    fix = f'{sys.executable} -m pip install "ipywidgets>={FLOOR["ipywidgets"]}"'
    assert lines[missing + 1].split("fix: ")[1] == fix
    # not checked: a distinct mark, no fix, and not counted as a failure
    widgets = next(i for i, line in enumerate(lines) if line.startswith("– widgets"))
    assert "not checked: needs ipywidgets" in lines[widgets] and "fix:" not in lines[widgets + 1]
    assert any(line.startswith("✓ numpy") for line in lines)          # the other checks still ran
    assert "1 check(s) failed" in out and "The 1 line(s) marked – are checked once those pass" in out
    assert "Traceback" not in out


def test_missing_torch_gives_the_tested_cpu_build(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: None if name == "torch" else real(name))
    monkeypatch.setattr(doctor.sys, "platform", "linux")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert (f"fix: {sys.executable} -m pip install torch=={doctor.TORCH_TESTED} --index-url "
            f"{doctor.TORCH_INDEX_URL}") in out
    assert doctor.TORCH_TESTED == "2.13.0" and "transformer-course[torch]\"" not in out
    assert "every chapter but 3 and appendix A needs it" in out
    for name in ("threads", "device", "shipped model", "training"):
        assert any(line.startswith(f"– {name}") and "needs torch" in line for line in out.splitlines()), name
    assert "1 check(s) failed" in out


def test_torch_fix_per_platform(monkeypatch):
    env = doctor.Environment("/x/bin/python", "/x", None, None)
    monkeypatch.setattr(doctor.sys, "platform", "win32")
    assert doctor.torch_fix(env) == f"/x/bin/python -m pip install torch==2.13.0 --index-url {doctor.TORCH_INDEX_URL}"
    monkeypatch.setattr(doctor.sys, "platform", "darwin")       # PyPI's macOS wheel is CPU (and MPS) only
    assert doctor.torch_fix(env) == "/x/bin/python -m pip install torch==2.13.0"
    assert doctor.torch_fix(env, reinstall=True) == "/x/bin/python -m pip install --force-reinstall torch==2.13.0"


def test_an_old_version_and_a_broken_check(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: "1.20.3" if name == "numpy" else real(name))

    def broken():
        raise RuntimeError("no device\nat all")

    monkeypatch.setattr(doctor, "check_device", broken)
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("✗ numpy") and "1.20.3, older than the supported 1.26" in line for line in lines)
    assert any(line.startswith("✗ device") and line.endswith("RuntimeError: no device at all") for line in lines)
    assert any(line.startswith("✓ widgets") for line in lines)


def test_a_broken_import_reinstalls_with_separate_flags(monkeypatch):
    """`--force-reinstall` is a flag of its own, not part of the quoted requirement."""
    monkeypatch.setattr(doctor.importlib, "import_module", lambda name: (_ for _ in ()).throw(ImportError("gone")))
    env = doctor.Environment("/x/bin/python", "/x", None, None)
    check = doctor.check_requirement(next(r for r in REQUIREMENTS if r.name == "tqdm"), env)
    assert not check.ok and check.fix == '/x/bin/python -m pip install --force-reinstall "tqdm>=4.60"'


def test_report_marks_and_exit_status(monkeypatch, capsys, neutral_cwd):
    checks = [doctor.Check("a", True, "fine"), doctor.Check("bb", False, "broken", "do this"),
              doctor.Check("c", False, "not checked: needs bb", skipped=True),
              doctor.Check("d", True, "slow", "close things", warning=True)]
    report = doctor.format_report(checks, encoding="cp1252")
    for expected in ("OK   a   fine", "FAIL bb  broken", "fix: do this", "SKIP c   not checked", "WARN d   slow",
                     "advice: close things", "1 check(s) failed", "The 1 line(s) marked SKIP"):
        assert expected in report, expected
    assert not {"✓", "✗", "–"} & set(report)
    # skipped and warning lines are not failures: exit status 0 unless a real check failed
    monkeypatch.setattr(doctor, "run_checks", lambda debug=False, env=None: [checks[0], checks[2], checks[3]])
    assert doctor.main() == 0
    assert "Everything the course needs works here; read the advice" in capsys.readouterr().out
    monkeypatch.setattr(doctor, "run_checks", lambda debug=False, env=None: checks)
    assert doctor.main() == 1


@pytest.mark.parametrize("seconds, verdict", [(1.1, "ok"), (5.0, "ok"), (19.6, "slow")])
def test_training_speed_verdict(seconds, verdict):
    check = doctor.training_verdict(40, seconds, 3.07, 2.35)
    assert check.ok and not check.failed and check.warning == (verdict == "slow")
    assert f"in {seconds:.1f} s" in check.detail and "test machine" in check.detail
    if verdict == "slow":     # the instructor's laptop: 19.6 s is 15x the test machine's 1.3 s
        assert "15x" in check.detail and "about 15x the times they show" in check.fix and "Colab" in check.fix
    assert not doctor.training_verdict(40, 1.0, 3.07, float("nan")).ok
    assert not doctor.training_verdict(40, 1.0, 3.07, 3.5).ok


def test_threads_advice_keeps_a_tick():
    assert doctor.threads_verdict(2, 2, 2).fix == ""
    many = doctor.threads_verdict(8, 8, 4)
    assert many.ok and "8 thread(s)" in many.detail and "4 physical core(s) (8 logical)" in many.detail
    assert "OMP_NUM_THREADS=4" in many.fix and "torch.set_num_threads(4)" in many.fix
    one = doctor.threads_verdict(1, 8, 8, omp="1")
    assert one.ok and "OMP_NUM_THREADS=1 is set: unset it" in one.fix and "torch.set_num_threads(8)" in one.fix
    assert doctor.threads_verdict(1, 1, 1).fix == ""
    assert doctor.threads_verdict(4, 8, 8, usable=2).fix.startswith("more threads than cores")


def test_jupyter_check(monkeypatch):
    env = doctor.Environment("/x/bin/python", "/x", None, None)
    present = {"ipykernel": "7.4.0", "jupyterlab": "4.6.6"}
    monkeypatch.setattr(doctor, "_importable", lambda module: module in present)
    monkeypatch.setattr(doctor, "_installed_version", lambda name: present.get(name))
    check = doctor.check_jupyter(env)
    assert check.ok and "JupyterLab 4.6.6, ipykernel 7.4.0" in check.detail
    present.pop("jupyterlab")
    check = doctor.check_jupyter(env)
    assert not check.ok and "`jupyter lab` cannot start" in check.detail
    assert check.fix == '/x/bin/python -m pip install "jupyterlab>=4"'
    present.pop("ipykernel")
    assert doctor.check_jupyter(env).fix == '/x/bin/python -m pip install "jupyterlab>=4" "ipykernel>=6"'
    present["google.colab"] = "x"
    assert doctor.check_jupyter(env).ok     # Colab brings its own front end


def test_requirements_txt_installs_a_notebook_front_end():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert "jupyterlab" in pins and "ipykernel" in pins


def _fake_checkout(folder: Path, venv: bool) -> Path:
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "run.py").write_text("")
    (folder / "transformer_course").mkdir()
    (folder / "transformer_course" / "__init__.py").write_text("")
    (folder / "book").mkdir()
    if venv:
        python = doctor._venv_python(folder / ".venv")
        python.parent.mkdir(parents=True)
        python.write_text("")
    return folder


def test_the_header_names_the_python_and_the_course_environment(tmp_path):
    checkout = _fake_checkout(tmp_path / "course", venv=True)
    assert doctor.find_checkout(checkout / "book") == checkout.resolve()
    assert doctor.find_checkout(tmp_path) is None
    venv_python = doctor._venv_python(checkout.resolve() / ".venv")
    system = doctor.Environment("/usr/bin/python3", "/usr", checkout.resolve(), None)
    assert system.wrong_env and system.fix_python == str(venv_python)
    header = doctor._header(system)
    assert header[0].startswith("Python: /usr/bin/python3 (")
    assert header[1] == (f"! not the course's environment ({checkout.resolve() / '.venv'}): run "
                         f"`{venv_python} -m transformer_course doctor` instead")
    inside = doctor.Environment(str(venv_python), str(checkout / ".venv"), checkout.resolve(), None)
    assert not inside.wrong_env and doctor._header(inside) == [
        f"Python: {venv_python} ({doctor.platform.python_version()}), the course's environment "
        f"{checkout.resolve() / '.venv'}"]
    fresh = _fake_checkout(tmp_path / "fresh", venv=False).resolve()
    line = doctor._header(doctor.Environment("/usr/bin/python3", "/usr", fresh, None))[1]
    assert "is not set up yet: run `python3 tools/run.py book` in" in line and "py -3 tools\\run.py book" in line


def test_fixes_install_the_package_from_its_repository_never_pypi(tmp_path):
    """transformer-course is not on PyPI: a checkout installs itself editable; elsewhere (Colab, a pip install)
    the fix names the repository's git tag of the installed version."""
    packaging = pytest.importorskip("packaging.requirements")
    assert book.repository_url(ROOT) == doctor.REPOSITORY_URL      # _config.yml's, read as the tools read it
    version = importlib.metadata.version("transformer-course")
    outside = doctor.Environment("/x/bin/python", "/x", None, None)
    for fix in (doctor.package_fix(outside), doctor.shipped_model_fix(outside)):
        spec = re.search(r'"(.*)"', fix).group(1)
        requirement = packaging.Requirement(spec)       # a valid PEP 508 direct reference
        assert requirement.name == "transformer-course"
        assert requirement.url == f"git+{doctor.REPOSITORY_URL}@v{version}"
    assert '"transformer-course[torch] @ git+' in doctor.package_fix(outside)
    assert "--force-reinstall --no-deps" in doctor.shipped_model_fix(outside)
    checkout = _fake_checkout(tmp_path / "my course", venv=True).resolve()
    inside = doctor.Environment(str(doctor._venv_python(checkout / ".venv")), str(checkout / ".venv"), checkout, None)
    assert doctor.package_fix(inside) == f'"{inside.python}" -m pip install -e "{checkout}[torch]"'


def test_in_a_student_kit_the_fixes_install_its_own_wheel(tmp_path):
    """An unzipped student kit has no checkout and the repository's tag may be out of reach (a workshop room):
    the fixes install the kit's wheel, found from the kit's folder or a notebook folder inside it."""
    kit = tmp_path / "my kit"
    (kit / "wheels").mkdir(parents=True)
    (kit / "student").mkdir()
    for version in ("0.1.0", "0.10.0", "0.9.1"):
        (kit / "wheels" / f"transformer_course-{version}-py3-none-any.whl").write_bytes(b"")
    newest = (kit / "wheels" / "transformer_course-0.10.0-py3-none-any.whl").resolve()
    for folder in (kit, kit / "student"):
        env = doctor.environment(folder)
        assert env.checkout is None and env.wheel == newest
    env = doctor.Environment("/x/bin/python", "/x", None, None, newest)
    assert doctor.package_fix(env) in (f'/x/bin/python -m pip install "{newest}[torch]"',
                                       f'/x/bin/python -m pip install "{newest}"')
    assert doctor.shipped_model_fix(env) == f'/x/bin/python -m pip install --force-reinstall --no-deps "{newest}"'
    assert doctor.environment(tmp_path).wheel is None                # no kit around: the repository's tag


# --- the fixes, run as printed in a throwaway environment ----------------------------------------------------------


def _pack_installed(name: str, dest: Path) -> Path:
    """A wheel of an installed distribution of this environment (its files and metadata as installed; scripts
    are left out, pip makes them again from entry_points.txt)."""
    dist = importlib.metadata.distribution(name)
    wheel_text = dist.read_text("WHEEL")
    if not dist.files or wheel_text is None:
        pytest.skip(f"{name} is not installed from a wheel here: nothing to pack")
    tags = [line.split(":", 1)[1].strip().split("-") for line in wheel_text.splitlines() if line.startswith("Tag:")]
    tag = "-".join(".".join(dict.fromkeys(t[i] for t in tags)) for i in range(3))
    path = dest / f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}-{tag}.whl"
    rows, record = [], None
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as wheel:
        for file in dist.files:
            own_metadata = len(file.parts) == 2 and file.parts[0].endswith(".dist-info")
            if file.parts[0] == ".." or "__pycache__" in file.parts:
                continue
            if own_metadata and file.name == "RECORD":
                record = str(file)
                continue
            if own_metadata and file.name in ("INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            wheel.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{file},sha256={digest},{len(data)}")
        wheel.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return path


def _offline(**extra: str) -> dict[str, str]:
    """pip without this machine's configuration (its indexes, constraints, find-links) and without compiling."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PIP_") and key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_COMPILE="1", **extra)
    return env


def _run_fix(command: str, env: dict[str, str], cwd: Path) -> None:
    """Run a printed fix as a user pastes it: one shell line."""
    result = subprocess.run(command, shell=True, env=env, cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def throwaway(tmp_path_factory):
    """A bare virtual environment (pip, nothing else), a folder of wheels of its future packages and the
    Environment whose fixes install into it. Removed afterwards: PyTorch makes it about 1 GB."""
    if os.name == "nt":
        pytest.skip("the fixes are run through a POSIX shell")
    if Path(doctor.__file__).resolve().parent.parent != ROOT:
        # A leg of the matrix (the package installed from a wheel): what these tests run is pip and the printed
        # command, which no leg's versions change; the README's test command runs them (PyTorch's alone, ~1 GB).
        pytest.skip("the printed fixes are run in the checkout's environment, not in a leg of the matrix")
    base = tmp_path_factory.mktemp("doctor-fixes")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_offline())
    wheels = base / "wheels"
    wheels.mkdir()
    for name in ("tqdm", "numpy", "setuptools", "filelock", "typing_extensions", "sympy", "mpmath", "networkx",
                 "jinja2", "markupsafe", "fsspec"):
        _pack_installed(name, wheels)
    python = doctor._venv_python(venv)
    yield doctor.Environment(str(python), str(venv), None, None), wheels, base
    shutil.rmtree(base, ignore_errors=True)


def _imports(python: str, code: str, cwd: Path) -> str:
    result = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=cwd, env=_offline())
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_base_dependency_fix_runs(throwaway, monkeypatch):
    env, wheels, base = throwaway
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: None if name == "tqdm" else real(name))
    fix = doctor.check_requirement(next(r for r in REQUIREMENTS if r.name == "tqdm"), env).fix
    assert fix == f'{env.python} -m pip install "tqdm>={FLOOR["tqdm"]}"'
    _run_fix(fix, _offline(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels)), base)
    assert _imports(env.python, "import tqdm; print(tqdm.__version__)", base) == importlib.metadata.version("tqdm")


def _torch_wheel() -> Path | None:
    """The tested version's CPU wheel for this Python and platform, where this machine has one."""
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        return None
    supported = set(sys_tags())
    for folder in filter(Path.is_dir, TORCH_WHEEL_DIRS):
        for path in sorted(folder.glob(f"torch-{doctor.TORCH_TESTED}+cpu-*.whl")):
            if set(parse_wheel_filename(path.name)[3]) & supported:
                return path
    return None


def test_torch_fix_runs_against_a_cpu_index(throwaway):
    """The exact printed command, with TC_TORCH_INDEX_URL pointing at a local PEP 503 index holding the CPU
    wheel (PyTorch's own CPU index cannot be reached from here); torch's dependencies come from local wheels.
    The slow test of this file: one install of a 190 MB wheel."""
    wheel = _torch_wheel()
    if wheel is None:
        pytest.skip(f"no torch-{doctor.TORCH_TESTED}+cpu wheel for this Python in {TORCH_WHEEL_DIRS}")
    env, wheels, base = throwaway
    index = base / "simple"
    (index / "torch").mkdir(parents=True)
    (index / "torch" / "index.html").write_text(f'<html><body><a href="{wheel.as_uri()}">{wheel.name}</a>'
                                                "</body></html>\n")
    script = ("import os, sys; from transformer_course import doctor; "
              "print(doctor.torch_fix(doctor.Environment(sys.argv[1], '', None, None)))")
    printed = subprocess.run([sys.executable, "-c", script, env.python], capture_output=True, text=True, check=True,
                             env={**os.environ, "TC_TORCH_INDEX_URL": index.as_uri()}).stdout.strip()
    assert printed == f"{env.python} -m pip install torch=={doctor.TORCH_TESTED} --index-url {index.as_uri()}"
    _run_fix(printed, _offline(PIP_FIND_LINKS=str(wheels)), base)
    assert _imports(env.python, "import torch; print(torch.__version__)", base) == f"{doctor.TORCH_TESTED}+cpu"


def test_package_fix_runs_from_a_checkout(throwaway):
    """`pip install -e "<checkout>[torch]"` (with --no-deps: the dependencies are the other lines' business),
    on a copy of the package's sources, so the real checkout gets no build files."""
    env, wheels, base = throwaway
    source = base / "checkout copy"
    shutil.copytree(ROOT / "transformer_course", source / "transformer_course",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    env = doctor.Environment(env.python, env.prefix, None, source)
    fix = doctor.package_fix(env)
    assert fix.startswith(f'{env.python} -m pip install -e "{source}')
    offline = _offline(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))   # setuptools for the isolated build
    _run_fix(f"{env.python} -m pip install -q numpy", offline, base)  # what the package imports first
    _run_fix(fix + " --no-deps", offline, base)
    where = _imports(env.python, "import transformer_course; print(transformer_course.__file__)", base)
    assert Path(where) == source / "transformer_course" / "__init__.py"


def test_shipped_model_fix_restores_a_checkouts_files(tmp_path):
    """In a checkout the installed package is the checkout's own files: the fix restores them with git."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    checkout = tmp_path / "course"
    shutil.copytree(ROOT / "transformer_course" / "checkpoints", checkout / "transformer_course" / "checkpoints")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "-C", str(checkout), "add", "."], check=True)
    subprocess.run([*git, "-C", str(checkout), "commit", "-q", "-m", "x"], check=True)
    shipped = sorted((checkout / "transformer_course" / "checkpoints").rglob("*.safetensors"))[0]
    good = shipped.read_bytes()
    shipped.write_bytes(good[: len(good) // 2])         # a damaged file
    fix = doctor.shipped_model_fix(doctor.Environment("/x/bin/python", "/x", checkout, None))
    assert fix == f"git -C {checkout} checkout -- transformer_course/checkpoints"
    _run_fix(fix, _offline(), tmp_path)
    assert shipped.read_bytes() == good


def test_another_python_in_the_checkout_is_sent_to_the_course_environment(tmp_path):
    """The instructor's case: `python -m transformer_course doctor` in the checkout with a Python that is not
    .venv's (here a bare venv that sees only numpy, as a system Python might). The report says so, names the
    command to use, and its fixes install into .venv, not into that Python."""
    venv = tmp_path / "system"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    numpy_only = tmp_path / "numpy-only"
    numpy_only.mkdir()
    numpy_dir = Path(importlib.util.find_spec("numpy").origin).parent
    for path in (numpy_dir, numpy_dir.with_name("numpy.libs")):
        if path.exists():
            (numpy_only / path.name).symlink_to(path)
    env = {**_offline(), "PYTHONPATH": str(numpy_only)}
    python = str(doctor._venv_python(venv))

    def doctor_in(folder: Path) -> list[str]:
        result = subprocess.run([python, "-m", "transformer_course", "doctor"], cwd=folder, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
        return result.stdout.splitlines()

    lines = doctor_in(ROOT)
    assert lines[1].startswith(f"Python: {python} (")
    course = doctor._venv_python(ROOT / ".venv")
    if course.exists():
        assert lines[2] == f"! not the course's environment ({ROOT / '.venv'}): run " \
                           f"`{course} -m transformer_course doctor` instead"
    fixes = [line.split("fix: ", 1)[1] for line in lines if "fix: " in line]
    assert fixes and all(fix.startswith(f"{course} -m pip install ") for fix in fixes), fixes
    assert f"{course} -m pip install -e \"{ROOT}\"" in fixes                    # the package: from the checkout
    assert any(line.startswith("– training") for line in lines)
    assert lines[-1].startswith(f"These lines are about {python}, not the course's environment")

    fresh = _fake_checkout(tmp_path / "fresh", venv=False).resolve()       # a copy with no .venv yet
    shutil.rmtree(fresh / "transformer_course")
    (fresh / "transformer_course").symlink_to(ROOT / "transformer_course")
    lines = doctor_in(fresh)
    assert lines[2].startswith(f"! the course's environment {fresh / '.venv'} is not set up yet: run "
                               f"`python3 tools/run.py book` in {fresh} first")
