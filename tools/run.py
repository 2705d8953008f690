#!/usr/bin/env python3
"""The course's one entry point for set-up, building and testing (the README's two commands use it).

    python3 tools/run.py book        # set up .venv (idempotent) and build the website into _build/html
    python3 tools/run.py book --hide-solutions   # the same site without exercise solutions (workshops)
    python3 tools/run.py test        # set up, then: lint, -W book build, unit tests + strict nbval over every chapter
    python3 tools/run.py notebooks   # re-execute chapter notebooks and store their outputs
    python3 tools/run.py workshop    # the workshop kit in _build/workshop/: editions, website, slides, zips
    python3 tools/run.py colab       # write the chapters' Colab copies, colab/NAME.ipynb (tools/colab.py)
    python3 tools/run.py wheelhouse  # download every dependency into wheelhouse/ for offline installs
    python3 tools/run.py matrix      # the compatibility matrix: one fresh environment per leg (.ci/run runs it)
    python3 tools/run.py colab-snapshot  # download Colab's preinstalled versions and build that environment
                                     # (tests/test_colab_start.py uses it; `test` runs this first)
    python3 tools/run.py release     # tag the release the Colab copies install (prints the push command)

Only the standard library is used here, so it runs on a fresh machine that has nothing but Python.
Each stage prints its wall time, and a table of them comes at the end (appended to the file TC_STAGE_LOG too,
when set: .ci/run collects every stage there); the exit status is non-zero if any stage fails.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __name__ == "__main__" and not __package__:
    # run as a script (`python3 tools/run.py`): load tools/ as the package `tools` from its own path (PEP 366), so
    # that this file's relative imports work; nothing is added to sys.path
    _spec = importlib.util.spec_from_file_location("tools", Path(__file__).resolve().with_name("__init__.py"),
                                                   submodule_search_locations=[str(Path(__file__).resolve().parent)])
    sys.modules["tools"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["tools"])
    __package__ = "tools"

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".tc-setup-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
# pytest's results of the README's test command, as JUnit XML (the matrix reads them for its "pinned" leg)
PINNED_RESULTS = ROOT / "_build" / "test-results" / "pytest.xml"
LEGS_DIR = ROOT / ".ci-legs"   # the matrix's virtual environments (git-ignored, rebuilt on every run)
# Google Colab's preinstalled packages (a cited snapshot of its `pip freeze`), as wheels and as a virtual
# environment holding exactly them: the simulated Colab runtime of tests/test_colab_start.py. Kept across matrix
# runs (the matrix rebuilds its legs only), rebuilt when the snapshot changes.
COLAB_SNAPSHOT = ROOT / "tests" / "data" / "colab_pip_freeze.txt"
COLAB_CACHE = LEGS_DIR / "colab-snapshot"
COLAB_WHEELS = COLAB_CACHE / "wheels"
COLAB_VENV = COLAB_CACHE / "venv"
# Colab runs Python 3.13 and a CPU build of PyTorch 2.11 (the snapshot's header); the simulation runs Python 3.11
# and torch 2.13.0, the CPU build that .ci/run installs: the only PyTorch build at hand offline.
COLAB_SIMULATED_PYTHON = "3.11"
COLAB_SIMULATED_TORCH = "2.13.0"
REVEAL_VERSION = "5.2.1"       # reveal.js, from the npm registry, for the workshop's slides
REVEAL_TARBALL = VENV / "share" / f"reveal.js-{REVEAL_VERSION}.tgz"

_timings: list[tuple[str, float, float | None, str]] = []
_START = time.perf_counter()


def _children_cpu_seconds() -> float | None:
    """Processor time used so far by finished child processes (and theirs): user + system. None on Windows."""
    try:
        import resource
    except ImportError:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def record(name: str, seconds: float, cpu_seconds: float | None, status: str) -> None:
    """Remember a stage's times for the table at the end (and for .ci/run's table, through TC_STAGE_LOG).
    The processor time does not depend on how busy the machine is; the wall time does."""
    _timings.append((name, seconds, cpu_seconds, status))
    if os.environ.get("TC_STAGE_LOG"):
        with open(os.environ["TC_STAGE_LOG"], "a") as log:
            cpu = "-" if cpu_seconds is None else f"{cpu_seconds:.1f}"
            log.write(f"{name}\t{seconds:.1f}\t{cpu}\t{status}\n")


def run_stage(name: str, cmd: list, **kwargs) -> int:
    """Run one command as a named stage, print and record its times; return its exit status."""
    shown = " ".join(str(c) if "\n" not in str(c) else "'...'" for c in cmd)   # a script given with -c: not its text
    print(f"\n=== {name}: {shown}", flush=True)
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    kwargs.setdefault("cwd", ROOT)
    returncode = subprocess.run([str(c) for c in cmd], **kwargs).returncode
    elapsed = time.perf_counter() - start
    cpu = None if cpu_start is None else _children_cpu_seconds() - cpu_start
    record(name, elapsed, cpu, "ok" if returncode == 0 else f"exit {returncode}")
    print(f"=== {name}: exit {returncode} after {elapsed:.1f} s", flush=True)
    return returncode


def stage(name: str, cmd: list, **kwargs) -> None:
    """Run one command as a named stage; stop the whole run with its exit status if it fails."""
    returncode = run_stage(name, cmd, **kwargs)
    if returncode != 0:
        report()
        if name.startswith("pytest") and returncode == 5:
            print("pytest collected no tests: that is a failure here (the suite must never be empty).")
        sys.exit(returncode or 1)


def report() -> None:
    if not _timings:
        return
    print(f"\nStage times:\n  {'stage':<36s} {'wall':>8s}   {'CPU':>8s}")
    for name, seconds, cpu_seconds, status in _timings:
        cpu = "-" if cpu_seconds is None else f"{cpu_seconds:.1f}"
        print(f"  {name:<36s} {seconds:8.1f} s {cpu:>8s} s  {status}")
    cpu_total = sum(cpu for _, _, cpu, _ in _timings if cpu is not None)
    print(f"  {'total':<36s} {time.perf_counter() - _START:8.1f} s {cpu_total:8.1f} s")


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def fetch_reveal() -> None:
    """reveal.js for the workshop's slides (tools/slides.py), as the npm registry's tarball in .venv/share: from
    TC_WHEELHOUSE when it holds one, else with `npm pack`. Without npm the slides cannot be built; nothing else
    needs it, so that is a warning."""
    target = REVEAL_TARBALL
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    offline = Path(os.environ.get("TC_WHEELHOUSE", "")) / target.name
    if os.environ.get("TC_WHEELHOUSE") and offline.exists():
        shutil.copy2(offline, target)
    elif shutil.which("npm"):
        stage("fetch reveal.js (npm)", ["npm", "pack", "--silent", f"reveal.js@{REVEAL_VERSION}",
                                        "--pack-destination", str(target.parent)])
    else:
        print(f"=== set-up: npm not found: the workshop's slides need reveal.js {REVEAL_VERSION} (install Node.js, "
              f"or copy {target.name} into {target.parent})")


# Pythons with a wheel of every pin in requirements.txt (numpy 2.4.6 needs 3.11 or later); the package itself
# also supports 3.10 (pyproject.toml), which the matrix tests with the newest releases for it
VENV_PYTHONS = ("3.13", "3.12", "3.11")


def venv_python() -> str:
    """The interpreter .venv is made with: this one if the pins install on it, else the newest supported one
    found (pyenv or PATH); none found is one clear error, before anything is installed."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" in VENV_PYTHONS:
        return sys.executable
    for minor in VENV_PYTHONS:
        found = find_python(minor)
        if found:
            print(f"=== set-up: this is Python {sys.version_info[0]}.{sys.version_info[1]}; the pinned environment "
                  f"needs {VENV_PYTHONS[-1]} to {VENV_PYTHONS[0]}: .venv uses {found}")
            return found
    raise SystemExit(f"{Path(__file__).name}: the pinned environment (requirements.txt) needs Python "
                     f"{VENV_PYTHONS[-1]} to {VENV_PYTHONS[0]}, and none was found (this is "
                     f"{sys.version_info[0]}.{sys.version_info[1]}). Install one (python.org, your package manager or "
                     f"pyenv) and run the command again; on Python 3.10 the package alone installs with "
                     f"`pip install \".[torch]\"`.")


