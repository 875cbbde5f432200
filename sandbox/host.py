"""The host side: a pool of worker processes, the run protocol, tool dispatch.

Nothing a worker sends is trusted: frames are size-capped, parsed as JSON only, checked
for shape; the run's wall-clock deadline and CPU budget are enforced here by killing the
worker, whatever it is doing.
"""

from __future__ import annotations

import inspect
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any

from . import protocol
from .models import CallRecord, Limits, RunResult, SandboxError
from .policy import DEFAULT_MODULES, MAX_SOURCE_CHARS, validate_modules
from .schema import arguments_schema, schema_errors

__all__ = ["Sandbox"]

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER_MODULE = "sandbox.worker"
_TICK = 0.05  # seconds between CPU checks of a busy worker
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_KNOWN_LIMITS = {"cpu", "wall", "memory", "tool_calls", "output", "result_size"}
_MAX_TEXT = 2000
#: The tool-call frames of one run total at most this many times ``max_result_bytes``.
TOOL_ARGUMENT_BUDGET = 4


class _Deadline(Exception):
    pass


class _Died(Exception):
    pass


class _Protocol(Exception):
    pass


class _LimitHit(Exception):
    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message


def _short(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


# --------------------------------------------------------------------------------------
# One worker process
# --------------------------------------------------------------------------------------
class _Worker:
    def __init__(self, config: dict[str, Any], debug: bool, errlog: Any = None) -> None:
        argv = [sys.executable, "-E", "-s", "-B", "-m", _WORKER_MODULE, json.dumps(config)]
        self.errlog = errlog
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Until it hardens itself the worker's stderr goes to a log the host reads
            # when a worker fails to start; then the worker points fd 2 at /dev/null.
            stderr=None if debug else (errlog if errlog is not None else subprocess.DEVNULL),
            cwd=_PACKAGE_PARENT,
            env={},
            close_fds=True,
            start_new_session=True,
            bufsize=0,
        )
        self.pid = self.proc.pid
        self.rfd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.wfd = self.proc.stdin.fileno()  # type: ignore[union-attr]
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        # poll, not select: a big host process can hold fds numbered above FD_SETSIZE.
        self._rpoll = select.poll()
        self._rpoll.register(self.rfd, select.POLLIN | select.POLLERR | select.POLLHUP)
        self._wpoll = select.poll()
        self._wpoll.register(self.wfd, select.POLLOUT | select.POLLERR | select.POLLHUP)
        self.buf = bytearray()
        self.last_frame_bytes = 0
        self.ready = False
        self.hardening: dict[str, Any] | None = None
        self.runs = 0
        self.status: int | None = None
        self.rusage: Any = None
        self.killed_by_us = False
        self._lock = threading.Lock()
        self._closed = False

    # -- life and death ----------------------------------------------------------------
    def alive(self) -> bool:
        if self.status is not None:
            return False
        try:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
        except ChildProcessError:
            self._set_status(0, None)
            return False
        if pid == 0:
            return True
        self._set_status(status, usage)
        return False

    def _set_status(self, status: int, usage: Any) -> None:
        self.status = status
        self.rusage = usage
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        self.proc.returncode = code

    def kill(self) -> None:
        """SIGKILL and reap (idempotent, thread-safe)."""
        with self._lock:
            if self.status is None:
                self.killed_by_us = True
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._reap_locked()

    def reap(self) -> None:
        with self._lock:
            if self.status is None:
                self._reap_locked()

    def _reap_locked(self) -> None:
        try:
            _, status, usage = os.wait4(self.pid, 0)
        except ChildProcessError:
            status, usage = 0, None
        self._set_status(status, usage)

    def close(self) -> None:
        """Kill, reap and close the pipes. Only by the thread that owns the worker."""
        self.kill()
        if not self._closed:
            self._closed = True
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()  # type: ignore[union-attr]
                except OSError:
                    pass

    def cpu_seconds(self) -> float | None:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2 :].split()
            return (int(fields[11]) + int(fields[12])) / _CLK_TCK
        except (OSError, ValueError, IndexError):
            return None

    # -- frames ----------------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.wfd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, OSError) as exc:
                raise _Died(str(exc)) from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Deadline
            self._wpoll.poll(int(min(remaining, _TICK) * 1000) + 1)

    def recv(self, deadline: float, max_bytes: int, tick: Callable[[], None] | None) -> dict:
        while True:
            if len(self.buf) >= 4:
                (size,) = protocol.HEADER.unpack_from(self.buf)
                if size > max_bytes:
                    raise _Protocol(f"worker sent a frame of {size} bytes (cap {max_bytes})")
                if len(self.buf) >= 4 + size:
                    self.last_frame_bytes = size
                    payload = bytes(self.buf[4 : 4 + size])
                    del self.buf[: 4 + size]
                    try:
                        msg = json.loads(payload.decode("utf-8", "replace"))
                    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
                        raise _Protocol(f"worker sent invalid JSON: {exc}") from None
                    if not isinstance(msg, dict):
                        raise _Protocol("worker sent a non-object frame")
                    return msg
            remaining = deadline - time.monotonic()
            try:
                readable = self._rpoll.poll(max(0, int(min(remaining, _TICK) * 1000)))
            except (OSError, ValueError) as exc:
                raise _Died(str(exc)) from None
            if not readable:
                if remaining <= 0:
                    raise _Deadline
                if tick is not None:
                    tick()
                continue
            try:
                data = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise _Died(str(exc)) from None
            if not data:
                raise _Died("worker closed its pipe")
            self.buf += data

    def _stderr_tail(self) -> str:
        if self.errlog is None:
            return ""
        try:
            self.errlog.seek(0, os.SEEK_END)
            size = self.errlog.tell()
            self.errlog.seek(max(0, size - 1500))
            tail = self.errlog.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; worker stderr: {tail}" if tail else ""

    def poll_ready(self) -> bool:
        """True when the worker has said ready (never blocks)."""
        if not self.ready:
            try:
                self.ensure_ready(0.0)
            except (_Died, _Protocol):
                return False
        return self.ready

    def ensure_ready(self, timeout: float) -> None:
        if self.ready:
            return
        try:
            msg = self.recv(time.monotonic() + timeout, 1 << 20, None)
        except _Deadline:
            if timeout <= 0:
                raise _Died("not ready yet") from None
            raise _Died(f"worker did not start within {timeout:.0f} s") from None
        except _Died as exc:
            raise _Died(f"{exc}{self._stderr_tail()}") from None
        if msg.get("op") != "ready":
            raise _Died("worker did not say ready")
        self.hardening = msg.get("hardening") if isinstance(msg.get("hardening"), dict) else {}
        self.ready = True


