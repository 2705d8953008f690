"""The book's two configuration files, `_config.yml` and `_toc.yml`, read in one place with one YAML reader.

    python -m tools.book --without-solutions FILE   # _config.yml with solutions switched off (run.py uses it)
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def cell_source(cell: dict) -> str:
    """A notebook cell's source as one string (nbformat stores it as a string or a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def load_config(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def load_toc(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))


def repository_url(root: Path = ROOT) -> str:
    """`repository.url`: the one place the repository's address is written."""
    url = (load_config(root).get("repository") or {}).get("url")
    if not url:
        raise ValueError("_config.yml: no `repository: url:` entry found")
    return url


def site_baseurl(config: dict) -> str:
    """`html.baseurl` of _config.yml, the website's public address (the one place it is written)."""
    url = (config.get("html") or {}).get("baseurl")
    if not url:
        raise ValueError("_config.yml: no `html: baseurl:` (the website's address) to link to")
    return url if url.endswith("/") else url + "/"


def toc_docnames(root: Path = ROOT) -> list[str]:
    """Every page of _toc.yml in order ("book/intro", "book/notation", ...)."""
    toc = load_toc(root)
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections"))
    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return [str(Path(name).with_suffix("")) for name in names]


def book_pages(root: Path = ROOT) -> list[Path]:
    """Every page of book/ with prose: the chapter notebooks and the markdown pages, sorted."""
    return sorted(p for p in (root / "book").glob("*") if p.suffix in (".ipynb", ".md"))


def exercise_prefix(docname: str, title: str) -> str:
    """What a page's exercises are numbered under: "6" for book/06_positional_encoding ("Exercise 6.2"), the
    appendix letter for a page titled "Appendix D. ..." ("Exercise D.2"). The website, the notebooks, the slides
    and the workshop guide all use it, so an exercise has one name everywhere."""
    appendix = re.match(r"Appendix ([A-Z])\b", title.strip())
    if appendix:
        return appendix.group(1)
    stem = Path(docname).name.split("_")[0]
    if not stem.isdigit():
        raise ValueError(f"{docname}: exercises need a numbered file name (06_...) or a title 'Appendix X. ...'")
    return str(int(stem))


def config_without_solutions(root: Path = ROOT) -> str:
    """_config.yml as YAML text with solutions switched off (`course_hide_solutions: true`), usable from any
    folder: Jupyter Book resolves local extensions' paths against the config's own folder, so they are made
    absolute."""
    config = load_config(root)
    sphinx = config.get("sphinx") or {}
    if (sphinx.get("config") or {}).get("course_hide_solutions") is not False:
        raise ValueError("_config.yml: expected `sphinx: config: course_hide_solutions: false` to switch")
    sphinx["config"]["course_hide_solutions"] = True
    sphinx["local_extensions"] = {name: str((root / path).resolve())
                                  for name, path in sphinx.get("local_extensions", {}).items()}
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def write_or_check(out: Path, text: str, command: str, check: bool) -> int:
    """A generated file's two modes: write `text` to `out`, or (check) exit status 1 when `out` is not `text`,
    saying which command writes it."""
    if check:
        stale = not out.exists() or out.read_text(encoding="utf-8") != text
        print(f"{out.relative_to(ROOT)}: {f'stale: run {command}' if stale else 'up to date'}")
        return int(stale)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--without-solutions", type=Path, required=True, metavar="FILE",
                        help="write _config.yml with course_hide_solutions: true to FILE")
    args = parser.parse_args(argv)
    args.without_solutions.write_text(config_without_solutions(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