def setup() -> None:
    """Create .venv and install the pinned requirements and the package (skipped when nothing changed), and
    fetch reveal.js for the slides."""
    if not PYTHON.exists():
        stage("create venv", [venv_python(), "-m", "venv", str(VENV)])
    fetch_reveal()
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        print("=== set-up: .venv is up to date (requirements.txt and pyproject.toml unchanged)")
        return
    # byte-compiled at install (pip's default): where PYTHONDONTWRITEBYTECODE is set, as on this course's CI
    # machine, a package installed with --no-compile is compiled again by every process that imports it
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check"]
    if os.environ.get("TC_WHEELHOUSE"):  # offline: install from a wheelhouse built by `run.py wheelhouse`
        pip += ["--no-index", "--find-links", os.environ["TC_WHEELHOUSE"]]
    stage("install requirements", pip + ["-q", "-r", "requirements.txt"])
    stage("install package", pip + ["-q", "--no-deps", "-e", "."])
    STAMP.write_text(_fingerprint())


KEPT_BY_BOOK_BUILDS = ("workshop",)   # _build/workshop/: the workshop kit has its own command and is never wiped


def clean_build_folder(build: Path = ROOT / "_build") -> None:
    """Empty _build/ for a clean book build (stale pages can hide warnings), keeping the workshop kit."""
    for path in build.glob("*") if build.is_dir() else []:
        if path.name in KEPT_BY_BOOK_BUILDS:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def build_book(strict: bool, hide_solutions: bool = False) -> None:
    clean_build_folder()
    cmd = [str(BIN / "jupyter-book"), "build", "."]
    if hide_solutions:  # for a workshop session: the same site with every solution left out
        config = ROOT / "_build" / "_config_hide_solutions.yml"
        config.parent.mkdir(parents=True, exist_ok=True)
        stage("config without solutions", [PYTHON, "-m", "tools.book", "--without-solutions", config])
        cmd += ["--config", str(config)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    stage("build book" + (" (-W)" if strict else ""), cmd)


def load_versions():
    """transformer_course/versions.py (the supported versions and the matrix's legs), read from its file."""
    spec = importlib.util.spec_from_file_location("tc_versions", ROOT / "transformer_course" / "versions.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while a class is made
    spec.loader.exec_module(module)
    return module


def build_wheel(python: Path | str, dest: Path) -> Path:
    """Build the package's wheel into `dest` without the network and return its path.

    No build isolation (setuptools comes from `python`'s environment), and the build runs on a copy of the
    sources, so no build/ folder lands in the checkout and nothing stale from an earlier build gets in."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "transformer_course", src / "transformer_course",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(ROOT / name, src / name)
        result = subprocess.run([str(python), "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
                                 "--no-build-isolation", "--no-deps", "-w", str(dest), str(src)],
                                capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building the wheel failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    wheels = sorted(dest.glob("transformer_course-*.whl"), key=lambda path: path.stat().st_mtime)
    return wheels[-1]


class ColabSnapshotMissing(RuntimeError):
    """The simulated Colab runtime cannot be built: a wheel or the interpreter is missing (the message says)."""


def normalize_name(name: str) -> str:
    """A distribution's name as pip compares names: "Jinja2" -> "jinja2", "jupyter_client" -> "jupyter-client"."""
    return re.sub(r"[-_.]+", "-", name).lower()


def colab_snapshot(path: Path = COLAB_SNAPSHOT) -> tuple[str, dict[str, str]]:
    """Colab's Python version and preinstalled packages from the snapshot: ("3.13.15", {"numpy": "2.1.3", ...})."""
    python, pins = "", {}
    for line in path.read_text().splitlines():
        header = re.match(r"#\s*python:\s*(\S+)", line)
        if header:
            python = header.group(1)
        elif line.strip() and not line.startswith("#"):
            name, version = line.strip().split("==")
            pins[normalize_name(name)] = version
    if not python or not pins:
        raise ValueError(f"{path}: expected a `# python: X.Y.Z` line and `name==version` lines")
    return python, pins


def colab_simulated_pins() -> list[str]:
    """The snapshot's pins for the simulated runtime: Colab's versions, but PyTorch the build at hand."""
    _, pins = colab_snapshot()
    pins["torch"] = COLAB_SIMULATED_TORCH
    return [f"{name}=={version}" for name, version in pins.items()]


def _base_requirements() -> list[str]:
    """What `pip install .` asks for: the base install's requirements, `name>=floor`."""
    return [f"{r.name}>={r.floor}" for r in load_versions().REQUIREMENTS if r.extra is None]


def _colab_key() -> str:
    """What the cached wheels and environment were made for: the pins, the package's requirements, the Python."""
    digest = hashlib.sha256("\n".join(colab_simulated_pins() + _base_requirements()).encode())
    digest.update(COLAB_SIMULATED_PYTHON.encode())
    return digest.hexdigest()


def fetch_colab_wheels() -> bool:
    """Download the wheels of the simulated Colab runtime into .ci-legs/colab-snapshot/wheels/ (skipped when they
    are there for this snapshot): every pinned package of the snapshot, and what installing the package adds to
    them (sacrebleu, num2words and their dependencies, which Colab lacks). Tests then never download. From
    TC_WHEELHOUSE when set (offline). Returns False, with a message, when that fails."""
    stamp = COLAB_WHEELS / ".stamp"
    if stamp.exists() and stamp.read_text() == _colab_key():
        print(f"=== colab snapshot: the wheels in {COLAB_WHEELS.relative_to(ROOT)} are up to date")
        return True
    python = find_python(COLAB_SIMULATED_PYTHON)
    if python is None:
        print(f"=== colab snapshot: no Python {COLAB_SIMULATED_PYTHON} here: tests/test_colab_start.py cannot "
              "simulate Colab's preinstalled versions")
        return False
    COLAB_WHEELS.mkdir(parents=True, exist_ok=True)
    pins = COLAB_CACHE / "pins.txt"
    pins.write_text("\n".join(colab_simulated_pins()) + "\n")
    source = ["--no-index", "--find-links", os.environ["TC_WHEELHOUSE"]] if os.environ.get("TC_WHEELHOUSE") else []
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    ok = run_stage("colab snapshot: download its wheels", pip + ["download", "-q", "--no-deps", "--only-binary=:all:",
                                                                 "-d", COLAB_WHEELS, "-r", pins, *source]) == 0
    # what `pip install .` adds to the snapshot (resolved against it); sdists (docopt) are built into wheels
    ok = ok and run_stage("colab snapshot: wheels of what the package adds",
                          pip + ["wheel", "-q", "-w", COLAB_WHEELS, "--find-links", COLAB_WHEELS, "-c", pins,
                                 *_base_requirements(), *source]) == 0
    if ok:
        stamp.write_text(_colab_key())
    return ok


def colab_snapshot_env() -> Path:
    """The simulated Colab runtime's interpreter: a virtual environment of Python 3.11 under .ci-legs/colab-snapshot/
    holding exactly the snapshot's packages, installed without their dependencies (the snapshot is the whole set,
    as Colab has it: without jedi, for one) from the downloaded wheels, offline. Built once, reused while the
    snapshot is unchanged; never install into it (layer a fresh environment on it). Raises ColabSnapshotMissing
    when the wheels are absent (`python3 tools/run.py colab-snapshot` downloads them)."""
    python = COLAB_VENV / "bin" / "python"
    stamp = COLAB_VENV / ".tc-colab-stamp"
    if stamp.exists() and stamp.read_text() == _colab_key() and python.exists():
        return python
    wheels_stamp = COLAB_WHEELS / ".stamp"
    if not (wheels_stamp.exists() and wheels_stamp.read_text() == _colab_key()):
        raise ColabSnapshotMissing(f"the wheels of Colab's preinstalled versions ({COLAB_SNAPSHOT.name}) are not in "
                                   f"{COLAB_WHEELS.relative_to(ROOT)}: run `python3 tools/run.py colab-snapshot`")
    interpreter = find_python(COLAB_SIMULATED_PYTHON)
    if interpreter is None:
        raise ColabSnapshotMissing(f"no Python {COLAB_SIMULATED_PYTHON} on this machine for the simulated Colab "
                                   "runtime")
    shutil.rmtree(COLAB_VENV, ignore_errors=True)
    subprocess.run([interpreter, "-m", "venv", str(COLAB_VENV)], check=True)
    # --no-deps: exactly the snapshot (torch 2.13.0 asks for setuptools >= 77, Colab has 75.2.0: kept as Colab has it)
    result = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                             "--no-index", "--no-compile", "--find-links", str(COLAB_WHEELS),
                             "-r", str(COLAB_CACHE / "pins.txt")], capture_output=True, text=True)
    if result.returncode != 0:
        raise ColabSnapshotMissing(f"installing Colab's preinstalled versions failed:\n{result.stderr[-3000:]}")
    stamp.write_text(_colab_key())
    return python


