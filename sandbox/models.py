"""Plain data types of the sandbox API (no behaviour, safe to import anywhere)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Limits", "CallRecord", "SandboxError", "RunResult", "PolicyViolation", "ToolError"]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run.

    ``cpu_seconds``: CPU time of the run's child (read by the parent from /proc on the poll
    and on every tool round trip, and, as a backstop, ``RLIMIT_CPU``). ``wall_seconds``:
    wall-clock time of the whole run, including tool calls executed in the host.
    ``memory_mb``: the child's whole address space (``RLIMIT_AS``), interpreter included
    (about 26 MB of it). ``max_tool_calls``: tool calls per run. ``max_output_bytes``:
    captured ``print`` output, in UTF-8 bytes. ``max_result_bytes``: UTF-8 bytes of the
    JSON encoding of the returned value (and of one tool call's arguments; all of a run's
    tool-call arguments together get four times this).
    """

    cpu_seconds: float = 5.0
    wall_seconds: float = 10.0
    memory_mb: int = 256
    max_tool_calls: int = 200
    max_output_bytes: int = 64 * 1024
    max_result_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"Limits.{name} must be a positive number, got {value!r}")
        for name in ("memory_mb", "max_output_bytes", "max_result_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
        if (
            isinstance(self.max_tool_calls, bool)
            or not isinstance(self.max_tool_calls, int)
            or self.max_tool_calls < 0
        ):
            raise ValueError(
                f"Limits.max_tool_calls must be an int >= 0, got {self.max_tool_calls!r}"
            )
        if self.memory_mb < 64:
            raise ValueError("Limits.memory_mb must be at least 64 (the interpreter needs ~26 MB)")


@dataclass
class CallRecord:
    """One tool call made by skill code: arguments always as a dict, result plain JSON."""

    name: str
    arguments: dict[str, Any]
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0


@dataclass
class SandboxError:
    """Why a run failed. ``line`` is the line in the skill source (``source_index`` tells
    which of the sources passed to ``run`` when there were several)."""

    type: str
    message: str
    line: int | None = None
    source_index: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.type}: {self.message}{where}"


@dataclass
class RunResult:
    """The outcome of ``Sandbox.run``: never raised, always returned."""

    ok: bool
    value: Any = None
    error: SandboxError | None = None
    calls: list[CallRecord] = field(default_factory=list)
    stdout: str = ""
    duration_ms: float = 0.0
    limit: str | None = None
    #: Always 0.0, kept for compatibility: a per-run compile time told one caller whether
    #: another had run the same source (``Sandbox.stats()`` has the Sandbox's total).
    compile_ms: float = 0.0


class PolicyViolation(Exception):
    """The code does not compile under the sandbox policy (or is not valid Python)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message, line)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


class ToolError(Exception):
    """Raised inside skill code when a tool call fails (host error, bad arguments, unknown
    tool). Available to skill code as the builtin name ``ToolError``."""
