"""Supported and tested versions, as data: what the package accepts, and what its CI runs.

- `PYTHON_FLOOR` and `REQUIREMENTS`: the lowest versions accepted; pyproject.toml declares the same floors.
- `LEGS`: the compatibility matrix. `.ci/run` builds one fresh virtual environment per leg and runs the tests
  there (`python3 tools/run.py matrix`); the "pinned" leg is requirements.txt, the README's test command.
- `markdown_table()`: the README's "Supported versions" table, made from the two above.

tests/test_versions.py checks that pyproject.toml, requirements.txt and the README agree with this file, so a
floor cannot be declared without a leg saying whether it is tested. A workshop's environment check reads it too.
Standard library only: tools/run.py loads this file before anything is installed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PYTHON_FLOOR = "3.10"


@dataclass(frozen=True)
class Requirement:
    name: str            # the distribution's name on PyPI
    floor: str           # the lowest version accepted: pyproject.toml declares `name>=floor`
    extra: str | None = None  # None: the base install (the NumPy half); "torch": the `torch` extra
    untested_floor: str = ""  # why no leg installs the floor itself (empty: a leg does)


REQUIREMENTS = (
    Requirement("numpy", "1.26"),
    Requirement("matplotlib", "3.7"),
    # 7.7.1: Google Colab's preinstalled version (its front end does not run ipywidgets 8); the widgets use
    # only what 7.7 and 8 share.
    Requirement("ipywidgets", "7.7.1"),
    Requirement("tqdm", "4.60"),
    Requirement("pygments", "2.10"),
    Requirement("sacrebleu", "2.3"),
    Requirement("num2words", "0.5.12"),
    # 2.5: scaled_dot_product_attention returns a zero row for a query with no allowed key (its math path's
    # safe softmax, pytorch/pytorch#133882), as the package does and chapter 3 shows; before, NaN. (Mixed-precision
    # training's torch.amp.GradScaler needs 2.3.)
    Requirement("torch", "2.5", "torch",
                untested_floor="declared, not run here: only one CPU build of PyTorch is reachable"),
    # 0.4.3: load_model(..., device=) loads the shipped model onto the CPU whatever device it was saved from.
    Requirement("safetensors", "0.4.3", "torch"),
    # 0.22: Google Colab's preinstalled version is 0.22.2; data.bpe.learn_bpe_fast learns the same merges as the
    # course's BPE with it (tests/test_data/test_data_bpe.py)
    Requirement("tokenizers", "0.22", "torch"),
)


@dataclass(frozen=True)
class Leg:
    name: str
    python: str                    # the interpreter's minor version
    torch: bool                    # whether the `torch` extra is installed
    # exact versions; a requirement not listed gets the newest release pip picks for this Python
    pins: dict[str, str] = field(default_factory=dict)
    runs: str = "pytest tests/ (what needs a missing package skips)"


LEGS = (
    Leg("pinned", "3.11", torch=True, runs="`python3 tools/run.py test` (requirements.txt): everything",
        pins={"numpy": "2.4.6", "matplotlib": "3.11.2", "ipywidgets": "8.1.9", "tqdm": "4.70.1",
              "pygments": "2.21.0", "sacrebleu": "2.6.0", "num2words": "0.5.14", "torch": "2.13.0",
              "safetensors": "0.8.0", "tokenizers": "0.22.2"}),
    Leg("numpy-1.26", "3.11", torch=True, pins={"numpy": "1.26.4", "torch": "2.13.0", "safetensors": "0.4.3",
                                                "tokenizers": "0.22"}),
    Leg("floors", "3.10", torch=False, pins={r.name: r.floor for r in REQUIREMENTS if r.extra is None}),
    Leg("python-3.10", "3.10", torch=False),
    Leg("python-3.12", "3.12", torch=False),
    Leg("python-3.13", "3.13", torch=False),
)


def release(version: str) -> tuple[int, ...]:
    """"1.26" -> (1, 26), "1.26.0" -> (1, 26): trailing zeros do not change a version."""
    parts = [int(part) for part in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def tested_versions(name: str) -> list[str]:
    """The versions of `name` that legs pin, oldest first (legs that take the newest release are not listed)."""
    pinned = {leg.pins[name] for leg in LEGS if name in leg.pins}
    return sorted(pinned, key=release)


def floor_is_tested(requirement: Requirement) -> bool:
    return any(release(v) == release(requirement.floor) for v in tested_versions(requirement.name))


def _tested_cell(requirement: Requirement) -> str:
    cell = ", ".join(tested_versions(requirement.name))
    newest = {leg.python for leg in LEGS if requirement.name not in leg.pins
              and (requirement.extra is None or leg.torch)}
    if newest:
        cell += f"; the newest release for Python {', '.join(sorted(newest, key=release))}"
    if requirement.untested_floor:
        cell += f"; the floor {requirement.floor} is {requirement.untested_floor}"
    return cell


def markdown_table() -> str:
    """The README's tables: each requirement's declared floor and tested versions, then the matrix's legs."""
    pythons = sorted({leg.python for leg in LEGS}, key=release)
    rows = ["| Package | Installed by | Declared | Tested by `.ci/run` |",
            "|---|---|---|---|",
            f"| Python | | >= {PYTHON_FLOOR} | {', '.join(pythons)} |"]
    for requirement in REQUIREMENTS:
        install = "`pip install .`" if requirement.extra is None else f"the `{requirement.extra}` extra"
        rows.append(f"| {requirement.name} | {install} | >= {requirement.floor} | {_tested_cell(requirement)} |")
    rows += ["", "| Leg | Python | PyTorch | Pinned versions | Runs |", "|---|---|---|---|---|"]
    for leg in LEGS:
        pins = ", ".join(f"{name} {version}" for name, version in leg.pins.items()) or "none: the newest releases"
        rows.append(f"| {leg.name} | {leg.python} | {'yes' if leg.torch else 'no'} | {pins} | {leg.runs} |")
    return "\n".join(rows)
