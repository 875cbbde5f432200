"""The host side: a pool of worker processes, the run protocol, tool dispatch.

Nothing a worker sends is trusted: frames are size-capped, parsed as JSON only, checked
for shape; the run's wall-clock deadline and CPU budget are enforced here by killing the
worker, whatever it is doing.
"""

from __future__ import annotations

import collections
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from . import protocol
from .models import CallRecord, Limits, PolicyViolation, RunResult, SandboxError
from .policy import (
    DEFAULT_MODULES,
    MAX_SOURCE_CHARS,
    precheck,
    source_size_problem,
    validate_modules,
)
from .policy import (
    _violation as _policy_violation,
)
from .schema import arguments_schema, schema_errors

__all__ = ["Sandbox"]

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER_MODULE = "sandbox.worker"
_TICK = 0.05  # seconds between CPU checks of a busy worker
_MB = 1024 * 1024
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_MAX_TEXT = 2000
#: The tool-call frames of one run total at most this many times ``max_result_bytes``.
TOOL_ARGUMENT_BUDGET = 4
#: A failed run whose child's peak address space reached this share of ``memory_mb`` is
#: reported as ``limit="memory"`` (the parent's own observation, from /proc; an
#: allocation refused outright never occupied memory and is the skill's MemoryError).
MEMORY_LIMIT_SHARE = 0.9
#: How long a retired zygote gets to reap its children and exit before it is killed.
RETIRE_SECONDS = 1.0
#: Compile-cache fills larger than this are not sent to the zygote (it reads at most this).
CONTROL_MESSAGE_BYTES = 1 << 20
#: A run or check whose worker cannot hand over a child (it died, or was stale) is tried
#: on this many workers before the sandbox is reported unavailable.
START_ATTEMPTS = 2
#: Sandbox.check_many compiles at most this many sources in one child ...
CHECK_MANY_SOURCES = 256
#: ... of at most this many characters together (what one run may compile)
CHECK_MANY_BYTES = 4 * MAX_SOURCE_CHARS
#: Error types only the host reports; a worker that names one is naming a skill class.
HOST_ONLY_TYPES = frozenset({"LimitExceeded", "WorkerCrashed", "SandboxClosed",
                             "ProtocolError", "SandboxUnavailable"})


class _Deadline(Exception):
    pass


class _Died(Exception):
    pass


