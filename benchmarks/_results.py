"""Write a benchmark's results as JSON under benchmarks/results/, with what a reader needs to trust them.

Every results file records the command that produced it, when, on which machine (processor, cores, threads)
and with which versions; chapters print these files (`transformer_course.display.load_results`) instead of
pasting numbers into their text.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The processor's name from /proc/cpuinfo (Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    import numpy
    import torch

    return {"cpu": cpu_model(), "cores_visible": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(), "numpy": numpy.__version__, "torch": torch.__version__,
            "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


def summary(values: list[float]) -> dict:
    """Mean, sample standard deviation, minimum and maximum of a list of per-seed results."""
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def write_results(name: str, script: str, argv: list[str] | None, results: dict) -> Path:
    """Save `results` as benchmarks/results/<name>.json with the command, date and machine; returns the path."""
    RESULTS.mkdir(exist_ok=True)
    args = sys.argv[1:] if argv is None else argv
    payload = {"command": shlex.join(["python", f"benchmarks/{script}", *args]),
               "date": datetime.date.today().isoformat(), "machine": machine(), **results}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path
