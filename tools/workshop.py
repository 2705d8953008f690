#!/usr/bin/env python3
"""The workshop kit, built into _build/workshop/ (run by `python3 tools/run.py workshop`):

    student/        the chapters as notebooks without solutions (stubs and checks kept), read cleanly in
                    Jupyter and Colab (the Colab conversion of tools/colab.py, with solutions=False)
    instructor/     the same notebooks with every solution, collapsed under *Solution*
    website/        the website without solutions (to serve in the room: python -m http.server -d website)
    slides/         one reveal.js deck per chapter (tools/slides.py), offline; left out, with a message saying
                    how to get reveal.js, when Node.js (npm) was not there to fetch it
    wheels/         the course package as a wheel, and README.md: how to install it and run the notebooks at home
    transformer-course-student.zip      README.md, wheels/, student/ and website/
    transformer-course-instructor.zip   instructor/ and slides/

Nothing a student receives holds a solution: the student website has no page sources, no download button and
no repository link, and its Colab buttons open the student copies (tools/course_solutions.py); the last step
searches student/, website/ and the student zip for every snippet that only a solution holds (`find_leaks`),
and the build fails when one is found.

`--chapters 03_general_attention 06_positional_encoding` builds the kit for those chapters only (the test suite
does, to stay fast): the website is then built from a table of contents with the intro, those chapters and the
references. Sizes and build times are printed at the end.
"""
from __future__ import annotations

import argparse
import bisect
import html as html_lib
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import yaml

from . import slides
from .book import ROOT, cell_source, config_without_solutions, load_toc, toc_docnames
from .colab import write_colab_notebooks
from .run import build_wheel

EDITIONS = {"student": ("README.md", "wheels", "student", "website"), "instructor": ("instructor", "slides")}


def reduced_toc(chapters: list[str]) -> dict:
    """_toc.yml with only the intro, the given chapters (in the book's order) and the references."""
    toc = load_toc()
    keep = {f"book/{name}" for name in chapters} | {"book/references", "book/notation"}
    parts = []
    for part in toc["parts"]:
        entries = [entry for entry in part["chapters"] if entry["file"] in keep]
        if entries:
            parts.append({**part, "chapters": entries})
    return {**toc, "parts": parts}