class _Gone(Exception):
    """The current child's pipe broke (it died): its exit status tells why."""


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
class _ChildExited(Exception):
    """The run's child ended before it sent ``done``; ``status`` is from the zygote."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Child:
    """A per-run child of the zygote: its pid, the zygote's serial number for it (pids are
    recycled fast: pid_max is 32768 here), the host ends of its private pipes, and a pidfd
    (signals reach this process, never another that got its pid)."""

    __slots__ = ("pid", "serial", "wfd", "rfd", "pidfd")

    def __init__(self, pid: int, serial: int, wfd: int, rfd: int, pidfd: int = -1) -> None:
        self.pid, self.serial, self.wfd, self.rfd, self.pidfd = pid, serial, wfd, rfd, pidfd
        os.set_blocking(wfd, False)
        os.set_blocking(rfd, False)

    def kill(self) -> None:
        try:
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def close(self) -> None:
        for fd in (self.wfd, self.rfd, self.pidfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wfd = self.rfd = self.pidfd = -1


class _Worker:
    """One zygote process (``sandbox.worker``) and the per-run children it forks.

    The zygote says ``ready`` on its stdout, then talks over a Unix socket only: it hands
    over each new child (pid and the host ends of the child's private request and reply
    pipes) and reports how each child ended (``wait4``); the host sends it compile-cache
    fills. Each run uses one child, which is killed and whose pipes are closed afterwards.
    Nothing a child sends is trusted.
    """

    def __init__(self, config: dict[str, Any], debug: bool, errlog: Any = None) -> None:
        host_sock, zygote_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = dict(config, socket_fd=zygote_sock.fileno())
        argv = [sys.executable, "-E", "-s", "-B", "-m", _WORKER_MODULE, json.dumps(config)]
        self.errlog = errlog
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                # Until it hardens itself the worker's stderr goes to a log the host reads
                # when a worker fails to start; then the worker points fd 2 at /dev/null.
                stderr=None if debug else (errlog if errlog is not None else subprocess.DEVNULL),
                cwd=_PACKAGE_PARENT,
                env={},
                close_fds=True,
                pass_fds=(zygote_sock.fileno(),),
                start_new_session=True,
                bufsize=0,
            )
        except BaseException:
            host_sock.close()
            raise
        finally:
            zygote_sock.close()
        self.pid = self.proc.pid
        self.sock = host_sock
        self.sock.setblocking(False)
        self.ready_fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(self.ready_fd, False)
        self.buf = bytearray()
        self.last_frame_bytes = 0
        self.ready = False
        self.hardening: dict[str, Any] | None = None
        self.runs = 0
        self.status: int | None = None
        self.rusage: Any = None
        self.killed_by_us = False
        self.sock_closed = False
        #: Children handed over and not used yet, oldest first.
        self.spares: collections.deque[_Child] = collections.deque()
        #: The child serving the current run.
        self.current: _Child | None = None
        #: How children ended (wait status), by serial; and their CPU time (last few).
        self.exits: dict[int, int] = {}
        self.exit_cpu: dict[int, float] = {}
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

    def end_child(self) -> None:
        """The current run is over: SIGKILL its child unless the zygote reported it gone
        (its pid is not reused before the zygote reaps it), and close its pipes."""
        child = self.current
        self.current = None
        if child is None:
            return
        self._pump_quietly()
        if child.serial not in self.exits:
            child.kill()
        child.close()
        if len(self.exits) > 4096:  # serials only grow: old ones are never asked about
            for key in sorted(self.exits)[:2048]:
                del self.exits[key]

    def kill(self) -> None:
        """End the zygote and its children, and reap the zygote (idempotent, thread-safe).

        The current child is killed and every child's pipes closed (each child ends on
        EOF), then the zygote's socket: it reaps its children and exits. A zygote that does
        not stop in time is killed with its whole process group."""
        with self._lock:
            if self.status is not None:
                return
            self.killed_by_us = True
            current, self.current = self.current, None
            if current is not None:
                current.kill()
                current.close()
            while self.spares:
                self.spares.popleft().close()
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            deadline = time.monotonic() + RETIRE_SECONDS
            while time.monotonic() < deadline:
                # Children handed over but not read yet hold their pipes open in flight
                # on the socket: take and close them, or they (and the zygote) wait.
                self._pump_quietly()
                while self.spares:
                    self.spares.popleft().close()
                try:
                    pid, status, usage = os.wait4(self.pid, os.WNOHANG)
                except ChildProcessError:
                    self._set_status(0, None)
                    return
                if pid:
                    self._set_status(status, usage)
                    return
                time.sleep(0.002)
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._reap_locked()

    def _pump_quietly(self) -> None:
        try:
            self._pump_status()
        except (_Died, _Protocol):
            pass

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
            try:
                self.proc.stdout.close()  # type: ignore[union-attr]
            except OSError:
                pass
            while self.spares:  # handed over after kill() emptied the queue
                self.spares.popleft().close()
            self.sock.close()

    @staticmethod
    def _proc_fields(pid: int) -> list[bytes] | None:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
            return data[data.rindex(b")") + 2 :].split()
        except (OSError, ValueError):
            return None

    def cpu_seconds(self, pid: int | None = None) -> float | None:
        """CPU time (user + system) of ``pid`` (the zygote by default), from /proc."""
        fields = self._proc_fields(self.pid if pid is None else pid)
        try:
            return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # type: ignore[index]
        except (TypeError, ValueError, IndexError):
            return None

    @staticmethod
    def peak_memory_bytes(pid: int) -> int | None:
        """The peak address space of ``pid`` (VmPeak, what RLIMIT_AS bounds), from /proc."""
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"VmPeak:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None

    # -- the zygote's socket ----------------------------------------------------------------
    def _pump_status(self) -> None:
        """Handle every message waiting on the socket (the zygote's word: trusted)."""
        while not self.sock_closed:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 16, 4)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                raise _Died(f"the sandbox zygote's socket failed: {exc}") from None
            if not data and not fds:
                self.sock_closed = True
                break
            try:
                msg = json.loads(data.decode("utf-8", "replace"))
            except ValueError:
                msg = None
            op = msg.get("op") if isinstance(msg, dict) else None
            pid = msg.get("pid") if isinstance(msg, dict) else None
            serial = msg.get("serial") if isinstance(msg, dict) else None
            if op == "forked" and isinstance(pid, int) and isinstance(serial, int) and len(
                fds
            ) in (2, 3):
                self.spares.append(_Child(pid, serial, *fds))
                continue
            for fd in fds:
                os.close(fd)
            if op == "exited" and isinstance(serial, int):
                status = msg.get("status")  # type: ignore[union-attr]
                self.exits[serial] = status if isinstance(status, int) else 0
                cpu = msg.get("cpu")  # type: ignore[union-attr]
                if isinstance(cpu, (int, float)) and not isinstance(cpu, bool):
                    self.exit_cpu[serial] = float(cpu)
                    while len(self.exit_cpu) > 64:
                        self.exit_cpu.pop(next(iter(self.exit_cpu)))
        if self.sock_closed:
            raise _Died("the sandbox zygote closed its socket")

    def control(self, obj: Any) -> None:
        """A best-effort message to the zygote (dropped when too large or not accepted)."""
        data = protocol.dumps(obj).encode("utf-8", "replace")
        if len(data) > CONTROL_MESSAGE_BYTES:
            return
        try:
            self.sock.send(data)
        except OSError:
            pass

    def next_child(self, deadline: float) -> _Child:
        """Take the next spare child (waiting for the zygote to hand one over)."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        while True:
            self._pump_status()
            while self.spares:
                child = self.spares.popleft()
                if child.serial in self.exits:  # died while waiting (killed from outside)
                    child.close()
                    continue
                self.current = child
                return child
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Deadline
            try:
                poller.poll(max(1, int(min(remaining, _TICK) * 1000)))
            except (OSError, ValueError) as exc:
                raise _Died(str(exc)) from None

    # -- frames ----------------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> None:
        """Write a frame to the current child's request pipe."""
        child = self.current
        if child is None:
            raise _Died("no child")
        view = memoryview(data)
        poller = None
        while view:
            try:
                n = os.write(child.wfd, view)
                view = view[n:]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, OSError) as exc:
                raise _Gone(str(exc)) from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Deadline
            if poller is None:
                poller = select.poll()
                poller.register(child.wfd, select.POLLOUT | select.POLLERR | select.POLLHUP)
            poller.poll(int(min(remaining, _TICK) * 1000) + 1)

    def _frame(self, buf: bytearray, max_bytes: int) -> dict | None:
        if len(buf) < 4:
            return None
        (size,) = protocol.HEADER.unpack_from(buf)
        if size > max_bytes:
            raise _Protocol(f"worker sent a frame of {size} bytes (cap {max_bytes})")
        if len(buf) < 4 + size:
            return None
        self.last_frame_bytes = size
        payload = bytes(buf[4 : 4 + size])
        del buf[: 4 + size]
        try:
            msg = json.loads(payload.decode("utf-8", "replace"))
        except (ValueError, RecursionError, UnicodeDecodeError) as exc:
            raise _Protocol(f"worker sent invalid JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise _Protocol("worker sent a non-object frame")
        return msg

    @staticmethod
    def _read_into(fd: int, buf: bytearray) -> bool:
        """Read what is waiting on ``fd``; False at EOF."""
        while True:
            try:
                data = os.read(fd, 1 << 20)
            except BlockingIOError:
                return True
            except OSError as exc:
                raise _Died(str(exc)) from None
            if not data:
                return False
            buf += data
            if len(data) < (1 << 20):
                return True

    def recv(self, deadline: float, max_bytes: int, tick: Callable[[], float] | None) -> dict:
        """The next frame from the current child. ``tick`` checks the CPU budget and returns
        how long (seconds) the host may wait before it must check again."""
        child = self.current
        if child is None:
            raise _Died("no child")
        poller = select.poll()
        poller.register(child.rfd, select.POLLIN | select.POLLERR | select.POLLHUP)
        sock = -1 if self.sock_closed else self.sock.fileno()
        if sock >= 0:
            poller.register(sock, select.POLLIN)
        while True:
            msg = self._frame(self.buf, max_bytes)
            if msg is not None:
                return msg
            remaining = deadline - time.monotonic()
            wait = min(remaining, _TICK)
            if tick is not None:
                wait = min(wait, tick())
            try:
                events = poller.poll(max(0, int(wait * 1000)))
            except (OSError, ValueError) as exc:
                raise _Died(str(exc)) from None
            if not events:
                if remaining <= 0:
                    raise _Deadline
                continue
            if any(fd == sock for fd, _ in events):
                try:
                    self._pump_status()  # keep the zygote's queue short during long runs
                except _Died:
                    poller.unregister(sock)
                if not any(fd == child.rfd for fd, _ in events):
                    continue
            if not self._read_into(child.rfd, self.buf):
                msg = self._frame(self.buf, max_bytes)
                if msg is not None:
                    return msg
                raise _ChildExited(self._exit_status(child.serial, deadline))

    def _exit_status(self, pid: int, deadline: float) -> int:
        """How the child with serial ``pid`` ended, as the zygote reports it (waits a
        little for the report)."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        limit = min(deadline, time.monotonic() + RETIRE_SECONDS)
        while pid not in self.exits:
            self._pump_status()
            if pid in self.exits:
                break
            remaining = limit - time.monotonic()
            if remaining <= 0:
                return 0
            poller.poll(max(1, int(min(remaining, _TICK) * 1000)))
        return self.exits[pid]

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
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.ready_fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        while True:
            msg = self._frame(self.buf, 1 << 20)
            if msg is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if timeout <= 0:
                    raise _Died("not ready yet")
                raise _Died(f"worker did not start within {timeout:.0f} s")
            poller.poll(max(1, int(min(remaining, _TICK) * 1000)))
            if not self._read_into(self.ready_fd, self.buf):
                if self._frame(self.buf, 1 << 20) is None:
                    raise _Died(f"worker closed its pipe{self._stderr_tail()}")
        self.buf.clear()
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
        self.fstats: dict[str, float] = {"compile_ms": 0.0}
        self.stats_lock = threading.Lock()

    def count(self, **deltas: int) -> None:
        with self.stats_lock:
            for key, value in deltas.items():
                self.stats[key] += value

    def count_float(self, **deltas: float) -> None:
        with self.stats_lock:
            for key, value in deltas.items():
                self.fstats[key] = self.fstats.get(key, 0.0) + value

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


def _bind(
    name: str, schema: dict | None, args: list, kwargs: dict
) -> dict[str, Any]:
    """The keyword arguments of a call: exactly what the tool receives and the record holds.

    Positional arguments are named by the schema's ``properties`` order, and refused when
    there is no schema: a tool's own signature can take ``*args`` or positional-only
    parameters, whose values would then reach it differently from the record.
    """
    if not args:
        return dict(kwargs)
    props = schema.get("properties") if schema is not None else None
    order = list(props) if isinstance(props, dict) else []
    if not order:
        raise _BadArguments(
            f"{name}() got {len(args)} positional argument(s) and has no schema naming its "
            "parameters: pass keyword arguments, or give the tool a schema"
        )
    if len(args) > len(order):
        raise _BadArguments(
            f"{name}() takes at most {len(order)} positional argument(s) ({len(args)} given)"
        )
    arguments = dict(zip(order, args))
    for key, value in kwargs.items():
        if key in arguments:
            raise _BadArguments(f"{name}() got multiple values for argument {key!r}")
        arguments[key] = value
    return arguments


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

    def stats(self) -> dict[str, Any]:
        """Counters: runs, sources compiled, compile-cache hits, limits hit, workers started
        (zygotes), and ``compile_ms``, the time runs spent compiling sources."""
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
            raise RuntimeError(f"could not start a sandbox worker: {exc}") from None

        return self._in_child(request, self.limits, {}, {}, None, unavailable)

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
        too_big = next((p for p in map(source_size_problem, sources) if p), None)
        if too_big is None and sum(len(s) for s in sources) > 4 * MAX_SOURCE_CHARS:
            too_big = f"the skill sources are longer than {4 * MAX_SOURCE_CHARS} bytes together"
        if too_big is not None:
            return self._failed(started, "PolicyViolation", too_big)
        try:
            request = protocol.encode({
                "op": "run", "sources": sources, "entry": entry, "args": args,
                "tools": sorted(tools), "limits": asdict(limits),
            })
        except (TypeError, ValueError) as exc:
            raise TypeError(f"args must be plain JSON values: {exc}") from None

        def unavailable(worker: _Worker, exc: Exception) -> RunResult:
            why = str(exc) or (
                f"no child process within {self.start_timeout:g} s"
                f" (last child exits: {sorted(worker.exits.items())[-3:]})")
            return self._failed(started, "SandboxUnavailable",
                                f"could not start a sandbox worker: {why}")

        def done(result: RunResult) -> None:
            result.duration_ms = (time.perf_counter() - started) * 1000.0
            self._pool.count(runs=1, limits_hit=int(result.limit is not None))

        return self._in_child(request, limits, tools, schemas, sources, unavailable, done)

    def _in_child(
        self,
        request: bytes,
        limits: Limits,
        tools: dict[str, Callable[..., Any]],
        schemas: dict[str, dict],
        sources: list[str] | None,
        unavailable: Callable[[_Worker, Exception], RunResult],
        done: Callable[[RunResult], None] | None = None,
    ) -> RunResult:
        """Execute ``request`` in a fresh child of a pooled worker, and give the worker back.

        A worker that cannot hand over a child (it died, or was stale) is retired and
        another tried, :data:`START_ATTEMPTS` in all; after the last, ``unavailable(worker,
        exc)`` answers (or raises). ``done(result)`` runs before the worker is released."""
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
                                               sources)
                if done is not None:
                    done(result)
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
        sources: list[str] | None = None,
    ) -> tuple[RunResult, bool]:
        worker.runs += 1
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

        max_frame = 4 * (limits.max_result_bytes + limits.max_output_bytes) + (1 << 20)
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
            while True:
                msg = worker.recv(deadline, max_frame, tick)
                op = msg.get("op")
                if op == "call":
                    tick()
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
                    return self._finish(worker, child, msg, calls, limits, sources)
                else:
                    raise _Protocol(f"unexpected message {op!r} from worker")
        except _Deadline:
            return self._limit(calls, "wall",
                               f"wall-clock limit of {limits.wall_seconds:g} s exceeded"), False
        except _LimitHit as hit:
            return self._limit(calls, hit.limit, hit.message), False
        except _Gone:
            status = worker._exit_status(serial, deadline) if serial is not None else 0
            return self._diagnose(worker, calls, limits, status), False
        except _ChildExited as gone:
            return self._diagnose(worker, calls, limits, gone.status), False
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

    @staticmethod
    def _limit(calls: list[CallRecord], limit: str, message: str) -> RunResult:
        return RunResult(ok=False, calls=calls, limit=limit,
                         error=SandboxError("LimitExceeded", message))

    def _diagnose(
        self, worker: _Worker, calls: list[CallRecord], limits: Limits, status: int
    ) -> RunResult:
        """The run's child ended without a result; ``status`` is from the zygote's wait4."""
        if worker.killed_by_us or self._pool.closed:
            return RunResult(ok=False, calls=calls,
                             error=SandboxError("SandboxClosed", "the sandbox was closed"))
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU:  # RLIMIT_CPU, set by the sandbox: the kernel's word
                return self._limit(calls, "cpu",
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

    def _finish(
        self,
        worker: _Worker,
        child: int,
        msg: dict[str, Any],
        calls: list[CallRecord],
        limits: Limits,
        sources: list[str] | None,
    ) -> tuple[RunResult, bool]:
        ok = msg.get("ok")
        stdout = msg.get("stdout", "")
        if not isinstance(ok, bool) or not isinstance(stdout, str):
            raise _Protocol("malformed result from worker")
        compiled, hits = msg.get("compiled"), msg.get("cache_hits")
        compile_ms = msg.get("compile_ms")
        compile_ms = float(compile_ms) if isinstance(compile_ms, (int, float)) and not isinstance(
            compile_ms, bool) and 0 <= compile_ms < 1e9 else 0.0
        if isinstance(compiled, int) and isinstance(hits, int):
            self._pool.count(compiled=compiled, cache_hits=hits)
        self._pool.count_float(compile_ms=compile_ms)
        new = msg.get("new_sources")
        if sources and isinstance(new, list) and not msg.get("compile_error"):
            # The zygote compiles these for its cache: sources the host sent, by index
            # (never text from the child), that just compiled within the run's limits.
            fresh = [sources[i] for i in new if isinstance(i, int) and not isinstance(i, bool)
                     and 0 <= i < len(sources)]
            if fresh:
                worker.control({"op": "cache", "sources": fresh})
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
        if limit is None and not ok:
            peak = worker.peak_memory_bytes(child)
            if peak is not None and peak >= MEMORY_LIMIT_SHARE * limits.memory_mb * _MB:
                limit, message = "memory", f"memory limit of {limits.memory_mb} MB exceeded"
        if limit is not None:
            found = msg.get("error")
            err: dict[str, Any] = found if isinstance(found, dict) else {}
            detail = err.get("type") if isinstance(err.get("type"), str) else None
            if limit == "memory" and detail and detail not in HOST_ONLY_TYPES:
                message += f" ({_short(detail)}: {_short(str(err.get('message') or ''))})"
            return RunResult(ok=False, calls=calls, stdout=stdout, limit=limit,
                             error=SandboxError("LimitExceeded", message),
                             compile_ms=compile_ms), False
        if ok:
            if "value" not in msg:
                raise _Protocol("result without a value")
            return RunResult(ok=True, value=msg["value"], calls=calls, stdout=stdout,
                             compile_ms=compile_ms), False
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
        return RunResult(ok=False, error=error, calls=calls, stdout=stdout,
                         compile_ms=compile_ms), False

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
        # Records hold keyword arguments only; positional ones are named below or refused.
        arguments: dict[str, Any] = dict(kwargs)
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
                arguments = _bind(name, schema, args, kwargs)
            except _BadArguments as exc:
                error = str(exc)
            else:
                problems = schema_errors(arguments, schema) if schema is not None else []
                if problems:
                    error = f"invalid arguments for tool {name!r}: " + "; ".join(problems)
                else:
                    try:
                        raw = fn(**arguments)
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