def prepare_colab_snapshot() -> bool:
    """Download the simulated Colab runtime's wheels and build it (each skipped when done); False if that failed."""
    if not fetch_colab_wheels():
        return False
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    try:
        colab_snapshot_env()
    except (ColabSnapshotMissing, subprocess.CalledProcessError) as err:
        print(f"=== colab snapshot: {err}")
        return False
    cpu = None if cpu_start is None else _children_cpu_seconds() - cpu_start
    record("colab snapshot: environment", time.perf_counter() - start, cpu, "ok")
    return True


def release(root: Path = ROOT, python: Path | str = PYTHON) -> int:
    """Tag the release that the Colab copies install: check that the working tree is clean and that every copy
    in colab/ is up to date and installs `@v{version}` (pyproject.toml's version), then create the annotated tag
    `v{version}` and print the push command. Returns the exit status."""
    from .course_colab import COLAB_DIR, project_version

    version = project_version(root)
    tag = f"v{version}"
    problems = []
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
    if dirty.stdout.strip():
        problems.append("the working tree has uncommitted changes (commit them first):\n" + dirty.stdout.rstrip())
    copies = sorted((root / COLAB_DIR).rglob("*.ipynb"))    # colab/ and colab/student/
    for copy in copies:
        cells = [c for c in json.loads(copy.read_text())["cells"] if c["cell_type"] == "code"]
        source = "".join(cells[0]["source"]) if cells else ""
        if f"@{tag}\"" not in source:
            problems.append(f"{copy.relative_to(root)}: the install cell does not install {tag} "
                            "(run `python3 tools/run.py colab` and commit colab/)")
    if not copies:
        problems.append(f"no Colab copies in {COLAB_DIR}/")
    elif Path(python).exists():   # the copies as tools/colab.py writes them now (it needs .venv's packages)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([str(python), "-m", "tools.colab", "--out", tmp], cwd=root, check=True,
                           capture_output=True)
            fresh = {c: Path(tmp) / c.relative_to(root / COLAB_DIR) for c in copies}
            stale = [str(c.relative_to(root)) for c, new in fresh.items()
                     if not new.exists() or new.read_bytes() != c.read_bytes()]
        if stale:
            problems.append(f"stale Colab copies {stale} (run `python3 tools/run.py colab` and commit colab/)")
    if subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/tags/{tag}"], cwd=root,
                      capture_output=True).returncode == 0:
        problems.append(f"the tag {tag} exists already: raise the version in pyproject.toml for a new release")
    if problems:
        print(f"release {tag}: not tagged:\n- " + "\n- ".join(problems))
        return 1
    subprocess.run(["git", "tag", "-a", tag, "-m", f"transformer-course {version}"], cwd=root, check=True)
    print(f"release {tag}: tagged {tag} (annotated) at HEAD. Publish it, so that Colab's install cells find it:\n"
          f"    git push origin {tag}")
    return 0


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in name.split("."))


