"""Write a benchmark's results as JSON under transformer_course/results/ (they ship with the package, so
the chapters read them in Colab too), with what a reader needs to trust them.

Every results file records the command that produced it, when, on which machine (processor, cores, threads)
and with which versions; chapters print these files (`transformer_course.display.load_results`) instead of
pasting numbers into their text.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "transformer_course" / "results"


def cpu_model() -> str:
    """The processor's name from /proc/cpuinfo (Linux), else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpuinfo_field():
    """A reader of the first value of a field of /proc/cpuinfo, or None where the file is missing (macOS, Windows)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return lambda name: re.search(rf"^{name}\s*:\s*(.*)$", info, re.MULTILINE).group(1).strip()


# the instruction flags a reading of the CPU tables depends on: vector width, FMA, bfloat16 instructions
SPEED_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16")


def cpu_features() -> dict | None:
    """The processor's vendor, family, model and SPEED_FLAGS from /proc/cpuinfo (None elsewhere), recorded with the
    results: a peak or a bfloat16 speed-up is read against them (two machines may both be called "AMD EPYC")."""
    field = _cpuinfo_field()
    if field is None:
        return None
    flags = set(field("flags").split())
    return {"vendor": field("vendor_id"), "family": int(field("cpu family")), "model": int(field("model")),
            "flags": [flag for flag in SPEED_FLAGS if flag in flags]}


def cpu_peak_flops(threads: int) -> dict | None:
    """Peak float32 FLOP/s of `threads` cores, as MFU needs it (Chowdhery et al. 2022): cores x clock x FLOPs
    per cycle, read from /proc/cpuinfo. FLOPs per cycle = float32 lanes of the widest vector unit x 2 (a fused
    multiply-add) x 2 FMA units per core; AMD cores before Zen 5 run 512-bit instructions on 256-bit units.
    None where /proc/cpuinfo is missing (macOS, Windows)."""
    field = _cpuinfo_field()
    if field is None:
        return None
    flags = set(field("flags").split())
    bits = 512 if "avx512f" in flags else 256 if "avx" in flags else 128
    if field("vendor_id") == "AuthenticAMD" and int(field("cpu family")) < 26:
        bits = min(bits, 256)
    per_cycle = bits // 32 * (2 if "fma" in flags or "avx512f" in flags else 1) * 2
    mhz = float(field("cpu MHz"))
    return {"threads": threads, "mhz": mhz, "vector_bits": bits, "flops_per_cycle": per_cycle,
            "peak_flops": threads * mhz * 1e6 * per_cycle,
            "rule": "threads x clock (cpu MHz) x float32 lanes x 2 (FMA) x 2 FMA units per core"}


def machine() -> dict:
    import numpy
    import torch

    return {"cpu": cpu_model(), "cores_visible": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "python": platform.python_version(), "numpy": numpy.__version__, "torch": torch.__version__,
            "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


def summary(values: list[float]) -> dict:
    """Mean, sample standard deviation, minimum and maximum of a list of per-seed results."""
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def write_results(name: str, script: str, argv: list[str] | None, results: dict) -> Path:
    """Save `results` as transformer_course/results/<name>.json with the command, date and machine; returns the path."""
    RESULTS.mkdir(exist_ok=True)
    args = sys.argv[1:] if argv is None else argv
    payload = {"command": shlex.join(["python", f"benchmarks/{script}", *args]),
               "date": datetime.date.today().isoformat(), "machine": machine(), **results}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return path
