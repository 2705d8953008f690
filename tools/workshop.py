#!/usr/bin/env python3
"""The workshop kit, built into _build/workshop/ (run by `python3 tools/run.py workshop`):

    student/        the chapters as notebooks without solutions (stubs and checks kept), read cleanly in
                    Jupyter and Colab (the Colab conversion of tools/colab.py, with solutions=False)
    instructor/     the same notebooks with every solution, collapsed under *Solution*
    website/        the website without solutions (to serve in the room: python -m http.server -d website)
    slides/         one reveal.js deck per chapter (tools/slides.py), offline
    transformer-course-student.zip      student/ and website/
    transformer-course-instructor.zip   instructor/ and slides/

`--chapters 03_general_attention 06_positional_encoding` builds the kit for those chapters only (the test suite
does, to stay fast): the website is then built from a table of contents with the intro, those chapters and the
references. Sizes and build times are printed at the end.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import yaml

from . import slides
from .book import ROOT, config_without_solutions, load_toc, toc_docnames
from .colab import write_colab_notebooks

EDITIONS = {"student": ("student", "website"), "instructor": ("instructor", "slides")}


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


def zip_folders(target: Path, root: Path, folders: tuple[str, ...]) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in folders:
            for path in sorted((root / folder).rglob("*")):
                if path.is_file():
                    archive.write(path, Path("transformer-course-workshop") / path.relative_to(root))


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
    timed("slides", lambda: slides.build(out / "slides", notebooks))
    timed("website", lambda: build_website(out / "website", work, chapters))
    shutil.rmtree(work)
    for edition, folders in EDITIONS.items():
        name = f"transformer-course-{edition}.zip"
        timed(name, lambda folders=folders, name=name: zip_folders(out / name, out, folders))
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