def find_python(minor: str) -> str | None:
    """An interpreter of Python `minor` (e.g. "3.12"): pyenv's newest patch release, else python3.12 on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(glob.glob(str(pyenv / "versions" / f"{minor}.*" / "bin" / "python3")),
                        key=lambda path: _version_key(Path(path).parent.parent.name), reverse=True)
    candidates.append(shutil.which(f"python{minor}"))
    for candidate in filter(None, candidates):
        try:  # a pyenv shim on PATH exists even where that version is not installed: ask the interpreter
            found = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found == minor:
            return candidate
    return None


_VERSIONS_SCRIPT = """
import importlib.metadata as metadata, json, platform, sys
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        found[name] = "-"
found["python"] = platform.python_version()
print(json.dumps(found))
"""


def installed_versions(python: Path | str, names: list[str]) -> dict[str, str]:
    result = subprocess.run([str(python), "-c", _VERSIONS_SCRIPT, *names], capture_output=True, text=True)
    return json.loads(result.stdout) if result.returncode == 0 else {}


def junit_counts(path: Path) -> dict[str, int] | None:
    """passed / failed / skipped from pytest's JUnit XML (errors count as failed); None if there is none."""
    if not path.exists():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {key: sum(int(suite.get(key, 0)) for suite in suites) for key in ("tests", "failures", "errors",
                                                                                "skipped")}
    failed = total["failures"] + total["errors"]
    return {"passed": total["tests"] - failed - total["skipped"], "failed": failed, "skipped": total["skipped"]}