def build_website(out: Path, work: Path, chapters: list[str] | None) -> None:
    """The website without solutions (the `course_hide_solutions` switch of tools/course_solutions.py)."""
    config = work / "_config_workshop.yml"
    config.write_text(config_without_solutions())
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--config", str(config),
               "--path-output", str(work / "site")]
    if chapters:
        toc = work / "_toc_workshop.yml"
        toc.write_text(yaml.safe_dump(reduced_toc(chapters), sort_keys=False))
        command += ["--toc", str(toc)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the website build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(work / "site" / "_build" / "html", out)


def zip_folders(target: Path, root: Path, names: tuple[str, ...]) -> None:
    """The files and folders `names` of `root` (those that exist) into one zip, under transformer-course-workshop/."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            paths = [root / name] if (root / name).is_file() else sorted((root / name).rglob("*"))
            for path in paths:
                if path.is_file():
                    archive.write(path, Path("transformer-course-workshop") / path.relative_to(root))


STUDENT_README = """# The Transformer, from first principles: the student edition

- `website/`: the course as a website, without the exercise solutions. Open `website/index.html` in a browser.
- `student/`: every chapter as a notebook. Each exercise has a stub to fill in and a check that tells you what
  is wrong; there are no solutions (your instructor has them).
- `wheels/{wheel}`: the course's Python package, which the notebooks import.

## Run the notebooks at home

You need Python 3.10 to 3.13 (the versions the course's tests run). In a terminal, in the folder that holds
this file:

**Linux**, with a network:

```bash
python3 -m venv .venv
.venv/bin/python -m pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu
.venv/bin/python -m pip install "wheels/{wheel}[torch]" jupyterlab
.venv/bin/python -m transformer_course doctor
.venv/bin/jupyter lab student
```

The second line installs PyTorch's CPU build from PyTorch's own package index: from PyPI, Linux gets the CUDA
build, several GB that a laptop without an NVIDIA GPU does not use. Leave the line out on a machine with one.

**Linux, without a network**, from a folder of wheels your instructor gives you (`WHEELHOUSE`, made by
`python3 tools/run.py wheelhouse` on a Linux machine with the same Python version, 3.11 to 3.13):

```bash
python3 -m venv .venv
.venv/bin/python -m pip install --no-index --find-links WHEELHOUSE "wheels/{wheel}[torch]" jupyterlab
.venv/bin/python -m transformer_course doctor
.venv/bin/jupyter lab student
```

**macOS** (not tested by the course's own tests): the Linux steps with a network, without the second line
(PyPI's PyTorch for macOS is the CPU build, and uses Apple's GPU where there is one); without a network, the
Linux steps without a network, from a wheelhouse made on a Mac.

**Windows** (PowerShell; not tested by the course's own tests):

```powershell
py -3 -m venv .venv
.venv\\Scripts\\python -m pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu
.venv\\Scripts\\python -m pip install "wheels/{wheel}[torch]" jupyterlab
.venv\\Scripts\\python -m transformer_course doctor
.venv\\Scripts\\jupyter lab student
```

Without a network on Windows: leave out the PyTorch line and add `--no-index --find-links WHEELHOUSE` to the
pip line, with a wheelhouse made on Windows.

Everything above happens in the folder `transformer-course-workshop/` that the zip unpacks into. The doctor
checks everything the course needs, one line each, with a command that fixes each problem it finds (the course's
own package from `wheels/`: run the doctor from this folder or from `student/`). Then open a
chapter in JupyterLab and use *Run → Run All Cells*: your answers are never overwritten.
"""


def write_student_readme(out: Path, wheel: Path) -> None:
    from transformer_course.doctor import TORCH_TESTED  # the PyTorch release the course's tests run

    (out / "README.md").write_text(STUDENT_README.format(wheel=wheel.name, torch=TORCH_TESTED), encoding="utf-8")


# ------------------------------------------------------------------------------------------------ the leak check

_WORD = re.compile(r"[a-z0-9]+")
# a solution's collapsed block (tools/colab.py); a page's dropdowns are <details> too, but students see them
_DETAILS = re.compile(r"<details>\s*<summary>Solution[^<]*</summary>(.*?)</details>", re.DOTALL)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
MIN_CODE_CHARS = 25      # a solution code line shorter than this is too generic to search for
MIN_SENTENCE_WORDS = 6   # likewise a sentence (or table cell) of solution prose with fewer words


def words(text: str) -> str:
    """Text as its lower-case words and numbers, one space apart: Markdown, HTML and notebook JSON of the same
    sentence compare equal (maths and links reduce to their words)."""
    return " ".join(_WORD.findall(text.lower()))


def solution_snippets(copies: list[Path]) -> dict[str, str]:
    """{words: where} for every solution code line of at least MIN_CODE_CHARS characters and every sentence or
    table cell of solution prose of at least MIN_SENTENCE_WORDS words, in the Colab copies with solutions
    (`copies`), that appears nowhere outside a solution: what only a solution says."""
    inside: dict[str, str] = {}
    outside: list[str] = []
    for copy in copies:
        for index, cell in enumerate(json.loads(copy.read_text())["cells"]):
            text = cell_source(cell)
            outside.append(words(_DETAILS.sub(" ", text)))
            outside += [words(_output_text(output)) for output in cell.get("outputs", [])]
            for body in _DETAILS.findall(text) if cell["cell_type"] == "markdown" else []:
                where = f"{copy.name}, cell {index}"
                for language, code in _FENCE.findall(body):
                    if language == "python":
                        inside.update({words(line): where for line in code.splitlines()
                                       if len(line.strip()) >= MIN_CODE_CHARS})
                prose = re.sub(r"\|\s*-+\s*(?=\|)", " ", _FENCE.sub("\n\n", body))   # table rules go
                for piece in re.split(r"(?<=[.!?;:])\s+|\n\s*\n|\|", prose):
                    if len(words(piece).split()) >= MIN_SENTENCE_WORDS:
                        inside[words(piece)] = where
    elsewhere = " " + " \x00 ".join(outside) + " "
    return {snippet: where for snippet, where in inside.items() if snippet and f" {snippet} " not in elsewhere}


def _output_text(output: dict) -> str:
    """What a reader sees of a cell's output: printed text, plain results and HTML (a source listing, a table)."""
    data = output.get("data", {})
    shown = "".join(output.get("text", "")) + str(data.get("text/plain", "")) + str(data.get("text/html", ""))
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", shown))


def _readable_text(name: str, data: bytes) -> str | None:
    """What a learner can read in a file of the kit, as text (None: not a text file)."""
    suffix = Path(name).suffix
    if suffix not in (".html", ".js", ".ipynb", ".md", ".txt", ".json", ".py", ".css", ".svg"):
        return None
    text = re.sub(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+", " ", data.decode("utf-8", errors="replace"))
    if suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        text = "\n".join(cell_source(c) + "".join(_output_text(o) for o in c.get("outputs", [])) for c in cells)
    if suffix in (".html", ".ipynb", ".svg"):
        text = html_lib.unescape(re.sub(r"<[^>]+>", " ", text))
    return text


def student_files(paths: list[Path]) -> dict[str, str]:
    """{name: readable text} of every file under the folders, and of every member of the zips, in `paths`. A
    zip's wheel of the package is left out: the package is the course's library, which a learner installs in
    any case."""
    found = {}
    for path in paths:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                members = [(f"{path.name}:{m}", archive.read(m)) for m in archive.namelist() if not m.endswith("/")]
        else:
            members = [(str(p), p.read_bytes()) for p in sorted(path.rglob("*")) if p.is_file()]
        for name, data in members:
            text = None if name.endswith(".whl") else _readable_text(name, data)
            if text is not None:
                found[name] = words(text)
    return found


def find_leaks(snippets: dict[str, str], files: dict[str, str]) -> list[str]:
    """One line per solution snippet and student file that holds it: the file, where the solution is, the
    snippet."""
    names = list(files)
    joined = " " + " \x00 ".join(files[name] for name in names) + " "    # whole words match whole words
    starts = [0]
    for name in names[:-1]:
        starts.append(starts[-1] + len(files[name]) + 3)
    leaks = []
    for snippet, where in snippets.items():
        at = joined.find(f" {snippet} ")
        while at >= 0:                                  # every file that holds it, once
            file = bisect.bisect_right(starts, at) - 1
            leaks.append(f"{names[file]}: the solution in {where}: {snippet[:90]!r}")
            next_file = starts[file + 1] if file + 1 < len(starts) else len(joined)
            at = joined.find(f" {snippet} ", next_file)
    return leaks


def size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build(out: Path, chapters: list[str] | None = None) -> list[tuple[str, float, int]]:
    """Build the kit into `out`; return (part, seconds, bytes) for each part."""
    docnames = [f"book/{name}" for name in chapters] if chapters else None
    if docnames:
        unknown = sorted(set(docnames) - set(toc_docnames(ROOT)))
        if unknown:
            raise ValueError(f"--chapters: not in _toc.yml: {', '.join(unknown)}")
    shutil.rmtree(out, ignore_errors=True)
    work = out / ".work"
    work.mkdir(parents=True)
    parts = []

    def timed(name: str, make) -> None:
        started = time.perf_counter()
        make()
        parts.append((name, time.perf_counter() - started, size(out / name)))

    timed("student", lambda: write_colab_notebooks(out / "student", ROOT, solutions=False, docnames=docnames))
    timed("instructor", lambda: write_colab_notebooks(out / "instructor", ROOT, solutions=True, docnames=docnames))
    notebooks = [ROOT / f"{name}.ipynb" for name in docnames] if docnames else None
    if list(slides.SHARE.glob("reveal.js-*.tgz")):
        timed("slides", lambda: slides.build(out / "slides", notebooks))
    else:
        print(f"workshop: no slides: reveal.js is not in {slides.SHARE}. Install Node.js (it brings npm) and run "
              "`python3 tools/run.py setup`, or copy reveal.js's npm tarball there; the rest of the kit is built.")
    timed("wheels", lambda: write_student_readme(out, build_wheel(sys.executable, out / "wheels")))
    timed("website", lambda: build_website(out / "website", work, chapters))
    shutil.rmtree(work)
    for edition, names in EDITIONS.items():
        name = f"transformer-course-{edition}.zip"
        timed(name, lambda names=names, name=name: zip_folders(out / name, out, names))
    snippets = solution_snippets(sorted((out / "instructor").glob("*.ipynb")))
    files = student_files([out / "student", out / "website", out / "transformer-course-student.zip"])
    leaks = find_leaks(snippets, files)
    if leaks:
        raise RuntimeError(f"{len(leaks)} solution snippet(s) in the student material:\n" + "\n".join(leaks[:20]))
    print(f"leak check: {len(snippets)} code lines and sentences that only a solution holds, searched in "
          f"{len(files)} student files: none found")
    return parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "workshop")
    parser.add_argument("--chapters", nargs="+", metavar="NAME", help="e.g. 03_general_attention (default: all)")
    args = parser.parse_args(argv)
    try:
        parts = build(args.out, args.chapters)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"workshop: error: {err}", file=sys.stderr)
        return 2
    print(f"{'part':38s} {'seconds':>8s} {'MB':>8s}")
    for name, seconds, bytes_ in parts:
        print(f"{name:38s} {seconds:8.1f} {bytes_ / 1e6:8.1f}")
    print(f"the workshop kit is in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