# --------------------------------------------------------------------------------------
# The pool (holds no reference to the Sandbox, so a forgotten Sandbox can be collected)
# --------------------------------------------------------------------------------------
class _Pool:
    def __init__(self, size: int, modules: tuple[str, ...], max_runs: int, debug: bool) -> None:
        self.size = size
        self.max_runs = max_runs
        self.debug = debug
        self.root = tempfile.mkdtemp(prefix="sandbox-root-")
        self.config = {"modules": list(modules), "root": self.root, "debug": debug}
        self.errlog = tempfile.TemporaryFile(prefix="sandbox-worker-stderr-")
        self.local = threading.local()
        self.cond = threading.Condition()
        self.idle: list[_Worker] = []
        self.workers: set[_Worker] = set()
        self.closed = False
        self.spawned = 0
        self.stats = {"runs": 0, "compiled": 0, "cache_hits": 0, "limits_hit": 0}
        self.stats_lock = threading.Lock()

    def count(self, **deltas: int) -> None:
        with self.stats_lock:
            for key, value in deltas.items():
                self.stats[key] += value

    def _spawn_locked(self) -> _Worker:
        worker = _Worker(self.config, self.debug, self.errlog)
        self.workers.add(worker)
        self.spawned += 1
        return worker

    def fill(self) -> None:
        with self.cond:
            while not self.closed and len(self.workers) < self.size:
                self.idle.append(self._spawn_locked())

    def acquire(self) -> _Worker:
        dead: list[_Worker] = []
        # A tool that runs another skill on the same Sandbox (this thread already holds a
        # worker) gets an extra worker instead of waiting for itself forever.
        nested = getattr(self.local, "held", 0) > 0
        try:
            with self.cond:
                while True:
                    if self.closed:
                        raise RuntimeError("the Sandbox is closed")
                    for worker in list(self.idle):
                        if not worker.alive():
                            self.idle.remove(worker)
                            self.workers.discard(worker)
                            dead.append(worker)
                    if self.idle:
                        # Prefer a worker that has finished booting.
                        ready = [w for w in self.idle if w.poll_ready()]
                        worker = ready[-1] if ready else self.idle[-1]
                        self.idle.remove(worker)
                        break
                    if len(self.workers) < self.size or nested:
                        worker = self._spawn_locked()
                        break
                    self.cond.wait()
        finally:
            for w in dead:
                w.close()
        self.local.held = getattr(self.local, "held", 0) + 1
        return worker

    def release(self, worker: _Worker, retire: bool) -> None:
        self.local.held = max(0, getattr(self.local, "held", 1) - 1)
        retire = retire or worker.runs >= self.max_runs or worker.status is not None
        with self.cond:
            if len(self.workers) > self.size:  # an extra worker lent to a nested run
                retire = True
            if self.closed or retire:
                self.workers.discard(worker)
                if not self.closed and len(self.workers) < self.size:
                    # Start the replacement now; it boots while the caller goes on.
                    self.idle.append(self._spawn_locked())
            else:
                self.idle.append(worker)
            self.cond.notify()
        if self.closed or retire:
            worker.close()

    def shutdown(self) -> None:
        with self.cond:
            self.closed = True
            workers = list(self.workers)
            idle = list(self.idle)
            self.idle.clear()
            self.cond.notify_all()
        for worker in workers:
            worker.kill()  # busy ones too: their run thread sees EOF and returns
        for worker in idle:
            worker.close()
        shutil.rmtree(self.root, ignore_errors=True)
        try:
            self.errlog.close()
        except OSError:
            pass


