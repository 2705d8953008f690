#!/usr/bin/env python3
"""Execute chapter notebooks in a clean kernel, top to bottom, and store their outputs.

This is the only way stored outputs are written. It
- refuses to run when MPLBACKEND is set (it reaches the kernel and strips figures from the outputs);
- starts a fresh kernel of this interpreter per notebook, in the notebook's folder (as nbval does);
- records no timing metadata (re-running gives no diff for text and plot outputs);
- saves widget state (nbclient's default), so widgets can be rendered statically;
- fails on any error, except in cells tagged `raises-exception`.

    python -m tools.execute_notebooks                 # every notebook in book/
    python -m tools.execute_notebooks book/03_*.ipynb # some of them
    python -m tools.execute_notebooks -j 2            # two at a time
    python -m tools.execute_notebooks --student       # the student edition of every chapter, stored nowhere

`--student` writes the student edition (no solutions: tools/colab.py) into _build/student-run/ and runs each
notebook top to bottom there, as a learner's *Run all* does; nothing is stored. With no solution cell run,
the cells after an exercise draw other random numbers than the book's: they must hold all the same.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 900  # per cell; chapters are meant to run in minutes
STUDENT_LIMIT_S = 400  # per student edition: the slowest takes under a minute on 2 cores, under two at SSE4.2
# The chapters that read the Ding dictionary's sentences (Debian's trans-de-en, GPL: installed, never shipped).
NEEDS_DING = ("10_real_sentences.ipynb",)


def missing_corpus(path: str | Path) -> str | None:
    """Why the notebook at `path` cannot run here (its corpus is not installed), or None. Where CI is set the
    corpus must be there (.ci/run installs it): None, so that the notebook runs and fails with load_ding's
    message."""
    if Path(path).name not in NEEDS_DING or os.environ.get("CI"):
        return None
    from transformer_course.data.ding import DING_INSTALL, DING_PATH
    return None if DING_PATH.is_file() else (f"{Path(path).name} reads the Ding dictionary, not installed here "
                                             f"({DING_PATH}): {DING_INSTALL}")


def _merge_streams(outputs: list) -> list:
    """Join consecutive stdout (or stderr) chunks: how a kernel splits a printout depends on timing, not code."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = "".join(previous["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def _strip_metadata(nb) -> None:
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps: noise in every diff
        if cell.cell_type == "code":
            cell.metadata.pop("collapsed", None)
            cell.metadata.pop("scrolled", None)
            cell.outputs = _merge_streams(cell.outputs)
    nb.metadata.pop("papermill", None)
    # Pin the kernelspec and language to what nbval runs (--nbval-current-env) so files do not churn.
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}


# Run inside the kernel when a chapter is executed for storage: tools/slide_figures.py as a module of its own,
# recording the figures of `slide` cells as SVG (the user's namespace is left as it was).
_SLIDE_SETUP = """
def _course_slide_setup():
    import sys, types
    module = types.ModuleType("course_slide_figures")
    module.__file__ = {path!r}
    exec(compile({source!r}, {path!r}, "exec"), module.__dict__)
    sys.modules["course_slide_figures"] = module
    module.recorder = module.Recorder({directory!r})
_course_slide_setup()
del _course_slide_setup
"""
_SLIDE_CELL = '__import__("sys").modules["course_slide_figures"].recorder.cell({name!r}, {figsize!r})'


def notebook_client(nb, slide_dir: Path | None = None, **options):
    """nbclient's NotebookClient for `nb`, waiting for each cell's reply in slices of at most a second.
    With `slide_dir`, the figures of cells tagged `slide` are also saved there as SVG (tools/slide_figures.py),
    named CELL-ID-K.svg.

    With widgets on the page nbclient, acting as their front end, sends comm messages on the shell socket
    while it waits on that socket for the cell's reply; the socket's edge-triggered readiness can then be
    consumed by the send, and the wait wakes only at the cell's timeout although the reply has arrived (the
    kernel and the client both idle; jupyter/nbclient#312). A wait cut into slices looks again every second."""
    from queue import Empty

    from nbclient import NotebookClient

    class _Client(NotebookClient):
        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            get_msg = kc.shell_channel.get_msg

            async def get_msg_in_slices(timeout=None, **kwargs):
                deadline = None if timeout is None else time.monotonic() + timeout
                while True:
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    try:
                        return await get_msg(timeout=1.0 if left is None else min(1.0, left), **kwargs)
                    except Empty:
                        if left is not None and left <= 1.0:
                            raise

            kc.shell_channel.get_msg = get_msg_in_slices
            return kc

        async def _hidden(self, code: str) -> None:
            """Run `code` in the kernel without a cell: no output, no history."""
            reply = await self.async_wait_for_reply(self.kc.execute(code, silent=True, store_history=False))
            if reply is None or reply["content"]["status"] != "ok":
                raise RuntimeError(f"slide figures: the kernel could not run {code[:60]!r}: "
                                   f"{(reply or {}).get('content', {}).get('evalue')}")

        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            if slide_dir is not None and cell.cell_type == "code":
                from . import slide_figures
                if not getattr(self, "_slides_ready", False):
                    source = Path(slide_figures.__file__)
                    await self._hidden(_SLIDE_SETUP.format(path=str(source), source=source.read_text(),
                                                           directory=str(slide_dir)))
                    self._slides_ready, self._slide_cell = True, (None, None)
                name = cell.get("id") if slide_figures.SLIDE_TAG in cell.metadata.get("tags", []) else None
                figsize = cell.metadata.get("slide_figsize") if name else None
                if (name, figsize) != self._slide_cell:
                    await self._hidden(_SLIDE_CELL.format(name=name, figsize=figsize and tuple(figsize)))
                    self._slide_cell = (name, figsize)
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    return _Client(nb, **options)


