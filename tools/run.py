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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".tc-setup-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
# pytest's results of the README's test command, as JUnit XML (the matrix reads them for its "pinned" leg)
PINNED_RESULTS = ROOT / "_build" / "test-results" / "pytest.xml"
LEGS_DIR = ROOT / ".ci-legs"   # the matrix's virtual environments (git-ignored, rebuilt on every run)
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
    print(f"\n=== {name}: {' '.join(str(c) for c in cmd)}", flush=True)
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


def setup() -> None:
    """Create .venv and install the pinned requirements and the package (skipped when nothing changed), and
    fetch reveal.js for the slides."""
    if not PYTHON.exists():
        stage("create venv", [sys.executable, "-m", "venv", str(VENV)])
    fetch_reveal()
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        print("=== set-up: .venv is up to date (requirements.txt and pyproject.toml unchanged)")
        return
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check"]
    if os.environ.get("TC_WHEELHOUSE"):  # offline: install from a wheelhouse built by `run.py wheelhouse`
        pip += ["--no-index", "--find-links", os.environ["TC_WHEELHOUSE"]]
    stage("install requirements", pip + ["-q", "-r", "requirements.txt"])
    stage("install package", pip + ["-q", "--no-deps", "-e", "."])
    STAMP.write_text(_fingerprint())


def hide_solutions_config(text: str) -> str:
    """_config.yml's text with solutions switched off, usable from any folder."""
    if "course_hide_solutions: false" not in text:
        raise ValueError("_config.yml: expected a `course_hide_solutions: false` entry to switch")
    text = text.replace("course_hide_solutions: false", "course_hide_solutions: true")
    # paths in a config are relative to its own folder: point every local extension at tools/ absolutely
    return re.sub(r"^(\s+course_\w+: )tools/", lambda m: f"{m.group(1)}{ROOT / 'tools'}/", text, flags=re.M)


def build_book(strict: bool, hide_solutions: bool = False) -> None:
    shutil.rmtree(ROOT / "_build", ignore_errors=True)  # a clean build: stale pages can hide warnings
    cmd = [str(BIN / "jupyter-book"), "build", "."]
    if hide_solutions:  # for a workshop session: the same site with every solution left out
        config = ROOT / "_build" / "_config_hide_solutions.yml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(hide_solutions_config((ROOT / "_config.yml").read_text()))
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
    """The leg's fresh virtual environment: the package's wheel, the leg's pins, pytest. Returns the legs-table
    row so far; its "python_bin" is the environment's interpreter, absent when the leg cannot run."""
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
                                             "pytest", "pytest-xdist", "hypothesis"],
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
        lines.append("  ".join(f"{str(row.get(name, '')):<{width}}" for name, width in columns).rstrip())
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
    shutil.rmtree(LEGS_DIR, ignore_errors=True)
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    wheel = build_wheel(PYTHON, LEGS_DIR / "wheel")
    cpu = None if cpu_start is None else _children_cpu_seconds() - cpu_start
    record("matrix: build package wheel", time.perf_counter() - start, cpu, "ok")
    for leg in legs:
        if leg.name == "pinned":
            counts = junit_counts(PINNED_RESULTS)
            row = {"leg": leg.name, **installed_versions(PYTHON, names), **(counts or {})}
            row["result"] = ("not run: python3 tools/run.py test writes its results" if counts is None
                             else "passed" if counts["failed"] == 0 else "FAILED")
        else:
            row = install_leg(leg, wheel, env, names)
            if "python_bin" in row:
                row = test_leg(row, jobs, env)
        rows.append(row)
    table = legs_table(rows)
    (LEGS_DIR / "legs.txt").write_text(table + "\n")
    (LEGS_DIR / "legs.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\nCompatibility matrix (transformer_course/versions.py):\n" + table)
    return any(row["result"].startswith("FAILED") for row in rows)


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # MPLBACKEND reaches notebook kernels and strips figures from outputs, failing strict nbval.
    env.pop("MPLBACKEND", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["setup", "book", "test", "notebooks", "colab", "workshop", "wheelhouse",
                                            "matrix"])
    parser.add_argument("paths", nargs="*", help="notebooks for `notebooks`, chapter names (e.g. 03_general_attention) "
                                                 "for `workshop` (default: every chapter)")
    parser.add_argument("--legs", nargs="+", metavar="NAME",
                        help="matrix: only these legs (default: every leg of transformer_course/versions.py)")
    parser.add_argument("--hide-solutions", action="store_true",
                        help="book: leave every exercise solution out of the site (for workshop sessions)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel workers (default 2)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    env = clean_env()

    if args.command == "wheelhouse":
        wheelhouse = ROOT / "wheelhouse"
        stage("download wheels", [sys.executable, "-m", "pip", "download", "-d", str(wheelhouse),
                                  "-r", "requirements.txt", "setuptools", "wheel"])
        stage("build package wheel", [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheelhouse), "."])
        stage("fetch reveal.js (npm)", ["npm", "pack", "--silent", f"reveal.js@{REVEAL_VERSION}",
                                        "--pack-destination", str(wheelhouse)])
        print(f"\nOffline install: TC_WHEELHOUSE={wheelhouse} python3 tools/run.py book")
        report()
        return 0

    setup()
    if args.command == "book":
        build_book(strict=False, hide_solutions=args.hide_solutions)
        print(f"\nThe website is in {ROOT / '_build' / 'html'} (open index.html).")
    elif args.command == "notebooks":
        stage("execute notebooks", [str(PYTHON), "tools/execute_notebooks.py", "-j", str(args.jobs), *args.paths],
              env=env)
    elif args.command == "colab":
        stage("write Colab notebooks", [str(PYTHON), "tools/colab.py"])
    elif args.command == "workshop":
        stage("build the workshop kit", [str(PYTHON), "tools/workshop.py"]
              + (["--chapters", *args.paths] if args.paths else []), env=env)
    elif args.command == "test":
        PINNED_RESULTS.unlink(missing_ok=True)  # the matrix must never report an earlier run's results
        stage("lint (ruff check)", [BIN / "ruff", "check", "."])
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
