"""What a test does when a part it needs is missing from the machine: under ``make test``
(it sets SKILLS_TESTS_STRICT=1, and installs every part) or CI (``CI`` set) it fails, since
a run that silently skipped the PostgreSQL, Chroma-server or browser tests proves nothing;
a bare ``pytest`` on a developer's machine without them skips, with the reason."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

#: set by the Makefile's test target
STRICT_ENV = "SKILLS_TESTS_STRICT"


def strict() -> bool:
    """True when a missing part must fail the run."""
    return bool(os.environ.get("CI") or os.environ.get(STRICT_ENV))


def skip_or_fail(reason: str) -> NoReturn:
    """Fail under ``make test`` or CI, else skip; either way with ``reason``."""
    if strict():
        pytest.fail(f"this run needs it (make test installs it): {reason}")
    pytest.skip(reason)
