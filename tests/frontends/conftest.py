"""Fixtures for the frontend tests: the test plugins plus the showcase plugin, registered
through real entry-point metadata."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

FRONTEND_SUPPORT = Path(__file__).parent / "support"
sys.path.insert(0, str(FRONTEND_SUPPORT))

SHOWCASE_ENTRY_POINTS = {"showcase": "lqf_showcase.plugin:ShowcasePlugin"}


@pytest.fixture
def frontend_plugins(test_plugins, monkeypatch) -> Path:
    """``test_plugins`` (testplug + two broken ones) and the showcase plugin package."""
    from install_plugins import write_distribution

    write_distribution(test_plugins, name="lqf-showcase", entry_points=SHOWCASE_ENTRY_POINTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FRONTEND_SUPPORT), os.environ["PYTHONPATH"]]))
    importlib.invalidate_caches()
    return test_plugins


@pytest.fixture
def bench(frontend_plugins):
    from localqwen.app import Workbench

    return Workbench.create()
