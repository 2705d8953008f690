"""The NumPy half of the package imports without PyTorch; every module that needs PyTorch says which extra
installs it. PyTorch is hidden from a fresh interpreter (a None entry in sys.modules), so this runs with or
without it installed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import transformer_course

PACKAGE = Path(transformer_course.__file__).resolve().parent
HINT = 'pip install "transformer-course[torch]"'
# What chapters 1-6, appendix A and the exercise checks use: all of it must import without PyTorch.
NUMPY_HALF = ["transformer_course", "transformer_course.config", "transformer_course.utils",
              "transformer_course.display", "transformer_course.numpy", "transformer_course.data",
              "transformer_course.data.batching", "transformer_course.data.tasks", "transformer_course.data.vocab",
              "transformer_course.training", "transformer_course.training.numpy_trainer", "transformer_course.viz",
              "transformer_course.viz.widgets", "transformer_course.exercises", "transformer_course.versions"]
# The PyTorch half: the only places allowed to need it.
TORCH_HALF = ("transformer_course.torch", "transformer_course.training.", "transformer_course.data.loader")

_IMPORT_ALL = """
import importlib, json, sys
sys.modules["torch"] = None          # as if PyTorch were not installed
sys.modules["safetensors"] = None
import transformer_course
loaded_at_top = sorted(name for name in ("torch", "matplotlib") if sys.modules.get(name) is not None)
results = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        results[name] = "ok"
    except ImportError as err:
        results[name] = f"{type(err).__name__}: {err}"
print(json.dumps({"loaded_at_top": loaded_at_top, "results": results}))
"""


def _module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":       # runs the command line
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _import_without_torch(names: list[str], tmp_path: Path) -> dict:
    # from an empty folder: the checkout's own transformer_course/ must not shadow the installed package
    result = subprocess.run([sys.executable, "-c", _IMPORT_ALL, *names], capture_output=True, text=True,
                            cwd=tmp_path, check=True)
    return json.loads(result.stdout)


def test_the_numpy_half_imports_without_torch_and_the_rest_names_the_extra(tmp_path):
    names = _module_names()
    assert set(NUMPY_HALF) <= set(names)
    report = _import_without_torch(names, tmp_path)
    assert report["loaded_at_top"] == []          # `import transformer_course` loads neither torch nor matplotlib
    results = report["results"]
    assert all(results[name] == "ok" for name in NUMPY_HALF), {name: results[name] for name in NUMPY_HALF}
    failed = {name: message for name, message in results.items() if message != "ok"}
    assert failed, "hiding PyTorch changed nothing: the check would not see a missing guard"
    for name, message in failed.items():
        assert name.startswith(TORCH_HALF), f"{name} should import without PyTorch: {message}"
        assert message.startswith("ModuleNotFoundError") and HINT in message, f"{name}: {message}"