def install_leg(leg, wheel: Path, env: dict[str, str], names: list[str]) -> dict:
    """The leg's fresh virtual environment: the package's wheel, the leg's pins, pytest (and PyYAML, with which the
    repository's tests read _config.yml). Returns the legs-table row so far; its "python_bin" is the
    environment's interpreter, absent when the leg cannot run."""
    row = {"leg": leg.name, "python": leg.python, "result": "FAILED (set-up)"}
    if leg.torch and "torch" not in leg.pins:  # an unpinned torch could pull a multi-gigabyte CUDA build
        raise ValueError(f"leg {leg.name}: a leg with PyTorch must pin torch")
    python = find_python(leg.python)
    if python is None:
        print(f"\n=== {leg.name}: skipped: no Python {leg.python} on this machine "
              f"(looked for pyenv's versions/{leg.python}.* and python{leg.python} on PATH)", flush=True)
        row["result"] = f"skipped: no Python {leg.python}"
        return row
    venv = LEGS_DIR / leg.name
    leg_python = venv / "bin" / "python"
    requirement = f"{wheel}[torch]" if leg.torch else str(wheel)
    pins = [f"{name}=={version}" for name, version in leg.pins.items()]
    if run_stage(f"{leg.name}: create venv", [python, "-m", "venv", "--clear", venv]) != 0:
        return row
    # --no-compile: byte-compiling every installed file (torch has thousands) costs more than the tests need
    if run_stage(f"{leg.name}: pip install", [leg_python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                             "--no-compile", requirement, *pins,
                                             "pytest", "pytest-xdist", "hypothesis", "PyYAML"],
                 env=env) != 0:
        return row
    row.update(installed_versions(leg_python, names))
    row["python_bin"] = leg_python
    return row