# --------------------------------------------------------------------------------------
# Tool dispatch helpers
# --------------------------------------------------------------------------------------
class _BadArguments(Exception):
    pass


_SIGNATURES: dict[Any, inspect.Signature | None] = {}
_SIGNATURES_LOCK = threading.Lock()


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        with _SIGNATURES_LOCK:
            if fn in _SIGNATURES:
                return _SIGNATURES[fn]
    except TypeError:  # unhashable callable
        pass
    try:
        sig: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    try:
        with _SIGNATURES_LOCK:
            if len(_SIGNATURES) > 1024:
                _SIGNATURES.clear()
            _SIGNATURES[fn] = sig
    except TypeError:
        pass
    return sig


def _loose_arguments(args: list, kwargs: dict) -> dict[str, Any]:
    out = dict(kwargs)
    if args:
        out["args"] = list(args)
    return out


def _bind(
    name: str, fn: Callable[..., Any], schema: dict | None, args: list, kwargs: dict
) -> tuple[dict[str, Any], Callable[[], Any]]:
    """Name the positional arguments; returns (arguments dict, the call to make)."""
    if schema is not None:
        props = schema.get("properties")
        order = list(props) if isinstance(props, dict) else []
        if len(args) > len(order):
            raise _BadArguments(
                f"{name}() takes at most {len(order)} positional argument(s) "
                f"({len(args)} given)"
            )
        arguments = dict(zip(order, args))
        for key, value in kwargs.items():
            if key in arguments:
                raise _BadArguments(f"{name}() got multiple values for argument {key!r}")
            arguments[key] = value
        return arguments, lambda: fn(**arguments)
    sig = _signature(fn)
    if sig is None:
        if args:
            raise _BadArguments(
                f"cannot name the positional arguments of {name}(): pass keyword "
                "arguments or give the tool a schema"
            )
        arguments = dict(kwargs)
        return arguments, lambda: fn(**arguments)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise _BadArguments(f"{name}(): {exc}") from None
    arguments = {}
    for pname, value in bound.arguments.items():
        kind = sig.parameters[pname].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            arguments[pname] = list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        else:
            arguments[pname] = value
    return arguments, lambda: fn(*bound.args, **bound.kwargs)


