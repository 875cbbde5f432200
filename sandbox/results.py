"""What a run's child reports, checked by the host and turned into a ``RunResult``.

Limits are the host's own observations (bytes received, /proc of the child, wait4
statuses from the zygote); nothing the child says about itself is taken on trust.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

from . import protocol
from .models import CallRecord, Limits, RunResult, SandboxError
from .pool import _Protocol

if TYPE_CHECKING:
    from .pool import _Pool, _Worker

_MB = 1024 * 1024
_MAX_TEXT = 2000  # characters of a name or message from a child kept in a report
#: A failed run whose child's own peak address space (VmPeak beyond what the child
#: inherited from the zygote) reached this share of what ``memory_mb`` left it is reported
#: as ``limit="memory"`` (the parent's own observation, from /proc; an allocation refused
#: outright never occupied memory and is the skill's MemoryError).
MEMORY_LIMIT_SHARE = 0.9
#: Error types only the host reports; a worker that names one is naming a skill class.
HOST_ONLY_TYPES = frozenset({"LimitExceeded", "WorkerCrashed", "SandboxClosed",
                             "ProtocolError", "SandboxUnavailable"})


class _LimitHit(Exception):
    """The host saw a run pass a limit (``limit`` names it, as in ``RunResult.limit``)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message


def _short(text: str) -> str:
    """``text`` cut to :data:`_MAX_TEXT` characters."""
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


def limit_result(calls: list[CallRecord], limit: str, message: str) -> RunResult:
    """A run stopped by ``limit`` (the host's observation)."""
    return RunResult(ok=False, calls=calls, limit=limit,
                     error=SandboxError("LimitExceeded", message))


def diagnose(
    pool: _Pool, worker: _Worker, calls: list[CallRecord], limits: Limits, status: int
) -> RunResult:
    """The run's child ended without a result; ``status`` is from the zygote's wait4."""
    if worker.killed_by_us or pool.closed:
        return RunResult(ok=False, calls=calls,
                         error=SandboxError("SandboxClosed", "the sandbox was closed"))
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:  # RLIMIT_CPU, set by the sandbox: the kernel's word
            return limit_result(calls, "cpu",
                                f"CPU time limit of {limits.cpu_seconds:g} s exceeded")
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        hint = {
            signal.SIGSEGV: " (stack overflow in C code?)",
            signal.SIGKILL: " (killed from outside the sandbox)",
            signal.SIGABRT: " (interpreter abort, often out of memory)",
        }.get(sig, "")  # type: ignore[call-overload]
        message = f"the worker process was killed by {name}{hint}"
    else:
        message = f"the worker process exited with status {os.WEXITSTATUS(status)}"
    return RunResult(ok=False, calls=calls, error=SandboxError("WorkerCrashed", message))


def memory_exhausted(worker: _Worker, child: int, limits: Limits) -> bool:
    """Whether the child used up what ``memory_mb`` left it: its peak address space beyond
    what it inherited from the zygote reached :data:`MEMORY_LIMIT_SHARE` of
    ``memory_mb`` minus that inheritance (the host's reading of /proc)."""
    peak = worker.peak_memory_bytes(child)
    if peak is None:
        return False
    cap = limits.memory_mb * _MB
    base = min(max(worker.base_bytes, 0), peak)
    if base >= cap:
        return True  # the interpreter alone is over the cap: nothing was left for the run
    return peak - base >= MEMORY_LIMIT_SHARE * (cap - base)


def finish(
    pool: _Pool,
    worker: _Worker,
    child: int,
    msg: dict[str, Any],
    calls: list[CallRecord],
    limits: Limits,
) -> tuple[RunResult, bool]:
    """The result a child's ``done`` frame stands for, checked against ``limits``; and
    whether the worker must be retired (never, here). ``RunResult.compile_ms`` stays 0:
    a per-run compile time told a caller whether the source had been compiled before."""
    ok = msg.get("ok")
    stdout = msg.get("stdout", "")
    if not isinstance(ok, bool) or not isinstance(stdout, str):
        raise _Protocol("malformed result from worker")
    compiled, hits = msg.get("compiled"), msg.get("cache_hits")
    compile_ms = msg.get("compile_ms")
    compile_ms = float(compile_ms) if isinstance(compile_ms, (int, float)) and not isinstance(
        compile_ms, bool) and 0 <= compile_ms < 1e9 else 0.0
    if isinstance(compiled, int) and isinstance(hits, int):
        pool.count(compiled=compiled, cache_hits=hits)
    pool.count_float(compile_ms=compile_ms)  # the Sandbox's totals only (stats())
    # Limits are the host's own observations: bytes it received, /proc of the child.
    limit: str | None = None
    message = ""
    if protocol.utf8_len(stdout) > limits.max_output_bytes:
        limit, message = "output", f"output limit of {limits.max_output_bytes} bytes exceeded"
        stdout = protocol.utf8_cut(stdout, limits.max_output_bytes)
    head = msg.get("value_head")
    if limit is None and isinstance(head, str):
        if protocol.utf8_len(head) <= limits.max_result_bytes:
            raise _Protocol("a result head that is not over the cap")
        limit, message = "result_size", (
            f"result is larger than {limits.max_result_bytes} bytes of JSON")
    if limit is None and ok and "value" in msg and (
        worker.last_frame_bytes > limits.max_result_bytes
        and protocol.utf8_len(protocol.dumps(msg["value"])) > limits.max_result_bytes
    ):
        limit, message = "result_size", (
            f"result is larger than {limits.max_result_bytes} bytes of JSON")
    if limit is None and not ok and memory_exhausted(worker, child, limits):
        limit, message = "memory", f"memory limit of {limits.memory_mb} MB exceeded"
    if limit is not None:
        found = msg.get("error")
        err: dict[str, Any] = found if isinstance(found, dict) else {}
        detail = err.get("type") if isinstance(err.get("type"), str) else None
        if limit == "memory" and detail and detail not in HOST_ONLY_TYPES:
            message += f" ({_short(detail)}: {_short(str(err.get('message') or ''))})"
        return RunResult(ok=False, calls=calls, stdout=stdout, limit=limit,
                         error=SandboxError("LimitExceeded", message)), False
    if ok:
        if "value" not in msg:
            raise _Protocol("result without a value")
        return RunResult(ok=True, value=msg["value"], calls=calls, stdout=stdout), False
    failure = msg.get("error")
    if not isinstance(failure, dict):
        raise _Protocol("failure without an error")
    err = failure
    kind, text = err.get("type"), err.get("message")
    line, index = err.get("line"), err.get("source_index")
    message = text if isinstance(text, str) else ""
    kind = _short(kind) if isinstance(kind, str) else "Error"
    if kind in HOST_ONLY_TYPES:  # a skill class of that name: not the host's report
        kind = f"skill:{kind}"
    error = SandboxError(
        type=kind,
        message=_short(message) if isinstance(message, str) else "",
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        source_index=index if isinstance(index, int) and not isinstance(index, bool) else None,
    )
    return RunResult(ok=False, error=error, calls=calls, stdout=stdout), False
