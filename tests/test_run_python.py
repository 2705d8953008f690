"""`tools/run.py` makes .venv with a Python that the pinned requirements install on (3.11 to 3.13), whatever
Python runs it: on 3.10 it finds a newer one, or stops with one message before installing anything."""
from __future__ import annotations

import pytest

from tools import run


def test_a_supported_python_makes_the_venv_itself(monkeypatch):
    monkeypatch.setattr(run.sys, "version_info", (3, 12, 1, "final", 0))
    monkeypatch.setattr(run, "find_python", lambda minor: pytest.fail("no other interpreter needed"))
    assert run.venv_python() == run.sys.executable


def test_python_3_10_uses_the_newest_supported_python_found(monkeypatch, capsys):
    monkeypatch.setattr(run.sys, "version_info", (3, 10, 13, "final", 0))
    found = {"3.12": "/opt/python3.12", "3.11": "/opt/python3.11"}
    monkeypatch.setattr(run, "find_python", found.get)
    assert run.venv_python() == "/opt/python3.12"
    assert "needs 3.11 to 3.13: .venv uses /opt/python3.12" in capsys.readouterr().out


def test_python_3_10_without_a_newer_one_stops_with_one_message(monkeypatch):
    monkeypatch.setattr(run.sys, "version_info", (3, 10, 13, "final", 0))
    monkeypatch.setattr(run, "find_python", lambda minor: None)
    with pytest.raises(SystemExit, match=r"needs Python 3\.11 to 3\.13, and none was found \(this is 3\.10\)"):
        run.venv_python()