# --------------------------------------------------------------------------------------
# The public class
# --------------------------------------------------------------------------------------
class Sandbox:
    """Runs untrusted skill code in a pool of hardened worker processes.

    ``Sandbox(limits=None, workers=2, *, allowed_modules=None, max_runs_per_worker=100,
    start_timeout=30.0)``. Thread-safe: concurrent ``run`` calls use different workers
    (and wait for one when all are busy). Use as a context manager or call ``close()``;
    a forgotten Sandbox is cleaned up when collected and at interpreter exit.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        workers: int = 2,
        *,
        allowed_modules: Iterable[str] | None = None,
        max_runs_per_worker: int = 100,
        start_timeout: float = 30.0,
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
        self._pool = _Pool(workers, self.allowed_modules, max_runs_per_worker, debug)
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

    def stats(self) -> dict[str, int]:
        """Counters: runs, sources compiled, compile-cache hits, limits hit, workers started."""
        with self._pool.stats_lock:
            out = dict(self._pool.stats)
        out["workers_started"] = self._pool.spawned
        return out

    def hardening(self) -> dict[str, Any]:
        """What process hardening a worker reported it applied (starts one if needed)."""
        worker = self._pool.acquire()
        try:
            worker.ensure_ready(self.start_timeout)
            return dict(worker.hardening or {})
        finally:
            self._pool.release(worker, retire=False)

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
        if sum(len(s) for s in sources) > 4 * MAX_SOURCE_CHARS:
            return self._failed(started, "PolicyViolation", "the skill sources are too long")
        try:
            request = protocol.encode({
                "op": "run", "sources": sources, "entry": entry, "args": args,
                "tools": sorted(tools), "limits": asdict(limits),
            })
        except (TypeError, ValueError) as exc:
            raise TypeError(f"args must be plain JSON values: {exc}") from None

        calls: list[CallRecord] = []
        for attempt in range(2):
            worker = self._pool.acquire()
            finished = False
            retire = True
            try:
                try:
                    worker.ensure_ready(self.start_timeout)
                except (_Died, _Protocol) as exc:
                    if attempt == 0:
                        continue
                    return self._failed(started, "SandboxUnavailable",
                                        f"could not start a sandbox worker: {exc}")
                result, retire = self._execute(worker, request, limits, tools, schemas, calls)
                result.duration_ms = (time.perf_counter() - started) * 1000.0
                self._pool.count(runs=1, limits_hit=int(result.limit is not None))
                finished = True
                return result
            finally:
                if not finished:
                    worker.kill()
                self._pool.release(worker, retire=retire or not finished)
        raise AssertionError("unreachable")  # pragma: no cover

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
    ) -> tuple[RunResult, bool]:
        worker.runs += 1
        deadline = time.monotonic() + limits.wall_seconds
        cpu0 = worker.cpu_seconds()

        def tick() -> None:
            if cpu0 is None:
                return
            used = worker.cpu_seconds()
            if used is not None and used - cpu0 > limits.cpu_seconds:
                raise _LimitHit("cpu", f"CPU time limit of {limits.cpu_seconds:g} s exceeded")

        max_frame = 4 * (limits.max_result_bytes + limits.max_output_bytes) + (1 << 20)
        # Every tool call's arguments stay in the host (parsed, passed to the tool, kept
        # in r.calls): 1 MB of '[[],[],...]' is ~22 MB of Python objects, so without a
        # total, max_tool_calls such calls held gigabytes of host memory.
        call_budget = TOOL_ARGUMENT_BUDGET * limits.max_result_bytes
        call_bytes = 0
        try:
            worker.send(request, deadline)
            while True:
                msg = worker.recv(deadline, max_frame, tick)
                op = msg.get("op")
                if op == "call":
                    call_bytes += worker.last_frame_bytes
                    if call_bytes > call_budget:
                        raise _LimitHit(
                            "tool_calls",
                            f"tool call arguments exceeded {call_budget} bytes in total",
                        )
                    reply = self._dispatch(msg, tools, schemas, calls, limits)
                    if time.monotonic() > deadline:  # the tool itself used up the time
                        raise _Deadline
                    worker.send(reply, deadline)
                elif op == "done":
                    return self._finish(msg, calls, limits)
                else:
                    raise _Protocol(f"unexpected message {op!r} from worker")
        except _Deadline:
            worker.kill()
            return self._limit(calls, "wall",
                               f"wall-clock limit of {limits.wall_seconds:g} s exceeded"), True
        except _LimitHit as hit:
            worker.kill()
            return self._limit(calls, hit.limit, hit.message), True
        except _Died:
            worker.reap()
            return self._diagnose(worker, calls, limits, cpu0), True
        except _Protocol as exc:
            worker.kill()
            result = RunResult(ok=False, calls=calls,
                               error=SandboxError("ProtocolError", _short(str(exc))))
            return result, True

    @staticmethod
    def _limit(calls: list[CallRecord], limit: str, message: str) -> RunResult:
        return RunResult(ok=False, calls=calls, limit=limit,
                         error=SandboxError("LimitExceeded", message))

    def _diagnose(
        self, worker: _Worker, calls: list[CallRecord], limits: Limits, cpu0: float | None
    ) -> RunResult:
        status = worker.status or 0
        if worker.killed_by_us:
            return RunResult(ok=False, calls=calls,
                             error=SandboxError("SandboxClosed", "the sandbox was closed"))
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU:
                return self._limit(calls, "cpu",
                                   f"CPU time limit of {limits.cpu_seconds:g} s exceeded")
            used = None
            if worker.rusage is not None:
                used = worker.rusage.ru_utime + worker.rusage.ru_stime - (cpu0 or 0.0)
            if sig == signal.SIGKILL and used is not None and used >= limits.cpu_seconds:
                return self._limit(calls, "cpu",
                                   f"CPU time limit of {limits.cpu_seconds:g} s exceeded")
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            hint = {
                signal.SIGSEGV: " (stack overflow in C code?)",
                signal.SIGKILL: " (out of memory?)",
                signal.SIGABRT: " (interpreter abort, often out of memory)",
            }.get(sig, "")  # type: ignore[call-overload]
            message = f"the worker process was killed by {name}{hint}"
        else:
            message = f"the worker process exited with status {os.WEXITSTATUS(status)}"
        return RunResult(ok=False, calls=calls, error=SandboxError("WorkerCrashed", message))

    def _finish(
        self, msg: dict[str, Any], calls: list[CallRecord], limits: Limits
    ) -> tuple[RunResult, bool]:
        ok = msg.get("ok")
        stdout = msg.get("stdout", "")
        limit = msg.get("limit")
        if not isinstance(ok, bool) or not isinstance(stdout, str):
            raise _Protocol("malformed result from worker")
        if limit is not None and limit not in _KNOWN_LIMITS:
            raise _Protocol("malformed limit from worker")
        stdout = stdout[: limits.max_output_bytes]
        retire = bool(msg.get("recycle")) or limit is not None
        compiled, hits = msg.get("compiled"), msg.get("cache_hits")
        if isinstance(compiled, int) and isinstance(hits, int):
            self._pool.count(compiled=compiled, cache_hits=hits)
        if ok:
            if "value" not in msg:
                raise _Protocol("result without a value")
            return RunResult(ok=True, value=msg["value"], calls=calls, stdout=stdout), retire
        err = msg.get("error")
        if not isinstance(err, dict):
            raise _Protocol("failure without an error")
        kind, message = err.get("type"), err.get("message")
        line, index = err.get("line"), err.get("source_index")
        error = SandboxError(
            type=_short(kind) if isinstance(kind, str) else "Error",
            message=_short(message) if isinstance(message, str) else "",
            line=line if isinstance(line, int) and not isinstance(line, bool) else None,
            source_index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        )
        return RunResult(ok=False, error=error, calls=calls, stdout=stdout, limit=limit), retire

    def _dispatch(
        self,
        msg: dict[str, Any],
        tools: dict[str, Callable[..., Any]],
        schemas: dict[str, dict],
        calls: list[CallRecord],
        limits: Limits,
    ) -> bytes:
        name, args, kwargs = msg.get("name"), msg.get("args"), msg.get("kwargs")
        invalid = msg.get("invalid")
        if (
            not isinstance(name, str)
            or not isinstance(args, list)
            or not isinstance(kwargs, dict)
            or (invalid is not None and not isinstance(invalid, str))
        ):
            raise _Protocol("malformed tool call from worker")
        name = _short(name)
        t0 = time.perf_counter()
        arguments: dict[str, Any] = _loose_arguments(args, kwargs)
        if len(calls) >= limits.max_tool_calls:
            calls.append(CallRecord(
                name, arguments, None,
                f"tool call limit of {limits.max_tool_calls} exceeded", 0.0,
            ))
            raise _LimitHit("tool_calls", f"tool call limit of {limits.max_tool_calls} exceeded")
        result: Any = None
        text: str | None = None
        error: str | None = None
        if invalid is not None:
            error = f"invalid arguments for tool {name!r}: {_short(invalid)}"
        elif name not in tools:
            available = ", ".join(sorted(tools)) or "none"
            error = f"tool {name!r} is not available (available: {available})"
        else:
            fn, schema = tools[name], schemas.get(name)
            try:
                arguments, call = _bind(name, fn, schema, args, kwargs)
            except _BadArguments as exc:
                error = str(exc)
            else:
                problems = schema_errors(arguments, schema) if schema is not None else []
                if problems:
                    error = f"invalid arguments for tool {name!r}: " + "; ".join(problems)
                else:
                    try:
                        raw = call()
                    except Exception as exc:  # noqa: BLE001 - the tool's failure, reported
                        error = _short(str(exc) or type(exc).__name__)
                    else:
                        try:
                            text = protocol.dumps(raw)
                            result = json.loads(text)
                        except (TypeError, ValueError, RecursionError) as exc:
                            text = None
                            error = f"tool {name!r} returned a value that is not JSON: {exc}"
        duration = (time.perf_counter() - t0) * 1000.0
        calls.append(CallRecord(name, arguments, result, error, duration))
        if error is None and text is not None:
            return protocol.frame('{"op":"tool_result","ok":true,"result":' + text + "}")
        return protocol.encode({"op": "tool_result", "ok": False, "error": error})
