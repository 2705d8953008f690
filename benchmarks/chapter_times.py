"""How long each page of the book takes to execute top to bottom in a fresh kernel (nothing is written back).

    python benchmarks/chapter_times.py                       # every notebook in book/, one after another
    python benchmarks/chapter_times.py book/09_training.ipynb

Each notebook runs once in a fresh kernel, in the book/ folder, as tools/execute_notebooks.py runs it; the wall
time and the machine's load average around the run are recorded in transformer_course/results/chapter_times.json (the
workshop guide and appendix B refer to it). On a machine shared with other jobs the load average says how much
the times are inflated.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent


def time_notebook(path: Path, timeout: int = 900) -> dict:
    """Execute one notebook in a fresh kernel; its wall time and the 1-minute load average before and after."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    client.execute()
    return {"seconds": time.perf_counter() - start, "load_before": load_before, "load_after": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="notebooks (default: every notebook in book/)")
    args = parser.parse_args(argv)
    if "MPLBACKEND" in os.environ:
        parser.error("MPLBACKEND is set: it reaches the kernels and changes what they do; unset it")
    os.environ["PYTHONHASHSEED"] = "0"
    paths = [Path(p).resolve() for p in args.paths] or sorted((ROOT / "book").glob("*.ipynb"))
    times = {}
    for path in paths:
        times[path.name] = time_notebook(path)
        t = times[path.name]
        print(f"{path.name:<36s} {t['seconds']:7.1f} s   load average {t['load_before']:.1f} -> {t['load_after']:.1f}",
              flush=True)
    print("wrote", write_results("chapter_times", "chapter_times.py", argv, {"notebooks": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
