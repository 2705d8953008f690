"""`transformer-course doctor`: is this machine (a workshop laptop, a Colab runtime) ready for the course?

One line per check, a tick or a cross, and for every cross the command that fixes it:

- Python and each dependency against the versions the package supports (`versions.py`: the same table that
  pyproject.toml and the compatibility matrix of CI use);
- PyTorch's threads and the device training will use (CUDA, Apple MPS or the CPU);
- the shipped model loads and translates everyday numbers correctly;
- a few seconds of training run and lower the loss;
- the notebook widgets import.

The exit status is 0 when the whole course can run here and 1 when a check failed (the NumPy chapters may still
run: the lines say which part needs what). A check that fails does not stop the others. Library code: `run_checks`
returns the results, `main` prints them.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from . import versions

__all__ = ["Check", "run_checks", "format_report", "main"]

# everyday numbers the shipped English -> French model must get right, with their French words
SMOKE_NUMBERS = (0, 7, 42, 71, 100, 1000)


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, whether it passed, what was found, and how to fix a failure."""
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _installed_version(distribution: str) -> str | None:
    """The installed version of a distribution (its PyPI name), or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pip(what: str) -> str:
    return f'{sys.executable} -m pip install "{what}"'


def check_python() -> Check:
    found = platform.python_version()
    floor = versions.release(versions.PYTHON_FLOOR)
    tested = sorted({leg.python for leg in versions.LEGS}, key=versions.release)
    if versions.release(found)[:2] < floor:
        return Check("Python", False, f"{found}, older than {versions.PYTHON_FLOOR}",
                     f"install Python {versions.PYTHON_FLOOR} or newer (python.org), or use Google Colab")
    return Check("Python", True, f"{found} (>= {versions.PYTHON_FLOOR}; tested: {', '.join(tested)})")


def check_requirement(requirement: versions.Requirement) -> Check:
    """Installed, importable, and at least the declared floor."""
    spec = requirement.name if requirement.extra is None else f"transformer-course[{requirement.extra}]"
    found = _installed_version(requirement.name)
    if found is None:
        need = ("every chapter but 3 and appendix A needs it" if requirement.extra == "torch"
                else "the course needs it")
        return Check(requirement.name, False, f"not installed; {need}",
                     _pip(spec if requirement.extra else f"{requirement.name}>={requirement.floor}"))
    if versions.release(found.split("+")[0].split("rc")[0]) < versions.release(requirement.floor):
        return Check(requirement.name, False, f"{found}, older than the supported {requirement.floor}",
                     _pip(f"{requirement.name}>={requirement.floor}"))
    try:
        importlib.import_module(requirement.name)       # every requirement imports under its PyPI name
    except Exception as err:                         # installed but broken (a missing library, a bad wheel)
        return Check(requirement.name, False, f"{found} is installed but does not import: {_one_line(err)}",
                     _pip(f"--force-reinstall {requirement.name}>={requirement.floor}"))
    tested = versions.tested_versions(requirement.name)
    note = f"tested: {', '.join(tested)}" if tested else "tested: the newest release"
    return Check(requirement.name, True, f"{found} (>= {requirement.floor}; {note})")


def check_threads() -> Check:
    import torch
    cores = os.cpu_count() or 1
    threads = torch.get_num_threads()
    return Check("threads", True, f"PyTorch uses {threads} thread(s); the machine shows {cores} core(s)")


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
                     _pip("--force-reinstall transformer-course"))
    return Check("shipped model", True, f"numbers-en-fr loads and translates {len(sources)} everyday numbers "
                 f"right, e.g. {sources[2]!r} -> {outputs[2]!r} ({seconds:.1f} s)")


def check_training(steps: int = 40) -> Check:
    """A tiny Transformer learns to reverse strings for a few seconds: the loss must fall and stay finite."""
    import torch

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
    recipe = get_train_preset("tiny").replace(max_steps=steps, eval_every=steps, warmup_steps=10, batch_size=32)
    started = time.perf_counter()
    history = train(model, make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=32),
                    make_dataloader(data.val, src_vocab, tgt_vocab, batch_size=64, shuffle=False), recipe,
                    src_vocab=src_vocab, tgt_vocab=tgt_vocab, device="cpu", progress=False)
    seconds = time.perf_counter() - started
    first, last = history["loss"][0], history["loss"][-1]
    if not (torch.isfinite(torch.tensor(last)) and last < first):
        return Check("training", False, f"{steps} steps of a tiny model: the loss went from {first:.2f} to "
                     f"{last:.2f} instead of falling", "report this, with the output of this command, as an issue")
    return Check("training", True, f"{steps} steps of a tiny model in {seconds:.1f} s on the CPU; loss "
                 f"{first:.2f} -> {last:.2f}")


def check_widgets() -> Check:
    import ipywidgets

    from .viz import widgets                         # noqa: F401 (imports the course's widgets)
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


def run_checks(debug: bool = False) -> list[Check]:
    """Every check, in the order of the report. Checks that need a missing dependency are reported as skipped
    failures, so the report always has one line per check."""
    checks = [check_python()] + [check_requirement(r) for r in versions.REQUIREMENTS]
    missing = {c.name for c in checks if not c.ok}
    runtime = (("threads", check_threads, {"torch"}), ("device", check_device, {"torch"}),
               ("shipped model", check_shipped_model, {"torch", "safetensors", "num2words", "sacrebleu"}),
               ("training", check_training, {"torch", "tqdm", "sacrebleu"}),
               ("widgets", check_widgets, {"ipywidgets", "matplotlib"}))
    for name, check, needs in runtime:
        blocked = sorted(needs & missing)
        if blocked:
            checks.append(Check(name, False, f"not checked: needs {', '.join(blocked)} (see above)"))
        else:
            checks.append(_guarded(name, check, "run again with --debug and report the traceback as an issue",
                                   debug))
    return checks


def format_report(checks: list[Check], encoding: str | None = None) -> str:
    """The report as text; ticks and crosses where the terminal can print them, OK / FAIL where it cannot."""
    try:
        "✓✗".encode(encoding or "utf-8")
        good, bad = "✓", "✗"
    except (UnicodeEncodeError, LookupError):
        good, bad = "OK  ", "FAIL"
    width = max(len(c.name) for c in checks)
    lines = ["transformer-course doctor: is this machine ready for the course?", ""]
    for c in checks:
        lines.append(f"{good if c.ok else bad} {c.name:<{width}}  {c.detail}")
        if not c.ok and c.fix:
            lines.append(f"  {'':<{width}}  fix: {c.fix}")
    failed = [c for c in checks if not c.ok]
    lines.append("")
    if failed:
        lines.append(f"{len(failed)} check(s) failed: fix them, then run `python -m transformer_course doctor` "
                     "again (or use Google Colab, where everything is preinstalled).")
    else:
        lines.append("Everything the course needs works here.")
    return "\n".join(lines)


def main(debug: bool = False) -> int:
    """Print the report; 0 when every check passed, 1 otherwise."""
    checks = run_checks(debug)
    print(format_report(checks, getattr(sys.stdout, "encoding", None)), flush=True)
    return 0 if all(c.ok for c in checks) else 1