def test_leg(row: dict, jobs: int, env: dict[str, str]) -> dict:
    """pytest over tests/ in an installed leg's environment; adds the counts and the result to its row."""
    venv = Path(row.pop("python_bin")).parent.parent
    results = venv / "pytest.xml"
    # Run from the leg's folder: the checkout's own transformer_course/ must not shadow the installed wheel.
    returncode = run_stage(f"{row['leg']}: pytest tests/", [venv / "bin" / "python", "-m", "pytest", ROOT / "tests",
                                                            "-q", "-n", str(jobs), "--dist", "loadfile",
                                                            f"--junitxml={results}"], cwd=venv, env=env)
    row.update(junit_counts(results) or {})
    row["result"] = "passed" if returncode == 0 else f"FAILED (pytest exit {returncode})"
    return row


def legs_table(rows: list[dict]) -> str:
    columns = [("leg", 12), ("python", 8), ("numpy", 8), ("torch", 11), ("passed", 7), ("failed", 7),
               ("skipped", 8), ("result", 0)]
    lines = ["  ".join(f"{name:<{width}}" for name, width in columns).rstrip()]
    for row in rows:
        lines.append("  ".join(f"{row.get(name, '')!s:<{width}}" for name, width in columns).rstrip())
    return "\n".join(lines)


