"""Fixtures of the red-team suite (one Sandbox per test module, for speed)."""

from __future__ import annotations

import pytest
from redteam import EXTENDED_MODULES, FAST, Canary

from sandbox import Sandbox


@pytest.fixture(scope="module")
def canary(tmp_path_factory) -> Canary:
    return Canary(str(tmp_path_factory.mktemp("canary")))


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(limits=FAST, workers=2) as box:
        yield box


@pytest.fixture(scope="module")
def extended_sandbox():
    with Sandbox(limits=FAST, workers=1, allowed_modules=EXTENDED_MODULES) as box:
        yield box
