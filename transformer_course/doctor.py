"""`transformer-course doctor`: is this machine (a workshop laptop, a Colab runtime) ready for the course?

The first lines say which Python runs the checks; then one line per check, with a mark, and for every failure
the command that fixes it:

- Python, the package itself, and each dependency against the versions the package supports (`versions.py`:
  the same table that pyproject.toml and the compatibility matrix of CI use);
- a notebook front end (JupyterLab or Notebook, and ipykernel; Colab brings its own);
- PyTorch's threads and the device training will use (CUDA, Apple MPS or the CPU);
- the shipped model loads and translates everyday numbers correctly;
- a few seconds of training run and lower the loss, and how fast compared with the course's test machine;
- the notebook widgets import.

Marks: ✓ passed, ✗ failed (its fix follows), – not checked because something it needs failed above, ! works but
slowly (advice follows). Every fix of a missing or broken package is a command that works when copied (advice about
threads or a slow machine is a sentence): dependencies come from PyPI, PyTorch is
the tested version's CPU build (PyPI's Linux wheel is the multi-gigabyte CUDA build), and the package itself
comes from the course's repository (a checkout, or the git tag of the installed version), as it is not on PyPI,
or, in an unzipped student kit, from the kit's own wheel (`wheels/`).

Run from a checkout of the course (a folder with tools/run.py) by another Python than the checkout's .venv
(the system Python, say), the report says so and names the command to use instead, and its fixes install into
that .venv. The exit status is 0 when the whole course can run here and 1 when a check failed (the NumPy
chapters may still run: the lines say which part needs what). A check that fails does not stop the others.
Library code: `run_checks` returns the results, `format_report` makes the text, `main` prints it.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import versions

__all__ = ["Check", "Environment", "environment", "run_checks", "format_report", "main"]

# everyday numbers the shipped English -> French model must get right, with their French words
SMOKE_NUMBERS = (0, 7, 42, 71, 100, 1000)
# Where a fix installs the package from when no checkout is at hand (Colab, a pip install): the repository of
# _config.yml (tests/test_doctor.py checks they agree), at the git tag of the installed version, v<version>.
REPOSITORY_URL = "https://github.com/transformer-course/transformer-course"
# PyTorch's own index of CPU-only wheels (Linux and Windows; PyPI's Linux wheel is the CUDA build, gigabytes
# with its libraries). TC_TORCH_INDEX_URL replaces it: the tests point it at a local index.
TORCH_INDEX_URL = os.environ.get("TC_TORCH_INDEX_URL", "https://download.pytorch.org/whl/cpu")
# the PyTorch version the tests run (the pinned leg of the compatibility matrix, requirements.txt)
TORCH_TESTED = next(leg for leg in versions.LEGS if leg.name == "pinned").pins["torch"]
# check_training's 40 steps on this project's 2-core test machine (AMD EPYC, PyTorch 2.13.0 CPU, idle): 1.2 to
# 1.3 s in repeated runs (up to 4 s while other jobs shared its cores). Above SLOW_FACTOR times that, training
# is slow enough to plan for: a warning, not a failure.
TRAINING_REFERENCE_SECONDS = 1.3
SLOW_FACTOR = 4


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, whether it passed, what was found, and how to fix a failure.

    `skipped`: not checked because something it needs failed above (not counted as a failure). `warning`:
    passed, but with a caveat worth acting on (a slow machine). On a line that passed, `fix` is advice."""
    name: str
    ok: bool
    detail: str
    fix: str = ""
    skipped: bool = False
    warning: bool = False

    @property
    def failed(self) -> bool:
        return not self.ok and not self.skipped


# --- which Python, which checkout --------------------------------------------------------------------------------


