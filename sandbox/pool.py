"""The worker pool: zygote processes (``sandbox.worker``), the per-run children they fork,
and the host's end of their socket and pipe protocol.

Nothing a child sends is trusted: frames are size-capped and parsed as JSON only. The
zygote's own socket messages (forked children, exit statuses) are trusted.
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
from collections.abc import Callable
from typing import Any

from . import protocol
from .codecache import CODE_CACHE_BYTES, CodeCache

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WORKER_MODULE = "sandbox.worker"
_TICK = 0.05  # seconds between CPU checks of a busy worker
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: How long a retired zygote gets to reap its children and exit before it is killed.
RETIRE_SECONDS = 1.0
#: The largest "ready" frame a starting worker may send (its hardening report).
READY_FRAME_BYTES = 1 << 20
#: Bytes read from a pipe per read call.
READ_CHUNK_BYTES = 1 << 20
#: Child exit statuses a worker keeps (serials only grow; the oldest half is dropped past it).
MAX_EXIT_RECORDS = 4096
#: Child CPU times a worker keeps (the newest).
MAX_EXIT_CPU_RECORDS = 64


class _Deadline(Exception):
    """A deadline passed (the run's wall clock, or the wait for a child)."""


class _Died(Exception):
    """The zygote is gone or unusable (it died, closed its socket, or never started)."""


class _Gone(Exception):
    """The current child's pipe broke (it died): its exit status tells why."""


class _Protocol(Exception):
    """A worker sent something malformed."""


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
    pipes) and reports how each child ended (``wait4``); the host sends it nothing (its
    socket's EOF tells it to stop). Each run uses one child, which is killed and whose
    pipes are closed afterwards. Nothing a child sends is trusted.
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
        #: The zygote's address space when it said ready: what every child starts with
        #: (a forked child's VmPeak starts at its VmSize), so not the run's own memory.
        self.base_bytes = 0
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
        if len(self.exits) > MAX_EXIT_RECORDS:  # serials only grow: old ones are never asked about
            for key in sorted(self.exits)[:MAX_EXIT_RECORDS // 2]:
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
    def peak_memory_bytes(pid: int, field: bytes = b"VmPeak:") -> int | None:
        """The peak address space of ``pid`` (VmPeak, what RLIMIT_AS bounds), from /proc;
        another field of /proc/PID/status with ``field`` (``b"VmSize:"``)."""
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(field):
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
                    while len(self.exit_cpu) > MAX_EXIT_CPU_RECORDS:
                        self.exit_cpu.pop(next(iter(self.exit_cpu)))
        if self.sock_closed:
            raise _Died("the sandbox zygote closed its socket")

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
                data = os.read(fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                return True
            except OSError as exc:
                raise _Died(str(exc)) from None
            if not data:
                return False
            buf += data
            if len(data) < READ_CHUNK_BYTES:
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
            msg = self._frame(self.buf, READY_FRAME_BYTES)
            if msg is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if timeout <= 0:
                    raise _Died("not ready yet")
                raise _Died(f"worker did not start within {timeout:.0f} s")
            poller.poll(max(1, int(min(remaining, _TICK) * 1000)))
            if not self._read_into(self.ready_fd, self.buf):
                if self._frame(self.buf, READY_FRAME_BYTES) is None:
                    raise _Died(f"worker closed its pipe{self._stderr_tail()}")
        self.buf.clear()
        if msg.get("op") != "ready":
            raise _Died("worker did not say ready")
        self.hardening = msg.get("hardening") if isinstance(msg.get("hardening"), dict) else {}
        self.base_bytes = self.peak_memory_bytes(self.pid, b"VmSize:") or 0
        self.ready = True


# --------------------------------------------------------------------------------------
# The pool (holds no reference to the Sandbox, so a forgotten Sandbox can be collected)
# --------------------------------------------------------------------------------------
class _Pool:
    """The workers of one Sandbox, and everything it keeps: nothing here is shared with
    another Sandbox (its own zygotes, queue, root directory, stderr log and code cache)."""

    def __init__(self, size: int, modules: tuple[str, ...], max_runs: int, debug: bool,
                 code_cache: bool = False) -> None:
        self.size = size
        self.max_runs = max_runs
        self.debug = debug
        self.root = tempfile.mkdtemp(prefix="sandbox-root-")
        self.config = {"modules": list(modules), "root": self.root, "debug": debug,
                       "max_runs": max_runs}
        #: Compiled code of this Sandbox's runs, for its later runs (None: off).
        self.code_cache = CodeCache(CODE_CACHE_BYTES) if code_cache else None
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