def execute(path: str, store: bool = True) -> tuple[str, float]:
    import nbformat

    nb_path = Path(path).resolve()
    nb = nbformat.read(nb_path, as_version=4)
    slide_dir = None
    if store:                       # (imported here: --run-only runs this file as a script and stores nothing)
        from . import slide_figures
        slide_dir = slide_figures.figure_dir(nb_path)
        for old in [*slide_dir.glob("*.svg"), *slide_dir.glob("*.error")]:   # this run writes them afresh
            old.unlink()
    start = time.perf_counter()
    client = notebook_client(nb, slide_dir=slide_dir, timeout=TIMEOUT_S, kernel_name="python3",
                             record_timing=False, store_widget_state=True,
                             resources={"metadata": {"path": str(nb_path.parent)}})
    client.execute()
    elapsed = time.perf_counter() - start
    if store:
        _strip_metadata(nb)
        nbformat.write(nb, nb_path)
        slide_figures.write_manifest(nb_path, nb.cells)
    return str(nb_path.relative_to(ROOT)), elapsed


def run_student_edition(path: str) -> tuple[str, float]:
    """One student edition, top to bottom, in a process of its own with a hard time limit, tried twice: now
    and then the kernel finishes a widget cell, both kernel and client go idle and the client waits forever
    (seen with ipykernel 7.4 and the widgets appendix; nbclient's cell timeout does not cover that wait)."""
    command = [sys.executable, __file__, "--run-only", path]
    for attempt in (1, 2):
        # a session of its own, so that a stuck run is ended with its kernel
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            out, err = child.communicate(timeout=STUDENT_LIMIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            if attempt == 2:
                raise RuntimeError(f"no end after {STUDENT_LIMIT_S} s, twice") from None
            print(f"{Path(path).name}: no end after {STUDENT_LIMIT_S} s; running it again", flush=True)
            continue
        if child.returncode != 0:
            raise RuntimeError(err[-3000:])
        seconds = next(line.split()[1] for line in out.splitlines() if line.startswith("SECONDS "))
        return str(Path(path).resolve().relative_to(ROOT)), float(seconds)
    raise AssertionError("unreachable")


def longest_first(paths: list[str]) -> list[str]:
    """The notebooks in the order that ends soonest on a few workers: the longest first, by the times that
    benchmarks/chapter_times.py measured (a notebook it did not time goes first: it may be long)."""
    times_file = ROOT / "transformer_course" / "results" / "chapter_times.json"
    measured = json.loads(times_file.read_text())["notebooks"] if times_file.exists() else {}
    return sorted(paths, key=lambda path: -measured.get(Path(path).name, {}).get("seconds", float("inf")))


def student_editions() -> list[str]:
    """The student edition of every chapter, written afresh into _build/student-run/."""
    from .colab import write_colab_notebooks
    out = ROOT / "_build" / "student-run"
    shutil.rmtree(out, ignore_errors=True)
    return [str(path) for path in write_colab_notebooks(out, ROOT, solutions=False)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="notebooks (default: book/*.ipynb)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="notebooks executed at once")
    parser.add_argument("--run-only", metavar="PATH", help=argparse.SUPPRESS)   # one notebook, stored nowhere
    parser.add_argument("--student", action="store_true",
                        help="run the student edition of every chapter (no solutions) and store nothing")
    args = parser.parse_args(argv)
    if "MPLBACKEND" in os.environ:
        print("execute_notebooks: MPLBACKEND is set; it reaches the kernel and removes figures from the "
              "stored outputs. Unset it (`unset MPLBACKEND`) and run again.", file=sys.stderr)
        return 2
    if args.run_only:                                 # (run_student_edition's child process)
        print(f"SECONDS {execute(args.run_only, store=False)[1]:.1f}")
        return 0
    if args.student:
        paths = student_editions()
    else:
        paths = args.paths or sorted(str(p) for p in (ROOT / "book").glob("*.ipynb"))
    if not paths:
        print("execute_notebooks: no notebooks found", file=sys.stderr)
        return 1
    for path in [p for p in paths if missing_corpus(p)]:
        print(f"skipped: {missing_corpus(path)}", file=sys.stderr)
        paths.remove(path)
    paths = longest_first(paths)
    os.environ["PYTHONHASHSEED"] = "0"
    failures = 0
    pool_type = ThreadPoolExecutor if args.student else ProcessPoolExecutor   # students: a process each already
    with pool_type(max_workers=max(1, args.jobs)) as pool:
        futures = {path: pool.submit(run_student_edition, path) if args.student else pool.submit(execute, path)
                   for path in paths}
        for path, future in futures.items():
            try:
                name, seconds = future.result()
                print(f"{name:<50s} {seconds:7.1f} s")
            except Exception as err:  # report every failing notebook, not only the first
                failures += 1
                print(f"{path}: FAILED\n{err}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
