#!/usr/bin/env python3
"""The course's one entry point for set-up, building and testing (the README's two commands use it).

    python3 tools/run.py book        # set up .venv (idempotent) and build the website into _build/html
    python3 tools/run.py book --hide-solutions   # the same site without exercise solutions (workshops)
    python3 tools/run.py test        # set up, then: -W book build, unit tests + strict nbval over every chapter
    python3 tools/run.py notebooks   # re-execute chapter notebooks and store their outputs
    python3 tools/run.py wheelhouse  # download every dependency into wheelhouse/ for offline installs

Only the standard library is used here, so it runs on a fresh machine that has nothing but Python.
Each stage prints its wall time; the exit status is non-zero if any stage fails.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".tc-setup-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")

_timings: list[tuple[str, float]] = []


def stage(name: str, cmd: list[str], **kwargs) -> None:
    """Run one command as a named stage; stop the whole run with its exit status if it fails."""
    print(f"\n=== {name}: {' '.join(str(c) for c in cmd)}", flush=True)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, **kwargs)
    elapsed = time.perf_counter() - start
    _timings.append((name, elapsed))
    print(f"=== {name}: exit {result.returncode} after {elapsed:.1f} s", flush=True)
    if result.returncode != 0:
        report()
        if name.startswith("pytest") and result.returncode == 5:
            print("pytest collected no tests: that is a failure here (the suite must never be empty).")
        sys.exit(result.returncode or 1)


def report() -> None:
    print("\nStage times:")
    for name, seconds in _timings:
        print(f"  {name:<28s} {seconds:8.1f} s")


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def setup() -> None:
    """Create .venv and install the pinned requirements and the package (skipped when nothing changed)."""
    if not PYTHON.exists():
        stage("create venv", [sys.executable, "-m", "venv", str(VENV)])
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
    # paths in a config are relative to its own folder: point the local extension at tools/ absolutely
    return text.replace("course_solutions: tools/", f"course_solutions: {ROOT / 'tools'}/")


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


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # MPLBACKEND reaches notebook kernels and strips figures from outputs, failing strict nbval.
    env.pop("MPLBACKEND", None)
    env["PYTHONHASHSEED"] = "0"
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["setup", "book", "test", "notebooks", "wheelhouse"])
    parser.add_argument("paths", nargs="*", help="notebooks for `notebooks` (default: every chapter)")
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
    elif args.command == "test":
        build_book(strict=True)
        stage("pytest (unit + nbval)", [str(PYTHON), "-m", "pytest", "-n", str(args.jobs), "--dist", "loadfile"],
              env=env)
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
