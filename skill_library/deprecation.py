"""Deprecated names: each warns ``DeprecationWarning`` for one release, then goes.

The list of deprecated names, with what replaces each, is docs/architecture.md's
"Deprecations" section (issue 24)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

#: this package's folder: a warning points at the first frame outside it
_PACKAGE = str(Path(__file__).resolve().parent)


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (``stacklevel`` 3: the caller of
    the deprecated function or property)."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed_argument(call: str, new: str, value: bool | str | None, old: str,
                     old_value: bool | str | None) -> bool | str:
    """The value of ``call``'s outcome argument ``new`` (a bool, or an ``OutcomeKind``: a
    ``str``), also accepted (with a warning, for one
    release) under its old keyword ``old``; a clear ``TypeError`` when both or neither are
    given."""
    if old_value is not None:
        if value is not None:
            raise TypeError(f"{call}: give {new}= only ({old}= is its old name), not both")
        deprecated(f"{call}({old}=...)", f"{call}({new}=...)", stacklevel=_caller_level())
        return old_value
    if value is None:
        raise TypeError(f"{call}: missing the {new} (a bool, True for success, or an OutcomeKind)")
    return value


def _caller_level() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` made in :func:`deprecated`) of the first
    frame outside this package: the user's line, whatever wrappers (telemetry) sit between."""
    frame, level = sys._getframe(1), 2  # level 2: the caller of deprecated()
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level
