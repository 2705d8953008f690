"""Declared = tested: pyproject.toml, requirements.txt and the README say what transformer_course/versions.py
says (the versions the package accepts, and the legs of the compatibility matrix that .ci/run runs)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from transformer_course import versions

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")


def test_the_readme_shows_the_packages_table():
    readme = (ROOT / "README.md").read_text()
    assert versions.markdown_table() in readme, ("README.md: the supported-versions table differs from "
                                                 "transformer_course.versions.markdown_table(); paste its output")


def test_pyproject_declares_the_tables_floors():
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={versions.PYTHON_FLOOR}"
    declared = {None: project["dependencies"], **project["optional-dependencies"]}
    for requirement in versions.REQUIREMENTS:
        assert f"{requirement.name}>={requirement.floor}" in declared[requirement.extra], requirement
    named = {_name(spec) for extra in (None, "torch") for spec in declared[extra]}
    assert named == {requirement.name for requirement in versions.REQUIREMENTS}, "a requirement is not in the table"


def test_requirements_txt_pins_what_the_pinned_leg_says():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    pinned_leg = next(leg for leg in versions.LEGS if leg.name == "pinned")
    assert {name: pins.get(name) for name in pinned_leg.pins} == pinned_leg.pins
    assert set(pinned_leg.pins) == {requirement.name for requirement in versions.REQUIREMENTS}


def test_every_floor_is_tested_or_says_why_not():
    for requirement in versions.REQUIREMENTS:
        assert versions.floor_is_tested(requirement) != bool(requirement.untested_floor), requirement
    python_floor = versions.release(versions.PYTHON_FLOOR)
    assert min(versions.release(leg.python) for leg in versions.LEGS) == python_floor


def test_legs_are_well_formed():
    known = {requirement.name for requirement in versions.REQUIREMENTS}
    names = [leg.name for leg in versions.LEGS]
    assert len(set(names)) == len(names) and "pinned" in names
    for leg in versions.LEGS:
        assert set(leg.pins) <= known, leg
        assert not leg.torch or "torch" in leg.pins, f"{leg.name}: an unpinned torch could pull a CUDA build"
        assert leg.torch or not {"torch", "safetensors"} & set(leg.pins), leg


@pytest.mark.parametrize("version, expected", [("1.26", (1, 26)), ("1.26.0", (1, 26)), ("2.10.1", (2, 10, 1)),
                                               ("3", (3,)), ("0.5.12", (0, 5, 12))])
def test_release_ignores_trailing_zeros(version, expected):
    assert versions.release(version) == expected
