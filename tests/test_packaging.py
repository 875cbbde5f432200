"""Lean installs: optional features behind extras that their errors name (issue 16)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from skill_library.errors import MissingExtraError, require_extra

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())


def test_core_dependencies_are_lean_and_extras_exist():
    core = " ".join(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "matplotlib" not in core and "smolagents" not in core
    assert any(d.startswith("matplotlib") for d in extras["plot"])
    assert any(d.startswith("smolagents") for d in extras["bench"])
    for name in ("postgres", "chroma-server", "mcp", "console", "dev"):
        assert extras[name], name
    assert PYPROJECT["project"]["scripts"]["skills"] == "skill_library.cli:main"


def test_a_missing_extra_is_an_error_naming_it():
    with pytest.raises(MissingExtraError) as caught:
        require_extra("no_such_module_for_this_test", "postgres", "a PostgreSQL record store")
    message = str(caught.value)
    assert "'postgres' extra" in message and "pip install 'skill-library[postgres]'" in message
    assert isinstance(caught.value, ImportError)
    assert require_extra("json", "plot", "anything") is sys.modules["json"]


def test_benchmark_plots_without_matplotlib_name_the_plot_extra(monkeypatch, tmp_path):
    from benchmarks import report

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(MissingExtraError, match=r"plotting benchmark results needs the optional 'plot' extra"):
        report.plot({"config": {}, "records": []}, tmp_path)


def test_the_chroma_internals_the_index_relies_on_exist():
    """vector_index._forget_chroma_system uses these; the chromadb pin keeps them."""
    from chromadb.api.shared_system_client import SharedSystemClient

    assert isinstance(SharedSystemClient._identifier_to_system, dict)
    assert isinstance(SharedSystemClient._identifier_to_refcount, dict)
