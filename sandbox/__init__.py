"""A sandbox for untrusted skill code: RestrictedPython in hardened worker processes.

Standalone (never imports ``skill_library``). See ``sandbox/README.md`` for what it does
and does not protect against.

    from sandbox import Sandbox, Limits
    with Sandbox(limits=Limits(cpu_seconds=5, wall_seconds=10), workers=2) as sb:
        r = sb.run(code, entry="fn", args={...}, tools={...})
"""

from typing import TYPE_CHECKING, Any

from .models import CallRecord, Limits, PolicyViolation, RunResult, SandboxError, ToolError

if TYPE_CHECKING:
    from .host import Sandbox
    from .policy import DEFAULT_MODULES, VETTED_MODULES, check_source, check_sources

__all__ = [
    "Sandbox",
    "Limits",
    "RunResult",
    "CallRecord",
    "SandboxError",
    "PolicyViolation",
    "ToolError",
    "check_source",
    "check_sources",
    "DEFAULT_MODULES",
    "VETTED_MODULES",
]

_LAZY = {
    "Sandbox": "host",
    "check_source": "policy",
    "check_sources": "policy",
    "DEFAULT_MODULES": "policy",
    "VETTED_MODULES": "policy",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that the worker process (``python -m sandbox.worker``) does not import the
    # host side (subprocess, threading, inspect) it never uses.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