def matrix(only: list[str] | None, env: dict[str, str], jobs: int = 2) -> bool:
    """Every leg of transformer_course/versions.py; return True if one failed. The "pinned" leg is the README's
    test command: its row reports that command's last results (run `python3 tools/run.py test` first)."""
    versions = load_versions()
    legs = [leg for leg in versions.LEGS if only is None or leg.name in only]
    unknown = set(only or ()) - {leg.name for leg in versions.LEGS}
    if unknown:
        raise SystemExit(f"--legs: unknown {sorted(unknown)}; known: {[leg.name for leg in versions.LEGS]}")
    names = [requirement.name for requirement in versions.REQUIREMENTS]
    env = {key: value for key, value in env.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    rows = []
    for path in LEGS_DIR.glob("*"):   # every leg is rebuilt; the simulated Colab runtime is kept (its own stamp)
        if path == COLAB_CACHE:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    wheel = build_wheel(PYTHON, LEGS_DIR / "wheel")
    cpu = None if cpu_start is None else _children_cpu_seconds() - cpu_start
    record("matrix: build package wheel", time.perf_counter() - start, cpu, "ok")
    # One leg installs while the one before it runs its tests: pip waits on the disk and the index, pytest
    # keeps both cores busy, so the matrix takes about its tests' time instead of installs plus tests. (The CPU
    # column of an install then also holds what the tests that ended meanwhile used.)
    with ThreadPoolExecutor(max_workers=1) as installer:
        installs = {leg.name: installer.submit(install_leg, leg, wheel, env, names)
                    for leg in legs if leg.name != "pinned"}
        for leg in legs:
            if leg.name == "pinned":
                counts = junit_counts(PINNED_RESULTS)
                row = {"leg": leg.name, **installed_versions(PYTHON, names), **(counts or {})}
                row["result"] = ("not run: python3 tools/run.py test writes its results" if counts is None
                                 else "passed" if counts["failed"] == 0 else "FAILED")
            else:
                row = installs[leg.name].result()
                if "python_bin" in row:
                    row = test_leg(row, jobs, env)
            rows.append(row)
    table = legs_table(rows)
    (LEGS_DIR / "legs.txt").write_text(table + "\n")
    (LEGS_DIR / "legs.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\nCompatibility matrix (transformer_course/versions.py):\n" + table)
    return any(row["result"].startswith("FAILED") for row in rows)


# `test --isa NAME`: the stored outputs must be what a learner's processor computes, not only this machine's best
# kernels. Each library is told to use an older x86 instruction set than the machine has (and `default`, one
# thread instead of two), then the chapters' strict nbval, the numerical unit tests and the student editions
# run again; ISA_PROBE first checks that every setting took effect. (ARM cannot be emulated here: the chapters'
# margins cover it.)
ISA_SETTINGS = {
    "default": {                               # x86-64 up to SSE4.2: no AVX at all; one thread
        "ATEN_CPU_CAPABILITY": "default",      # PyTorch's own kernels
        "ONEDNN_MAX_CPU_ISA": "SSE41",         # oneDNN (PyTorch's convolutions and some matmuls)
        "MKL_CBWR": "COMPATIBLE",              # MKL (PyTorch's matmuls): its processor-independent code path
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",   # (honoured by MKL on Intel processors only)
        "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",   # NumPy 2.4's dispatch groups
        "OPENBLAS_CORETYPE": "Nehalem",        # NumPy's OpenBLAS: its SSE4.2 kernels
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    },
    "avx2": {                                  # AVX2 without AVX-512, as most laptops of the last ten years
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "OPENBLAS_CORETYPE": "Haswell",
    },
}
# Run under the settings; prints what each library uses and exits 1 where a setting did not take effect.
ISA_PROBE = r"""
import json, os, re, subprocess, sys
import numpy as np, threadpoolctl, torch
want = json.loads(sys.argv[1])
found = {"torch": torch.backends.cpu.get_cpu_capability()}
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
found["numpy"] = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
found["openblas"] = [p.get("architecture") for p in threadpoolctl.threadpool_info() if p["internal_api"] == "openblas"]
log = subprocess.run([sys.executable, "-c", "import torch; x = torch.ones(64, 64); x @ x;"
                      "torch.nn.functional.conv2d(torch.ones(2, 8, 16, 16), torch.ones(8, 8, 3, 3))"],
                     env={**os.environ, "MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"}, capture_output=True, text=True)
found["mkl"] = sorted(set(re.findall(r"CNR:(\w+)", log.stdout + log.stderr)))
found["onednn"] = sorted(set(re.findall(r"isa:([^\n,]+)", log.stdout + log.stderr)))
found["threads"] = torch.get_num_threads()
print("kernels in use:", json.dumps(found))
bad = []
if found["torch"] != want["ATEN_CPU_CAPABILITY"].upper():
    bad.append(f"PyTorch uses {found['torch']}")
if set(found["numpy"]) & set(want["NPY_DISABLE_CPU_FEATURES"].split()):
    bad.append(f"NumPy dispatches to {found['numpy']}")
if found["openblas"] and found["openblas"] != [want["OPENBLAS_CORETYPE"]]:
    bad.append(f"OpenBLAS runs {found['openblas']}")
if "MKL_CBWR" in want and found["mkl"] != [want["MKL_CBWR"]]:
    bad.append(f"MKL runs {found['mkl']}")
if want["ONEDNN_MAX_CPU_ISA"] == "SSE41" and found["onednn"] and found["onednn"] != ["Intel SSE4.1"]:
    bad.append(f"oneDNN runs {found['onednn']}")
if "OMP_NUM_THREADS" in want and found["threads"] != int(want["OMP_NUM_THREADS"]):
    bad.append(f"PyTorch runs {found['threads']} threads")
print("every setting took effect" if not bad else "NOT in effect: " + "; ".join(bad))
sys.exit(1 if bad else 0)
"""
# the tests whose results are numbers a processor computes (the rest check files, pages and tools)
ISA_TESTS = ["book", "tests/test_numpy", "tests/test_torch", "tests/test_parity", "tests/test_training",
             "tests/test_exercises", "tests/test_data"]


def test_isa(name: str, env: dict[str, str], jobs: int) -> None:
    """The chapters (strict nbval), the numerical tests and the student editions with the kernels of `name`."""
    env = {**env, **ISA_SETTINGS[name]}
    stage(f"kernels forced to {name}: check", [PYTHON, "-c", ISA_PROBE, json.dumps(ISA_SETTINGS[name])], env=env)
    stage(f"kernels forced to {name}: pytest (nbval + numerical tests)",
          [PYTHON, "-m", "pytest", "-q", "-n", str(jobs), "--dist", "loadfile", *ISA_TESTS], env=env)
    stage(f"kernels forced to {name}: student editions, top to bottom",
          [PYTHON, "-m", "tools.execute_notebooks", "--student", "-j", str(jobs)], env=env)


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # MPLBACKEND reaches notebook kernels and strips figures from outputs, failing strict nbval.
    env.pop("MPLBACKEND", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["setup", "book", "test", "notebooks", "colab", "workshop", "wheelhouse",
                                            "matrix", "colab-snapshot", "release"])
    parser.add_argument("paths", nargs="*", help="notebooks for `notebooks`, chapter names (e.g. 03_general_attention) "
                                                 "for `workshop` (default: every chapter)")
    parser.add_argument("--legs", nargs="+", metavar="NAME",
                        help="matrix: only these legs (default: every leg of transformer_course/versions.py)")
    parser.add_argument("--hide-solutions", action="store_true",
                        help="book: leave every exercise solution out of the site (for workshop sessions)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel workers (default 2)")
    parser.add_argument("--isa", choices=sorted(ISA_SETTINGS),
                        help="test: instead of the whole suite, the chapters, the numerical tests and the student "
                             "editions with PyTorch's, MKL's, oneDNN's, NumPy's and OpenBLAS's kernels forced to "
                             "another x86 instruction set (`default`: SSE4.2 and one thread; `avx2`)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    env = clean_env()

    if args.command == "wheelhouse":
        wheelhouse = ROOT / "wheelhouse"
        stage("download wheels", [sys.executable, "-m", "pip", "download", "-d", str(wheelhouse),
                                  "-r", "requirements.txt", "setuptools", "wheel"])
        stage("build package wheel", [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheelhouse), "."])
        if shutil.which("npm"):   # only the workshop's slides need reveal.js
            stage("fetch reveal.js (npm)", ["npm", "pack", "--silent", f"reveal.js@{REVEAL_VERSION}",
                                            "--pack-destination", str(wheelhouse)])
        else:
            print(f"=== wheelhouse: npm not found: reveal.js {REVEAL_VERSION} (the workshop's slides only) is not in "
                  "it; install Node.js and run this again to add it")
        print(f"\nOffline install: TC_WHEELHOUSE={wheelhouse} python3 tools/run.py book")
        report()
        return 0

    setup()
    if args.command == "book":
        build_book(strict=False, hide_solutions=args.hide_solutions)
        print(f"\nThe website is in {ROOT / '_build' / 'html'} (open index.html).")
    elif args.command == "notebooks":
        stage("execute notebooks", [str(PYTHON), "-m", "tools.execute_notebooks", "-j", str(args.jobs), *args.paths],
              env=env)
    elif args.command == "colab":
        stage("write Colab notebooks", [str(PYTHON), "-m", "tools.colab"])
    elif args.command == "workshop":
        stage("build the workshop kit", [str(PYTHON), "-m", "tools.workshop"]
              + (["--chapters", *args.paths] if args.paths else []), env=env)
    elif args.command == "colab-snapshot":
        ok = prepare_colab_snapshot()
        report()
        return 0 if ok else 1
    elif args.command == "release":
        return release()
    elif args.command == "test" and args.isa:
        test_isa(args.isa, env, args.jobs)
    elif args.command == "test":
        PINNED_RESULTS.unlink(missing_ok=True)  # the matrix must never report an earlier run's results
        stage("lint (ruff check)", [BIN / "ruff", "check", "."])
        # Colab's preinstalled versions for tests/test_colab_start.py (downloads once; a failure here makes that
        # test skip, or fail where CI is set)
        prepare_colab_snapshot()
        build_book(strict=True)
        stage("pytest (unit + nbval)", [PYTHON, "-m", "pytest", "-n", str(args.jobs), "--dist", "loadfile",
                                        f"--junitxml={PINNED_RESULTS}"], env=env)
    elif args.command == "matrix":
        failed = matrix(args.legs, env, args.jobs)
        report()
        return 1 if failed else 0
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