def _scripts(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin")


def _venv_python(venv: Path) -> Path:
    return _scripts(venv) / ("python.exe" if os.name == "nt" else "python")


def _is_checkout(folder: Path) -> bool:
    return (folder / "tools" / "run.py").is_file() and (folder / "transformer_course" / "__init__.py").is_file()


def find_checkout(start: Path) -> Path | None:
    """The checkout of the course that `start` is in (a folder with tools/run.py and transformer_course/)."""
    start = start.resolve()
    return next((folder for folder in (start, *start.parents) if _is_checkout(folder)), None)


def _same_path(a: Path | str, b: Path | str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _quoted(path: Path | str) -> str:
    """A path as a shell word: quoted when it holds a space."""
    text = str(path)
    return f'"{text}"' if any(ch in text for ch in " \t'&()") else text


@dataclass(frozen=True)
class Environment:
    """The Python running the checks, and the course's checkout around the current folder (if any)."""
    python: str                 # sys.executable
    prefix: str                 # sys.prefix: the environment it runs in
    checkout: Path | None       # from the current folder upwards; None outside a checkout
    package_root: Path | None   # the checkout the imported package lives in (an editable install), or None
    wheel: Path | None = None   # outside a checkout: the course's wheel of a student kit around the current folder

    @property
    def venv(self) -> Path | None:
        return None if self.checkout is None else self.checkout / ".venv"

    @property
    def in_course_env(self) -> bool:
        return self.venv is not None and _same_path(self.prefix, self.venv)

    @property
    def wrong_env(self) -> bool:
        """In a checkout, but not run by its .venv (which may not exist yet)."""
        return self.checkout is not None and not self.in_course_env

    @property
    def fix_python(self) -> str:
        """The interpreter the fixes install into: the checkout's .venv when run from a checkout, else this one."""
        return _quoted(_venv_python(self.venv)) if self.wrong_env else _quoted(self.python)

    @property
    def source_root(self) -> Path | None:
        """The checkout a fix installs the package from (None: from the repository's git tag)."""
        return self.checkout or self.package_root

    def rerun(self) -> str:
        return f"{self.fix_python} -m transformer_course doctor"


def environment(cwd: Path | None = None) -> Environment:
    """This Python, the checkout around `cwd` (default: the current folder) and the one the package lives in."""
    here = Path(__file__).resolve().parent.parent
    try:
        checkout = find_checkout(cwd or Path.cwd())
    except OSError:                                  # the current folder was deleted
        checkout = None
    return Environment(python=sys.executable, prefix=sys.prefix, checkout=checkout,
                       package_root=here if _is_checkout(here) else None,
                       wheel=None if checkout else find_kit_wheel(cwd or Path.cwd()))


def find_kit_wheel(start: Path) -> Path | None:
    """The course's wheel in the `wheels/` folder of an unzipped student kit that `start` is in or under (the
    kit's README installs from it), or None; of several versions the latest."""
    try:
        for folder in (start, *list(start.resolve().parents)[:2]):
            wheels = sorted((folder / "wheels").glob("transformer_course-*.whl"),
                            key=lambda w: [int(p) if p.isdigit() else 0 for p in w.name.split("-")[1].split(".")])
            if wheels:
                return wheels[-1].resolve()
    except OSError:                                  # the current folder was deleted
        pass
    return None


def _package_installed() -> str | None:
    """The version of transformer-course installed in this Python, or None. A checkout's own
    transformer_course.egg-info (a build's leftover, seen when Python runs in the checkout) is no install."""
    for dist in importlib.metadata.distributions(name="transformer-course"):
        if not _is_checkout(Path(str(dist.locate_file("")))):
            return dist.version
    return None


def _package_version() -> str:
    from . import __version__
    return _package_installed() or __version__


def _git_requirement(extra: str = "") -> str:
    return f'"transformer-course{extra} @ git+{REPOSITORY_URL}@v{_package_version()}"'


def package_fix(env: Environment) -> str:
    """(Re)install the package with its torch extra from the course's repository: it is not on PyPI. Without
    PyTorch installed, the extra is left out: it would fetch PyPI's PyTorch (on Linux the CUDA build,
    gigabytes); the torch line's fix installs the CPU build and the safetensors line's fix the rest."""
    extra = "[torch]" if _installed_version("torch") is not None else ""
    if env.source_root is not None:
        return f'{env.fix_python} -m pip install -e "{env.source_root}{extra}"'
    if env.wheel is not None:                        # a student kit: its own wheel, no repository needed
        return f'{env.fix_python} -m pip install "{env.wheel}{extra}"'
    return f"{env.fix_python} -m pip install {_git_requirement(extra)}"


def shipped_model_fix(env: Environment) -> str:
    """Restore the package's files (the shipped model among them). In a checkout an install links to the
    checkout's own files, so those are restored with git; elsewhere the package is reinstalled from its tag."""
    if env.source_root is not None:
        if (env.source_root / ".git").exists():
            return f"git -C {_quoted(env.source_root)} checkout -- transformer_course/checkpoints"
        return (f"copy transformer_course/checkpoints/ from a fresh copy of {REPOSITORY_URL} into "
                f"{env.source_root}")
    if env.wheel is not None:
        return f'{env.fix_python} -m pip install --force-reinstall --no-deps "{env.wheel}"'
    return f"{env.fix_python} -m pip install --force-reinstall --no-deps {_git_requirement()}"


def torch_fix(env: Environment, reinstall: bool = False) -> str:
    """The tested PyTorch, CPU build: PyTorch's CPU index on Linux and Windows; PyPI's wheel on macOS is one."""
    command = f"{env.fix_python} -m pip install {'--force-reinstall ' if reinstall else ''}torch=={TORCH_TESTED}"
    return command if sys.platform == "darwin" else f"{command} --index-url {TORCH_INDEX_URL}"


def _pip(env: Environment, *requirements: str, reinstall: bool = False) -> str:
    flags = "--force-reinstall " if reinstall else ""
    return f"{env.fix_python} -m pip install {flags}" + " ".join(f'"{r}"' for r in requirements)


# --- the checks ----------------------------------------------------------------------------------------------------


def _installed_version(distribution: str) -> str | None:
    """The installed version of a distribution (its PyPI name), or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_python() -> Check:
    found = platform.python_version()
    floor = versions.release(versions.PYTHON_FLOOR)
    tested = sorted({leg.python for leg in versions.LEGS}, key=versions.release)
    if versions.release(found)[:2] < floor:
        return Check("Python", False, f"{found}, older than {versions.PYTHON_FLOOR}",
                     f"install Python {versions.PYTHON_FLOOR} or newer (python.org), or use Google Colab")
    return Check("Python", True, f"{found} (>= {versions.PYTHON_FLOOR}; tested: {', '.join(tested)})")


def check_package(env: Environment | None = None) -> Check:
    """The package is installed in this Python (not only imported from the current folder)."""
    env = env or environment()
    where = Path(__file__).resolve().parent
    found = _package_installed()
    if found is None:
        return Check("transformer-course", False, f"imported from {where}, but not installed in this Python",
                     package_fix(env))
    return Check("transformer-course", True, f"{found}, imported from {where}")


def check_requirement(requirement: versions.Requirement, env: Environment | None = None) -> Check:
    """Installed, importable, and at least the declared floor."""
    env = env or environment()
    name, floor = requirement.name, requirement.floor
    is_torch = name == "torch"
    install = torch_fix(env) if is_torch else _pip(env, f"{name}>={floor}")
    found = _installed_version(name)
    if found is None:
        need = ("every chapter but 3 and appendix A needs it" if requirement.extra == "torch"
                else "the course needs it")
        return Check(name, False, f"not installed; {need}", install)
    if versions.release(found.split("+")[0].split("rc")[0]) < versions.release(floor):
        return Check(name, False, f"{found}, older than the supported {floor}", install)
    try:
        importlib.import_module(name)                # every requirement imports under its PyPI name
    except Exception as err:                         # installed but broken (a missing library, a bad wheel)
        return Check(name, False, f"{found} is installed but does not import: {_one_line(err)}",
                     torch_fix(env, reinstall=True) if is_torch else _pip(env, f"{name}>={floor}", reinstall=True))
    tested = versions.tested_versions(name)
    note = f"tested: {', '.join(tested)}" if tested else "tested: the newest release"
    return Check(name, True, f"{found} (>= {floor}; {note})")


def _launcher(lab: bool) -> str:
    """How to start the front end of this Python: its `jupyter` script, else `python -m`."""
    script = Path(sys.executable).parent / ("jupyter.exe" if os.name == "nt" else "jupyter")
    if script.is_file():
        return f"{_quoted(script)} {'lab' if lab else 'notebook'}"
    return f"{_quoted(sys.executable)} -m {'jupyterlab' if lab else 'notebook'}"


def check_jupyter(env: Environment | None = None) -> Check:
    """A notebook front end (JupyterLab or Notebook) and the kernel that runs this Python in it."""
    env = env or environment()
    kernel = _installed_version("ipykernel") if _importable("ipykernel") else None
    if _importable("google.colab"):
        return Check("Jupyter", True, "Google Colab's notebooks" + (f" (ipykernel {kernel})" if kernel else ""))
    lab = _installed_version("jupyterlab") if _importable("jupyterlab") else None
    notebook = _installed_version("notebook") if _importable("notebook") else None
    missing, problems = [], []
    if lab is None and notebook is None:
        missing.append("jupyterlab>=4")
        problems.append("no notebook front end (JupyterLab or Notebook): `jupyter lab` cannot start")
    if kernel is None:
        missing.append("ipykernel>=6")
        problems.append("no ipykernel: no notebook can run this Python")
    if missing:
        return Check("Jupyter", False, "; ".join(problems), _pip(env, *missing))
    front = f"JupyterLab {lab}" if lab else f"Notebook {notebook}"
    return Check("Jupyter", True, f"{front}, ipykernel {kernel}; start it with `{_launcher(lab is not None)}`")


def _physical_cores() -> int | None:
    """Physical cores (hyper-threads not counted), where the system says; None where it does not."""
    try:
        if sys.platform.startswith("linux"):
            pairs, physical = set(), "0"
            with open("/proc/cpuinfo") as cpuinfo:
                for line in cpuinfo:
                    key, _, value = line.partition(":")
                    if key.strip() == "physical id":
                        physical = value.strip()
                    elif key.strip() == "core id":
                        pairs.add((physical, value.strip()))
            return len(pairs) or None
        if sys.platform == "darwin":
            out = subprocess.run(["sysctl", "-n", "hw.physicalcpu"], capture_output=True, text=True, timeout=5)
            return int(out.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return None


def threads_verdict(threads: int, logical: int, physical: int | None, usable: int | None = None,
                    omp: str | None = None) -> Check:
    """A tick in every case (the course runs either way), with advice when the thread count wastes time:
    more threads than cores fight over them; one thread on a multicore machine leaves cores idle."""
    cores = min(physical or logical, usable or logical)
    shown = f"{physical} physical core(s) ({logical} logical)" if physical and physical != logical else \
        f"{logical} core(s)"
    if usable and usable < logical:
        shown += f", {usable} usable by this process"
    detail = f"PyTorch uses {threads} thread(s); the machine has {shown}"
    if threads > cores:
        return Check("threads", True, detail, f"more threads than cores slow training down: set "
                     f"OMP_NUM_THREADS={cores} before starting Jupyter, or call torch.set_num_threads({cores}) "
                     "at the top of a notebook")
    if threads == 1 and cores > 1:
        why = "OMP_NUM_THREADS=1 is set: unset it, or" if omp == "1" else "to use them,"
        return Check("threads", True, detail, f"one thread leaves {cores - 1} core(s) idle and training up to "
                     f"{cores}x slower: {why} call torch.set_num_threads({cores}) at the top of a notebook")
    return Check("threads", True, detail)


def check_threads() -> Check:
    import torch
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return threads_verdict(torch.get_num_threads(), os.cpu_count() or 1, _physical_cores(), usable,
                           os.environ.get("OMP_NUM_THREADS"))


def check_device() -> Check:
    import torch
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        memory = torch.cuda.get_device_properties(0).total_memory / 2**30
        return Check("device", True, f"CUDA: {name} ({memory:.0f} GiB); training uses it (--device auto)")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return Check("device", True, "Apple MPS; training uses it (--device auto)")
    return Check("device", True, "the CPU (no CUDA or MPS); the chapters are made to run on a CPU")


def check_shipped_model() -> Check:
    """numbers-en-fr loads and translates a few everyday numbers as the data's own French words say."""
    from .data.tasks import number_to_words
    from .training.checkpoint import load_pretrained
    from .training.evaluate import translate
    started = time.perf_counter()
    model, src_vocab, tgt_vocab = load_pretrained("numbers-en-fr", device="cpu")
    sources = [number_to_words(n, "en") for n in SMOKE_NUMBERS]
    references = [number_to_words(n, "fr") for n in SMOKE_NUMBERS]
    outputs = translate(model, sources, src_vocab, tgt_vocab)
    seconds = time.perf_counter() - started
    wrong = [(s, o, r) for s, o, r in zip(sources, outputs, references) if o != r]
    if wrong:
        source, output, reference = wrong[0]
        return Check("shipped model", False, f"numbers-en-fr translated {len(wrong)} of {len(sources)} everyday "
                     f"numbers wrongly, e.g. {source!r} -> {output!r} (expected {reference!r})",
                     shipped_model_fix(environment()))
    return Check("shipped model", True, f"numbers-en-fr loads and translates {len(sources)} everyday numbers "
                 f"right, e.g. {sources[2]!r} -> {outputs[2]!r} ({seconds:.1f} s)")


def training_verdict(steps: int, seconds: float, first: float, last: float,
                     reference: float = TRAINING_REFERENCE_SECONDS) -> Check:
    """The loss must fall and stay finite; a run more than SLOW_FACTOR times slower than the course's test
    machine passes with a warning that says how much longer the chapters' training cells will take."""
    if not (math.isfinite(last) and last < first):
        return Check("training", False, f"{steps} steps of a tiny model: the loss went from {first:.2f} to "
                     f"{last:.2f} instead of falling", "report this, with the output of this command, as an issue")
    detail = f"{steps} steps of a tiny model in {seconds:.1f} s on the CPU; loss {first:.2f} -> {last:.2f}"
    ratio = seconds / reference
    if ratio > SLOW_FACTOR:
        return Check("training", True, f"{detail}: slow, {ratio:.0f}x the course's 2-core test machine "
                     f"({reference:.1f} s)", f"the chapters' training cells will take about {ratio:.0f}x the times "
                     "they show; close other programs, or use Google Colab (its CPU runtime is enough: the "
                     "chapters train on the CPU)",
                     warning=True)
    return Check("training", True, f"{detail} (the course's 2-core test machine: {reference:.1f} s)")


def check_training(steps: int = 40) -> Check:
    """A tiny Transformer learns to reverse strings for a few seconds: the loss must fall and stay finite."""
    from .config import get_preset, get_train_preset
    from .data.loader import make_dataloader
    from .data.tasks import make_task
    from .torch.transformer import Transformer
    from .training.trainer import train
    from .utils import set_seed

    set_seed(0)
    data = make_task("reverse", n_train=512, n_val=64, n_test=1, max_len=6)
    src_vocab, tgt_vocab = data.build_vocabs()
    config = get_preset("tiny").replace(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
    model = Transformer(config)
    recipe = get_train_preset("tiny").replace(max_steps=steps, eval_every=steps, warmup_steps=10, batch_size=32,
                                              device="cpu")
    started = time.perf_counter()
    history = train(model, make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=32), recipe, callbacks=[])
    seconds = time.perf_counter() - started
    return training_verdict(steps, seconds, float(history["loss"][0]), float(history["loss"][-1]))


def check_widgets() -> Check:
    import ipywidgets

    from .viz import widgets  # noqa: F401 (imports the course's widgets)
    return Check("widgets", True, f"ipywidgets {ipywidgets.__version__}; the course's widgets import "
                 "(they run in Jupyter and Colab)")


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text}" if not text.startswith(type(err).__name__) else text


def _guarded(name: str, check: Callable[[], Check], fix: str, debug: bool) -> Check:
    """Run one check; an unexpected error becomes a failed line (with the traceback when debugging)."""
    try:
        return check()
    except Exception as err:
        if debug:
            traceback.print_exc()
        return Check(name, False, _one_line(err), fix)


def run_checks(debug: bool = False, env: Environment | None = None) -> list[Check]:
    """Every check, in the order of the report. A check that needs something that failed is reported as not
    checked (skipped, not a failure), so the report always has one line per check."""
    env = env or environment()
    checks = [check_python(), check_package(env)] + [check_requirement(r, env) for r in versions.REQUIREMENTS]
    checks.append(check_jupyter(env))
    missing = {c.name for c in checks if c.failed}
    report_it = "run again with --debug and report the traceback as an issue"
    runtime = (("threads", check_threads, {"torch"}, report_it), ("device", check_device, {"torch"}, report_it),
               ("shipped model", check_shipped_model, {"torch", "safetensors", "num2words", "sacrebleu"},
                shipped_model_fix(env)),
               ("training", check_training, {"torch", "tqdm", "sacrebleu"}, report_it),
               ("widgets", check_widgets, {"ipywidgets", "matplotlib"}, report_it))
    for name, check, needs, fix in runtime:
        blocked = sorted(needs & missing)
        if blocked:
            checks.append(Check(name, False, f"not checked: needs {', '.join(blocked)} (see above)", skipped=True))
        else:
            checks.append(_guarded(name, check, fix, debug))
    return checks


def _header(env: Environment) -> list[str]:
    """Which Python runs the checks, and, in a checkout, whether it is the course's environment."""
    where = f"Python: {env.python} ({platform.python_version()})"
    if env.in_course_env:
        return [f"{where}, the course's environment {env.venv}"]
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        where += f", virtual environment {env.prefix}"
    if not env.wrong_env:
        return [where]
    if _venv_python(env.venv).exists():
        return [where, f"! not the course's environment ({env.venv}): run `{env.rerun()}` instead"]
    return [where, f"! the course's environment {env.venv} is not set up yet: run `python3 tools/run.py book` in "
                   f"{env.checkout} first (Windows: `py -3 tools\\run.py book`), then `{env.rerun()}`"]


def format_report(checks: list[Check], encoding: str | None = None, env: Environment | None = None) -> str:
    """The report as text; ✓ ✗ – where the terminal can print them, OK / FAIL / SKIP / WARN where it cannot."""
    env = env or environment()
    try:
        "✓✗–".encode(encoding or "utf-8")
        good, bad, skip, warn = "✓", "✗", "–", "!"
    except (UnicodeEncodeError, LookupError):
        good, bad, skip, warn = "OK  ", "FAIL", "SKIP", "WARN"
    width = max(len(c.name) for c in checks)
    lines = ["transformer-course doctor: is this machine ready for the course?", *_header(env), ""]
    for c in checks:
        mark = skip if c.skipped else bad if not c.ok else warn if c.warning else good
        lines.append(f"{mark} {c.name:<{width}}  {c.detail}")
        if c.fix and not c.skipped:
            lines.append(f"{'':<{len(mark) + 1 + width}}  {'fix' if not c.ok else 'advice'}: {c.fix}")
    failed = [c for c in checks if c.failed]
    skipped = [c for c in checks if c.skipped]
    lines.append("")
    if failed:
        text = (f"{len(failed)} check(s) failed ({bad.strip()}): run the fix under each, then `{env.rerun()}` "
                "again (or use Google Colab, where everything is preinstalled).")
        if skipped:
            text += f" The {len(skipped)} line(s) marked {skip} are checked once those pass."
        lines.append(text)
    elif any(c.warning for c in checks):
        lines.append(f"Everything the course needs works here; read the advice under the line(s) marked {warn}.")
    else:
        lines.append("Everything the course needs works here.")
    if env.wrong_env:
        lines.append(f"These lines are about {env.python}, not the course's environment: run `{env.rerun()}`.")
    return "\n".join(lines)


def main(debug: bool = False) -> int:
    """Print the report; 0 when no check failed (warnings and advice included), 1 otherwise."""
    env = environment()
    checks = run_checks(debug, env)
    print(format_report(checks, getattr(sys.stdout, "encoding", None), env), flush=True)
    return 1 if any(c.failed for c in checks) else 0
