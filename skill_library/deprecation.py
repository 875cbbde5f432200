"""Deprecated names: each warns ``DeprecationWarning`` for one release, then goes.

The list of deprecated names, with what replaces each, is docs/architecture.md's
"Deprecations" section (issue 24)."""

from __future__ import annotations

import warnings


def deprecated(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (``stacklevel`` 3: the caller of
    the deprecated function or property)."""
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  DeprecationWarning, stacklevel=stacklevel)
