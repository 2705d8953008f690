"""`transformer-course doctor`: passes on the test machine, and a missing, old or broken piece gives a cross with
its fix, without a traceback, while the other checks still run."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from transformer_course import doctor  # noqa: E402
from transformer_course.__main__ import main  # noqa: E402
from transformer_course.versions import REQUIREMENTS  # noqa: E402


def test_doctor_passes_here(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for name in ["Python", *(r.name for r in REQUIREMENTS), "threads", "device", "shipped model", "training",
                 "widgets"]:
        assert any(line.startswith("✓ " + name) for line in out.splitlines()), name
    assert "'forty-two' -> 'quarante-deux'" in out
    assert out.rstrip().endswith("Everything the course needs works here.")


@pytest.fixture
def quick(monkeypatch):
    """The slow checks replaced by instant passes: these tests are about the report, not about training."""
    monkeypatch.setattr(doctor, "check_training", lambda: doctor.Check("training", True, "skipped in this test"))
    monkeypatch.setattr(doctor, "check_shipped_model", lambda: doctor.Check("shipped model", True, "skipped"))


def test_a_missing_package_is_a_cross_with_its_fix(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: None if name == "ipywidgets" else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    missing = next(i for i, line in enumerate(lines) if line.startswith("✗ ipywidgets"))
    assert "not installed" in lines[missing]
    assert 'pip install "ipywidgets>=8.0"' in lines[missing + 1]
    assert any(line.startswith("✗ widgets") and "not checked: needs ipywidgets" in line for line in lines)
    assert any(line.startswith("✓ numpy") for line in lines)          # the other checks still ran
    assert "2 check(s) failed" in out and "Traceback" not in out


def test_missing_torch_names_the_extra(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: None if name == "torch" else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert 'pip install "transformer-course[torch]"' in out
    assert "every chapter but 3 and appendix A needs it" in out
    for name in ("threads", "device", "shipped model", "training"):
        assert any(line.startswith(f"✗ {name}") and "needs torch" in line for line in out.splitlines()), name


def test_an_old_version_and_a_broken_check(monkeypatch, capsys, quick):
    real = doctor._installed_version
    monkeypatch.setattr(doctor, "_installed_version", lambda name: "1.20.3" if name == "numpy" else real(name))

    def broken():
        raise RuntimeError("no device\nat all")

    monkeypatch.setattr(doctor, "check_device", broken)
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("✗ numpy") and "1.20.3, older than the supported 1.26" in line for line in lines)
    assert any(line.startswith("✗ device") and line.endswith("RuntimeError: no device at all") for line in lines)
    assert any(line.startswith("✓ widgets") for line in lines)


def test_report_without_unicode_ticks():
    checks = [doctor.Check("a", True, "fine"), doctor.Check("bb", False, "broken", "do this")]
    report = doctor.format_report(checks, encoding="cp1252")
    assert "OK   a   fine" in report and "FAIL bb  broken" in report and "fix: do this" in report
    assert "✓" not in report and "✗" not in report
