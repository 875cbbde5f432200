"""The host side: the ``Sandbox`` facade and the run protocol of one run.

The worker pool is ``pool.py``, result checking ``results.py``, tool calls
``dispatch.py``. The run's wall-clock deadline and CPU budget are enforced here by
killing the worker, whatever it is doing.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from . import protocol
from .codecache import valid_entry
from .dispatch import dispatch
from .models import CallRecord, Limits, PolicyViolation, RunResult, SandboxError
from .policy import (
    DEFAULT_MODULES,
    MAX_SOURCE_CHARS,
    precheck,
    source_digest,
    source_size_problem,
    validate_modules,
)
from .policy import (
    _violation as _policy_violation,
)
from .pool import _TICK, _ChildExited, _Deadline, _Died, _Gone, _Pool, _Protocol, _Worker
from .pool import _Child as _Child  # re-exported: the process tests import it from here
from .results import _LimitHit, _short, diagnose, finish, limit_result
from .schema import arguments_schema

__all__ = ["Sandbox"]

#: The tool-call frames of one run total at most this many times ``max_result_bytes``.
TOOL_ARGUMENT_BUDGET = 4
#: A run or check whose worker cannot hand over a child (it died, or was stale) is tried
#: on this many workers before the sandbox is reported unavailable.
START_ATTEMPTS = 2
#: A child's reply frame (its result and output, JSON-encoded, with the call records) is
#: refused past this many times the result and output limits plus this slack.
REPLY_FRAME_FACTOR = 4
REPLY_FRAME_SLACK_BYTES = 1 << 20
#: The sources of one run total at most this many characters (each at most
#: ``policy.MAX_SOURCE_CHARS``); a run over it is refused before any child sees it.
RUN_SOURCE_CHARS = 4 * MAX_SOURCE_CHARS
#: Sandbox.check_many compiles at most this many sources in one child ...
CHECK_MANY_SOURCES = 256
#: ... of at most this many characters together (what one run may compile)
CHECK_MANY_BYTES = RUN_SOURCE_CHARS


# --------------------------------------------------------------------------------------
# The public class
# --------------------------------------------------------------------------------------
class Sandbox:
    """Runs untrusted skill code in a pool of hardened worker processes.

    ``Sandbox(limits=None, workers=2, *, allowed_modules=None, max_runs_per_worker=100,
    start_timeout=30.0, code_cache=False)``. Thread-safe: concurrent ``run`` calls use
    different workers (and wait for one when all are busy). Use as a context manager or
    call ``close()``; a forgotten Sandbox is cleaned up when collected and at interpreter
    exit. Two Sandboxes share no process, queue or cache.

    ``code_cache=True`` keeps the code each run compiled (in this process, capped at
    ``codecache.CODE_CACHE_BYTES``) for this Sandbox's later runs of the same source.
    Runs that share the cache can time each other's sources (a cached one is not
    compiled again), so turn it on only for a Sandbox that serves one trust domain (one
    tenant); off, every run compiles its own sources in its own child.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        workers: int = 2,
        *,
        allowed_modules: Iterable[str] | None = None,
        max_runs_per_worker: int = 100,
        start_timeout: float = 30.0,
        code_cache: bool = False,
    ) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError("limits must be a sandbox.Limits")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError("workers must be an int >= 1")
        if max_runs_per_worker < 1:
            raise ValueError("max_runs_per_worker must be >= 1")
        self.limits = limits or Limits()
        self.allowed_modules = validate_modules(
            DEFAULT_MODULES if allowed_modules is None else allowed_modules
        )
        self.start_timeout = float(start_timeout)
        debug = os.environ.get("SANDBOX_DEBUG") == "1"
        self._pool = _Pool(workers, self.allowed_modules, max_runs_per_worker, debug,
                           code_cache=bool(code_cache))
        self._finalizer = weakref.finalize(self, _Pool.shutdown, self._pool)
        self._pool.fill()

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill and reap every worker (idempotent)."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._pool.closed

    @property
    def workers_started(self) -> int:
        """How many worker processes this Sandbox has started (recycling included)."""
        return self._pool.spawned

    def stats(self) -> dict[str, Any]:
        """Counters: runs, sources compiled, code-cache hits, limits hit, workers started
        (zygotes), and ``compile_ms``, the time this Sandbox's runs spent compiling."""
        with self._pool.stats_lock:
            out: dict[str, Any] = dict(self._pool.stats)
            out.update(self._pool.fstats)
        out["workers_started"] = self._pool.spawned
        return out

    def check(self, code: str) -> None:
        """Compile ``code`` under the policy in a sandboxed child (with this Sandbox's
        limits); raise ``PolicyViolation(message, line)`` if it does not compile."""
        refused = precheck(code)
        if refused is not None:
            raise refused
        result = self._compile_in_child([code])
        if result.ok:
            return
        err = result.error
        if err is not None and err.type in ("PolicyViolation", "SyntaxError"):
            raise _policy_violation(err.type, err.message, err.line)
        what = f"{err.type}: {err.message}" if err is not None else "unknown failure"
        raise _policy_violation("PolicyViolation", f"source could not be checked ({what})", None)

    def check_many(self, codes: Sequence[str]) -> list[PolicyViolation | None]:
        """:meth:`check` for each of ``codes``: the violation of each, or None where it
        compiles. One child compiles a run of up to :data:`CHECK_MANY_SOURCES` sources
        (:data:`CHECK_MANY_BYTES` together) and stops at the first that fails; the rest go
        to the next child. A run that fails otherwise (a limit) is checked source by
        source, so each source gets the answer :meth:`check` gives it."""
        out: list[PolicyViolation | None] = [None] * len(codes)
        pending: list[int] = []
        for i, code in enumerate(codes):
            out[i] = precheck(code)
            if out[i] is None:
                pending.append(i)
        at = 0
        while at < len(pending):
            chunk: list[int] = []
            size = 0
            for i in pending[at : at + CHECK_MANY_SOURCES]:
                length = len(codes[i])
                if chunk and size + length > CHECK_MANY_BYTES:
                    break
                chunk.append(i)
                size += length
            result = self._compile_in_child([codes[i] for i in chunk])
            err = result.error
            if result.ok:
                at += len(chunk)
            elif (err is not None and err.type in ("PolicyViolation", "SyntaxError")
                  and err.source_index is not None and 0 <= err.source_index < len(chunk)):
                out[chunk[err.source_index]] = _policy_violation(err.type, err.message, err.line)
                at += err.source_index + 1
            else:
                for i in chunk:
                    try:
                        self.check(codes[i])
                    except PolicyViolation as exc:
                        out[i] = exc
                at += len(chunk)
        return out

    def _compile_in_child(self, sources: list[str]) -> RunResult:
        """Compile ``sources`` under the policy in one fresh child; its result."""
        request = protocol.encode({"op": "check", "sources": sources, "limits": asdict(self.limits)})

        def unavailable(worker: _Worker, exc: Exception) -> RunResult:
            raise RuntimeError(f"could not start a sandbox worker: {self._why(worker, exc)}") from None

        return self._in_child(request, self.limits, {}, {}, None, unavailable)

    def _why(self, worker: _Worker, exc: Exception) -> str:
        """Why ``worker`` could not hand over a child, for a one-line message."""
        return str(exc) or (f"no child process within {self.start_timeout:g} s"
                            f" (last child exits: {sorted(worker.exits.items())[-3:]})")

    def hardening(self) -> dict[str, Any]:
        """What process hardening a worker reported it applied (starts one if needed);
        ``RuntimeError`` when no worker starts."""
        worker = self._pool.acquire()
        retire = False
        try:
            worker.ensure_ready(self.start_timeout)
            return dict(worker.hardening or {})
        except (_Died, _Protocol, _Deadline) as exc:
            retire = True
            raise RuntimeError(f"could not start a sandbox worker: {self._why(worker, exc)}") from None
        finally:
            self._pool.release(worker, retire=retire)

    # -- running ---------------------------------------------------------------------------
    def run(
        self,
        code: str | list[str],
        entry: str,
        args: Mapping[str, Any] | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        limits: Limits | None = None,
    ) -> RunResult:
        """Run ``entry(**args)`` from ``code`` (one source, or the skill plus the skills it
        depends on, all in one namespace). Skill failures come back as ``ok=False``."""
        started = time.perf_counter()
        sources = [code] if isinstance(code, str) else list(code)
        if not sources or not all(isinstance(s, str) for s in sources):
            raise TypeError("code must be a str or a non-empty list of str")
        if not isinstance(entry, str) or not entry:
            raise TypeError("entry must be a non-empty str")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError("limits must be a sandbox.Limits")
        limits = limits or self.limits
        args = dict(args or {})
        if not all(isinstance(k, str) for k in args):
            raise TypeError("args keys must be str")
        tools = dict(tools or {})
        for name, fn in tools.items():
            if not isinstance(name, str) or not callable(fn):
                raise TypeError(f"tools must map names to callables (bad entry {name!r})")
        schemas = {}
        for name, schema in (tool_schemas or {}).items():
            parsed = arguments_schema(schema)
            if parsed is not None:
                schemas[name] = parsed
        too_big = next((p for p in map(source_size_problem, sources) if p), None)
        if too_big is None and sum(len(s) for s in sources) > RUN_SOURCE_CHARS:
            too_big = f"the skill sources are longer than {RUN_SOURCE_CHARS} bytes together"
        if too_big is not None:
            return self._failed(started, "PolicyViolation", too_big)
        message: dict[str, Any] = {
            "op": "run", "sources": sources, "entry": entry, "args": args,
            "tools": sorted(tools), "limits": asdict(limits),
        }
        fill: list[str | None] | None = None
        cache = self._pool.code_cache
        if cache is not None:
            digests = [source_digest(s) for s in sources]
            codes = [cache.get(d) for d in digests]
            # Digests of the sources the child compiles and sends back for the cache.
            fill = [d if c is None else None for d, c in zip(digests, codes)]
            message["codes"] = codes
            message["cache"] = True
        try:
            request = protocol.encode(message)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"args must be plain JSON values: {exc}") from None

        def unavailable(worker: _Worker, exc: Exception) -> RunResult:
            return self._failed(started, "SandboxUnavailable",
                                f"could not start a sandbox worker: {self._why(worker, exc)}")

        def done(result: RunResult) -> None:
            result.duration_ms = (time.perf_counter() - started) * 1000.0
            self._pool.count(runs=1, limits_hit=int(result.limit is not None))

        return self._in_child(request, limits, tools, schemas, fill, unavailable, done)

    def _in_child(
        self,
        request: bytes,
        limits: Limits,
        tools: dict[str, Callable[..., Any]],
        schemas: dict[str, dict],
        fill: list[str | None] | None,
        unavailable: Callable[[_Worker, Exception], RunResult],
        done: Callable[[RunResult], None] | None = None,
    ) -> RunResult:
        """Execute ``request`` in a fresh child of a pooled worker, and give the worker back.

        A worker that cannot hand over a child (it died, or was stale) is retired and
        another tried, :data:`START_ATTEMPTS` in all; after the last, ``unavailable(worker,
        exc)`` answers (or raises). ``done(result)`` runs before the worker is released.
        ``fill``: per source, the digest under which the code cache keeps what the child
        compiled (None where the request carried the code), or None for no cache."""
        for attempt in range(START_ATTEMPTS):
            worker = self._pool.acquire()
            finished = False
            retire = True
            try:
                try:
                    worker.ensure_ready(self.start_timeout)
                    worker.next_child(time.monotonic() + self.start_timeout)
                except (_Died, _Protocol, _Deadline) as exc:
                    if attempt + 1 < START_ATTEMPTS:
                        continue
                    return unavailable(worker, exc)
                result, retire = self._execute(worker, request, limits, tools, schemas, [],
                                               fill)
                if done is not None:
                    done(result)
                finished = True
                return result
            finally:
                if not finished:
                    worker.kill()
                self._pool.release(worker, retire=retire or not finished)
        raise AssertionError("unreachable")  # pragma: no cover

    def _keep_compiled(self, msg: dict[str, Any], fill: list[str | None]) -> None:
        """Keep the code a child compiled (its ``compiled`` frame) in the code cache, under
        the digests of the sources the host sent; entries of the wrong shape are dropped."""
        cache = self._pool.code_cache
        codes = msg.get("codes")
        if cache is None or not isinstance(codes, list) or len(codes) != len(fill):
            raise _Protocol("malformed compiled-code frame from worker")
        for digest, entry in zip(fill, codes):
            if digest is None or entry is None:
                continue
            kept = valid_entry(entry)
            if kept is not None:
                cache.put(digest, kept)

    @staticmethod
    def _failed(started: float, kind: str, message: str, limit: str | None = None) -> RunResult:
        return RunResult(
            ok=False,
            error=SandboxError(kind, message),
            duration_ms=(time.perf_counter() - started) * 1000.0,
            limit=limit,
        )

    def _execute(
        self,
        worker: _Worker,
        request: bytes,
        limits: Limits,
        tools: dict[str, Callable[..., Any]],
        schemas: dict[str, dict],
        calls: list[CallRecord],
        fill: list[str | None] | None = None,
    ) -> tuple[RunResult, bool]:
        worker.runs += 1
        # The child sends what it compiled in its first frame, before it runs any skill
        # code; only then, and only when this request left some code out, is a
        # ``compiled`` frame the child's trusted part speaking rather than skill code.
        expect_compiled = fill is not None and any(d is not None for d in fill)
        deadline = time.monotonic() + limits.wall_seconds
        budget = limits.cpu_seconds
        # The child is single-threaded (clone is denied to it), so its CPU time grows at
        # most as fast as the wall clock: /proc is read only when the budget could be
        # spent since the last reading, on the poll and on every tool round trip alike.
        seen = {"cpu": 0.0, "at": time.monotonic()}
        child: int | None = None
        serial: int | None = None

        def tick() -> float:
            now = time.monotonic()
            slack = budget - seen["cpu"] - (now - seen["at"])
            if slack > 0:
                return slack
            used = worker.cpu_seconds(child) if child is not None else None
            if used is None:
                return _TICK
            seen["cpu"], seen["at"] = used, now
            if used > budget:
                raise _LimitHit("cpu", f"CPU time limit of {budget:g} s exceeded")
            return max(budget - used, 0.001)

        max_frame = REPLY_FRAME_FACTOR * (limits.max_result_bytes + limits.max_output_bytes) + REPLY_FRAME_SLACK_BYTES
        # Every tool call's arguments stay in the host (parsed, passed to the tool, kept
        # in r.calls): 1 MB of '[[],[],...]' is ~22 MB of Python objects, so without a
        # total, max_tool_calls such calls held gigabytes of host memory.
        call_budget = TOOL_ARGUMENT_BUDGET * limits.max_result_bytes
        call_bytes = 0
        try:
            if worker.current is None:
                worker.next_child(deadline)
            child = worker.current.pid  # type: ignore[union-attr]
            serial = worker.current.serial  # type: ignore[union-attr]
            seen["at"] = time.monotonic()
            worker.send(request, deadline)
            first = True
            while True:
                msg = worker.recv(deadline, max_frame, tick)
                op = msg.get("op")
                if op == "compiled" and first and expect_compiled:
                    self._keep_compiled(msg, fill)  # type: ignore[arg-type]
                    first = False
                    continue
                first = False
                if op == "call":
                    tick()
                    call_bytes += worker.last_frame_bytes
                    if call_bytes > call_budget:
                        raise _LimitHit(
                            "tool_calls",
                            f"tool call arguments exceeded {call_budget} bytes in total",
                        )
                    reply = dispatch(msg, tools, schemas, calls, limits)
                    if time.monotonic() > deadline:  # the tool itself used up the time
                        raise _Deadline
                    worker.send(reply, deadline)
                elif op == "done":
                    return finish(self._pool, worker, child, msg, calls, limits)
                else:
                    raise _Protocol(f"unexpected message {op!r} from worker")
        except _Deadline:
            return limit_result(calls, "wall",
                               f"wall-clock limit of {limits.wall_seconds:g} s exceeded"), False
        except _LimitHit as hit:
            return limit_result(calls, hit.limit, hit.message), False
        except _Gone:
            status = worker._exit_status(serial, deadline) if serial is not None else 0
            return diagnose(self._pool, worker, calls, limits, status), False
        except _ChildExited as gone:
            return diagnose(self._pool, worker, calls, limits, gone.status), False
        except _Died as exc:
            worker.kill()
            if worker.killed_by_us and self._pool.closed:
                return RunResult(ok=False, calls=calls,
                                 error=SandboxError("SandboxClosed", "the sandbox was closed")), True
            return RunResult(ok=False, calls=calls, error=SandboxError(
                "WorkerCrashed", _short(f"the sandbox zygote failed: {exc}"))), True
        except _Protocol as exc:
            result = RunResult(ok=False, calls=calls,
                               error=SandboxError("ProtocolError", _short(str(exc))))
            return result, False
        finally:
            worker.end_child()  # SIGKILL, pipes closed: nothing of this run goes on
            worker.buf.clear()
