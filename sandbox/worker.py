"""The worker process: ``python -m sandbox.worker CONFIG_JSON``: a zygote.

Started by the host as a fresh interpreter (never forked from the host). It imports
everything it will need, hardens itself (``sandbox.hardening``, stage 1), says ``ready``,
and from then on never runs skill code: for every run it forks one child, and that child
(stage 2 hardening: no processes, a second seccomp filter) serves exactly one run and
exits. Every run therefore starts from the zygote's state, which no run ever touched:
isolation by construction, not by resetting caches.

Channels (length-prefixed JSON frames on pipes, JSON messages on the socket): each child
has its own private request and reply pipes, whose host ends the zygote hands to the host
over a Unix socket (``SCM_RIGHTS``) with the child's pid; no child can read another's
requests, and a dead child's leftovers die with its pipes. On the same socket the zygote
reports how each child ended (``wait4``). A spare child is always forked ahead, so a fork
is never on a run's critical path.

The zygote holds nothing any caller sent: it never compiles, caches or even receives a
skill source (each child compiles its own run's sources; compiled code a Sandbox keeps
for reuse lives in the host, ``sandbox.codecache``), so no run can grow it, keep it busy,
or plant strings that later children inherit. Its per-run work is one fork and one reap.
"""

from __future__ import annotations

import base64
import builtins
import collections
import errno
import fcntl
import gc
import json
import marshal
import math
import os
import resource
import select
import signal
import socket
import sys
import time
import types
from typing import Any

from . import protocol
from .codecache import MAX_CODE_FRAME_CHARS, entry_size
from .hardening import harden, harden_child, prepare_child
from .models import PolicyViolation, ToolError
from .policy import CompiledSource, compile_source, source_digest
from .runtime import BASE_BUILTINS, NotPlainJSON, RunNamespace, build_module_proxies, to_plain

MAX_REQUEST_BYTES = 256 * 1024 * 1024
MAX_MESSAGE_CHARS = 2000
#: Children the zygote keeps forked: the one serving a run and one spare, ready for the
#: next run (so a fork is never on a run's critical path).
LIVE_CHILDREN = 3
#: How often the zygote retries a message the host's socket did not take (milliseconds).
RETRY_MS = 20
#: Largest control message the zygote reads (the host sends none but its socket's EOF).
CONTROL_MESSAGE_BYTES = 4096
#: A child's private request/reply pipes, at fixed numbers.
CHILD_REQUEST_FD = 3
CHILD_REPLY_FD = 4
#: The zygote's own address-space cap (it only forks and reaps: ~30-45 MB).
ZYGOTE_MEMORY_MB = 256
#: The zygote's CPU budget, a backstop (``RLIMIT_CPU``): its work per child (one fork,
#: one reap, two socket messages: ~0.3-1 ms) times this margin, for every child it may
#: fork in its life (``max_runs_per_worker`` + ``LIVE_CHILDREN``), plus a constant.
ZYGOTE_CPU_SECONDS_PER_CHILD = 0.02
ZYGOTE_CPU_SLACK_SECONDS = 10.0
#: Error types only the sandbox produces; a skill exception class of the same name is
#: reported as ``skill:<name>`` (a class named LimitExceeded is not a limit report).
RESERVED_TYPES = frozenset({
    "LimitExceeded", "WorkerCrashed", "PolicyViolation", "ResultError", "SandboxClosed",
    "ProtocolError", "SandboxUnavailable",
})
_MB = 1024 * 1024
_FILE_PREFIX = "<skill:"


# Modules that the vetted modules import lazily, inside functions (found by scanning
# their sources for function-level imports), and codecs skill code may name: after
# hardening nothing can be opened, so they are imported up front.
_LAZY_IMPORTS = (
    "_strptime", "heapq", "copy", "decimal", "fractions", "unicodedata", "warnings",
    "statistics", "random", "time", "typing", "weakref", "types", "locale", "bisect",
    "encodings.ascii", "encodings.latin_1", "encodings.utf_16", "encodings.utf_32",
    "encodings.utf_8_sig", "encodings.cp1252", "encodings.idna",
    "encodings.unicode_escape", "encodings.raw_unicode_escape", "encodings.base64_codec",
    "encodings.hex_codec",
)


def _prewarm(modules: tuple[str, ...]) -> None:
    """Load lazily imported pieces now: after hardening nothing can be opened."""
    import importlib

    for name in _LAZY_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import datetime
    import re
    import statistics

    datetime.datetime.strptime("2024-01-02", "%Y-%m-%d")
    time.strftime("%Y")
    re.compile(r"(?i)\w+\d*\s?").findall("warm up 1")
    statistics.mean([1, 2])
    statistics.median([1, 2, 3])
    json.loads(json.dumps({"a": [1.5, "x", None]}))
    for codec in ("utf-8", "ascii", "latin-1", "utf-16", "utf-32", "utf-8-sig", "cp1252"):
        "warm".encode(codec).decode(codec, "replace")
    re.compile(r"\N{LATIN SMALL LETTER A}")  # re's parser imports unicodedata lazily
    for name in modules:
        __import__(name)
    if "decimal" in modules:
        import decimal

        decimal.Decimal("1.1") + 1
    if "unicodedata" in modules:
        import unicodedata

        unicodedata.normalize("NFKC", "warm")
    if "random" in modules:
        import random

        random.random()


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "..."


class _Run:
    """Per-run state shared by the tool stubs and the output collector."""

    __slots__ = ("closed", "limits", "files", "namespace", "compiled", "cache_hits",
                 "compile_ms", "fresh")

    def __init__(self, limits: dict[str, Any]) -> None:
        self.compile_ms = 0.0
        #: (index, compiled) of the sources this child compiled itself.
        self.fresh: list[tuple[int, CompiledSource]] = []
        self.compiled = 0
        self.cache_hits = 0
        self.closed = False
        self.limits = limits
        self.files: dict[str, int] = {}
        self.namespace: RunNamespace | None = None


class Worker:
    def __init__(self, rfd: int, wfd: int, modules: tuple[str, ...],
                 seccomp: bool = True) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.reader = protocol.FrameReader(rfd)
        self.modules = modules
        self.seccomp = seccomp
        self.debug = False
        self.proxies = build_module_proxies(modules, freeze=True)
        # Every real builtin name too: calling ``open`` or ``eval`` stays a NameError
        # rather than becoming a (refused) tool call.
        self.builtin_names = frozenset(BASE_BUILTINS) | frozenset(dir(builtins)) | {
            "printed",
        }

    # -- plumbing ------------------------------------------------------------------------
    def send(self, obj: Any) -> None:
        protocol.write_all(self.wfd, protocol.encode(obj))

    def send_text(self, text: str) -> None:
        protocol.write_all(self.wfd, protocol.frame(text))

    def abort(self, run: _Run, message: str, stdout: str) -> None:
        """End the run now, whatever skill code would do next: report, then exit."""
        try:
            self.send({
                "op": "done", "ok": False, "stdout": stdout,
                "error": {"type": "LimitExceeded", "message": message, "line": None},
            })
        finally:
            os._exit(0)

    # -- compile ---------------------------------------------------------------------------
    @staticmethod
    def loaded(entry: Any) -> CompiledSource | None:
        """The code the host sent for a source (compiled by an earlier child of this
        Sandbox, before that child ran any skill code), or None when it does not load."""
        try:
            code = marshal.loads(base64.b64decode(entry["code"], validate=True))
            if type(code) is not types.CodeType:
                return None
            return CompiledSource(code, frozenset(entry["called"]), frozenset(entry["defined"]))
        except Exception:  # noqa: BLE001 - then the child compiles the source itself
            return None

    def compiled(self, run: _Run, index: int, source: str, entry: Any) -> CompiledSource:
        if entry is not None:
            hit = self.loaded(entry)
            if hit is not None:
                run.cache_hits += 1
                return hit
        run.compiled += 1
        t0 = time.perf_counter()
        filename = f"{_FILE_PREFIX}{source_digest(source)[:16]}>"
        try:
            compiled = compile_source(source, filename, self.modules)
        finally:
            run.compile_ms += (time.perf_counter() - t0) * 1000.0
        run.fresh.append((index, compiled))
        return compiled

    def send_compiled(self, run: _Run, count: int) -> None:
        """Before any skill code runs: the code objects this child compiled, marshalled,
        for the host's code cache (what does not fit in one frame is left out, as null)."""
        codes: list[dict[str, Any] | None] = [None] * count
        room = MAX_CODE_FRAME_CHARS
        for index, compiled in run.fresh:
            try:
                data = marshal.dumps(compiled.code)  # type: ignore[arg-type]
                if (len(data) + 2) // 3 * 4 > room:
                    continue
                entry = {
                    "code": base64.b64encode(data).decode("ascii"),
                    "called": sorted(compiled.called), "defined": sorted(compiled.defined),
                }
            except (ValueError, MemoryError):
                continue
            size = entry_size(entry) + 64
            if size <= room:
                room -= size
                codes[index] = entry
        self.send({"op": "compiled", "codes": codes})

    # -- tools -----------------------------------------------------------------------------
    def make_tool(self, run: _Run, name: str) -> Any:
        worker = self

        def tool(*args: Any, **kwargs: Any) -> Any:
            return worker.call_tool(run, name, args, kwargs)

        tool.__name__ = tool.__qualname__ = name
        return tool

    def call_tool(self, run: _Run, name: str, args: tuple, kwargs: dict) -> Any:
        if run.closed:
            raise ToolError(f"tool {name!r} called after the run ended")
        cap = run.limits["max_result_bytes"]
        try:
            text = protocol.dumps({
                "op": "call", "name": name,
                "args": to_plain(list(args)), "kwargs": to_plain(kwargs),
            })
            if len(text) > cap or protocol.utf8_len(text) > cap:
                raise ValueError(f"arguments are larger than {cap} bytes")
        except (NotPlainJSON, ValueError, RecursionError) as exc:
            text = protocol.dumps({
                "op": "call", "name": name,
                # Placeholders for at most 20 arguments, with short names: a refused
                # call must not ship megabytes (f(*range(10**6)) was 7 MB of "<int>").
                "args": [f"<{type(a).__name__}>" for a in args[:20]],
                "kwargs": {_short(str(k))[:100]: f"<{type(v).__name__}>"
                           for k, v in list(kwargs.items())[:20]},
                "invalid": _short(str(exc)),
            })
        self.send_text(text)
        reply = self.reader.read(MAX_REQUEST_BYTES)
        if not isinstance(reply, dict) or reply.get("op") != "tool_result":
            os._exit(3)  # the host wants this run over
        if reply.get("ok"):
            return reply.get("result")
        raise ToolError(reply.get("error") or f"tool {name!r} failed")

    # -- runs ------------------------------------------------------------------------------
    def arm(self, limits: dict[str, Any]) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        used = usage.ru_utime + usage.ru_stime
        soft = int(math.ceil(used + float(limits["cpu_seconds"]))) + 1
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        mem_hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        mem = int(limits["memory_mb"]) * _MB
        if mem_hard != resource.RLIM_INFINITY:
            mem = min(mem, mem_hard)
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem_hard))

    def error_from(self, run: _Run, exc: BaseException) -> dict[str, Any]:
        try:
            kind = type(exc).__name__
            if type(kind) is not str:
                kind = "Exception"
        except BaseException:
            kind = "Exception"
        if kind in RESERVED_TYPES:
            kind = f"skill:{kind}"
        try:
            message = str(exc)
            if type(message) is not str:
                message = ""
        except BaseException:
            message = "<unprintable exception>"
        if not message and type(exc) is MemoryError:
            message = "an allocation failed (the run's address space is capped at memory_mb)"
        line = None
        index = None
        try:
            tb = exc.__traceback__
            while tb is not None:
                filename = tb.tb_frame.f_code.co_filename
                if filename in run.files:
                    line = tb.tb_lineno
                    index = run.files[filename]
                tb = tb.tb_next
        except BaseException:
            pass
        return {"type": _short(kind), "message": _short(message), "line": line,
                "source_index": index}

    def serve(self, msg: dict[str, Any]) -> bool:
        """Child only: serve one run (or one check), send ``done``; True when it succeeded."""
        limits = msg["limits"]
        run = _Run(limits)
        self.arm(limits)
        result: dict[str, Any]
        value_text = None
        try:
            if msg.get("op") == "check":
                result = self._check(run, msg)
                if result.get("ok"):
                    value_text = "null"
            else:
                result, value_text = self._execute(run, msg)
        except BaseException as exc:  # noqa: BLE001 - skill code can raise anything
            result = {"ok": False, "error": self.error_from(run, exc)}
        stdout = ""
        try:
            if run.namespace is not None:
                stdout = run.namespace.output()
        except BaseException:
            stdout = ""
        run.closed = True
        # No clean-up: this process ends right after the reply (os._exit), so no
        # finalizer of the run's objects ever runs, here or in a later run.
        result["op"] = "done"
        result["stdout"] = stdout
        result["compiled"] = run.compiled
        result["cache_hits"] = run.cache_hits
        result["compile_ms"] = round(run.compile_ms, 3)
        text = protocol.dumps(result)
        if value_text is not None:
            text = text[:-1] + ',"value":' + value_text + "}"
        self.send_text(text)
        return bool(result.get("ok"))

    def _codes(self, run: _Run, sources: list[str],
               given: list[Any] | None = None) -> tuple[list[Any], set, set] | dict:
        index = 0
        try:
            called: set[str] = set()
            defined: set[str] = set()
            codes = []
            for index, source in enumerate(sources):
                entry = given[index] if given is not None and index < len(given) else None
                compiled = self.compiled(run, index, source, entry)
                run.files[compiled.code.co_filename] = index  # type: ignore[attr-defined]
                codes.append(compiled.code)
                called |= compiled.called
                defined |= compiled.defined
        except PolicyViolation as exc:
            kind = getattr(exc, "kind", "PolicyViolation")
            return {"ok": False, "compile_error": True, "error": {
                "type": kind, "message": _short(exc.message), "line": exc.line,
                "source_index": index}}
        return codes, called, defined

    def _check(self, run: _Run, msg: dict[str, Any]) -> dict[str, Any]:
        got = self._codes(run, msg["sources"])
        if isinstance(got, dict):
            return got
        return {"ok": True, "error": None}

    def _execute(self, run: _Run, msg: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        sources = msg["sources"]
        entry = msg["entry"]
        args = msg["args"]
        given = msg.get("codes")
        got = self._codes(run, sources, given if isinstance(given, list) else None)
        if isinstance(got, dict):
            return got, None
        codes, called, defined = got
        if msg.get("cache") and run.fresh:
            # The host keeps what this child compiled for the Sandbox's later runs: sent
            # now, before any skill code runs in this process.
            self.send_compiled(run, len(sources))

        tool_names = set(msg["tools"])
        # Calls to names nothing defines become stubs too, so calling a tool that is not
        # on the list reaches the host, is refused there and is recorded.
        stub_names = tool_names | (called - defined - self.builtin_names)
        tools = {name: self.make_tool(run, name) for name in stub_names}
        cap = int(run.limits["max_output_bytes"])

        def overflow(text: str) -> None:
            self.abort(run, f"output limit of {cap} bytes exceeded", text)

        ns = RunNamespace(self.proxies, tools, cap, overflow)
        run.namespace = ns
        g = ns.globals
        for code in codes:
            exec(code, g)  # noqa: S102 - restricted code in a restricted namespace
        fn = g.get(entry)  # the globals only: tools and builtins live in __builtins__
        if fn is None:
            return {"ok": False, "error": {
                "type": "NameError", "line": None,
                "message": f"entry function {entry!r} is not defined by the skill code"}}, None
        if not callable(fn):
            return {"ok": False, "error": {
                "type": "TypeError", "line": None,
                "message": f"entry {entry!r} is not a function"}}, None
        value = fn(**args)
        try:
            plain = to_plain(value)
            value_text = protocol.dumps(plain)
        except (NotPlainJSON, ValueError, RecursionError) as exc:
            return {"ok": False, "error": {
                "type": "ResultError", "line": None,
                "message": _short(f"the result is not plain JSON: {exc}")}}, None
        max_bytes = int(run.limits["max_result_bytes"])
        if len(value_text) > max_bytes or protocol.utf8_len(value_text) > max_bytes:
            # The host measures the size itself: it gets the first max_bytes + 1 bytes.
            return {"ok": False, "value_head": protocol.utf8_head(value_text, max_bytes + 1),
                    "error": {"type": "LimitExceeded", "line": None,
                              "message": "the result is too large"}}, None
        return {"ok": True, "error": None}, value_text

    # -- the zygote ------------------------------------------------------------------------
    def zygote(self, sock: socket.socket) -> int:
        """Keep LIVE_CHILDREN children forked ahead; report each one (with its private
        pipes) and how it ended. Never run, compile or receive skill code here."""
        sig_r, sig_w = os.pipe()
        os.set_blocking(sig_r, False)
        os.set_blocking(sig_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(sig_w)
        self._zygote_fds = (sock.fileno(), sig_r, sig_w)
        live: dict[int, int] = {}  # pid -> serial
        self.serial = 0
        # Messages to the host wait here while its socket queue is full (a Unix socket
        # holds few datagrams): the zygote never blocks on the host.
        self.outbox: collections.deque[tuple[bytes, list[int]]] = collections.deque()
        sock.setblocking(False)
        poller = select.poll()
        poller.register(sig_r, select.POLLIN)
        stopping = False
        while True:
            self.flush(sock)
            while not stopping and not self.outbox and len(live) < LIVE_CHILDREN:
                pid, serial = self.fork_child(sock)
                live[pid] = serial
                self.flush(sock)
            poller.register(sock.fileno(), select.POLLIN | (select.POLLOUT if self.outbox else 0))
            try:
                wait = RETRY_MS if self.outbox else None
                events = poller.poll(wait if live or not stopping else 0)
            except InterruptedError:
                events = []
            for fd, mask in events:
                if fd == sig_r:
                    try:
                        while os.read(sig_r, 256):
                            pass
                    except BlockingIOError:
                        pass
                elif mask & (select.POLLIN | select.POLLHUP | select.POLLERR) and not stopping:
                    stopping = self.control(sock)
            self.reap(sock, live)
            if stopping:
                # The host closed the children's pipes: they end on EOF.
                for _, fds in self.outbox:
                    for fd in fds:
                        os.close(fd)
                self.outbox.clear()
                while live:
                    try:
                        pid, _ = os.wait()
                    except ChildProcessError:
                        break
                    live.pop(pid, None)
                return 0

    def flush(self, sock: socket.socket) -> None:
        while self.outbox:
            data, fds = self.outbox[0]
            try:
                if fds:
                    socket.send_fds(sock, [data], fds)
                else:
                    sock.send(data)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                    # ETOOMANYREFS: the user's descriptors in flight on Unix sockets are
                    # capped by RLIMIT_NOFILE; retried when the host has read some.
                    return
                # The host is gone: children see EOF on their pipes and end.
            self.outbox.popleft()
            for fd in fds:
                os.close(fd)

    def reap(self, sock: socket.socket, live: dict[int, int]) -> None:
        while True:
            try:
                pid, code, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            serial = live.pop(pid, None)
            self.outbox.append((protocol.dumps({
                "op": "exited", "pid": pid, "serial": serial, "status": code,
                "cpu": usage.ru_utime + usage.ru_stime,
            }).encode(), []))

    def control(self, sock: socket.socket) -> bool:
        """Handle one control message; True when the zygote must stop."""
        try:
            data = sock.recv(CONTROL_MESSAGE_BYTES)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not data:
            return True
        try:
            msg = json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            return False
        return isinstance(msg, dict) and msg.get("op") == "exit"

    def fork_child(self, sock: socket.socket) -> tuple[int, int]:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 0
            try:
                # A session (and so a scheduler autogroup) of its own: sharing the
                # zygote's, a woken child queued behind the group's fork and exit work
                # (measured: 4-6 ms wake-up latency on a loaded 2-core machine).
                os.setsid()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (*self._zygote_fds, req_w, rep_r, self.wfd):
                    os.close(fd)
                high_r = fcntl.fcntl(req_r, fcntl.F_DUPFD, CHILD_REPLY_FD + 1)
                high_w = fcntl.fcntl(rep_w, fcntl.F_DUPFD, CHILD_REPLY_FD + 1)
                os.close(req_r)
                os.close(rep_w)
                os.dup2(high_r, CHILD_REQUEST_FD, inheritable=False)
                os.dup2(high_w, CHILD_REPLY_FD, inheritable=False)
                os.close(high_r)
                os.close(high_w)
                self.child()
            except BaseException as exc:  # noqa: BLE001
                code = 4
                if self.debug:
                    try:
                        os.write(2, f"sandbox child: {type(exc).__name__}: {exc}\n".encode())
                    except OSError:
                        pass
            os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self.serial += 1
        fds = [req_w, rep_r]
        try:
            fds.append(os.pidfd_open(pid))
        except OSError:
            pass  # an older kernel: the host falls back to the pid
        self.outbox.append((protocol.dumps(
            {"op": "forked", "pid": pid, "serial": self.serial}).encode(), fds))
        return pid, self.serial

    def child(self) -> None:
        harden_child((0, 1, 2, CHILD_REQUEST_FD, CHILD_REPLY_FD), seccomp=self.seccomp)
        self.rfd, self.wfd = CHILD_REQUEST_FD, CHILD_REPLY_FD
        self.reader = protocol.FrameReader(self.rfd)  # private pipe: buffering is fine
        msg = self.reader.read(MAX_REQUEST_BYTES)  # EOFError when the host is done with us
        if not isinstance(msg, dict) or msg.get("op") not in ("run", "check"):
            return
        if not self.serve(msg):
            # Stay until the host has looked at this process (its peak memory: the host's
            # own evidence for a memory limit); EOF on the request pipe ends it.
            try:
                self.reader.read(1 << 16)
            except BaseException:  # noqa: BLE001
                pass


def _close_other_fds(keep: set[int]) -> None:
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _open_fds(limit: int = 64) -> list[int]:
    out = []
    for fd in range(limit):
        try:
            os.fstat(fd)
        except OSError:
            continue
        out.append(fd)
    return out


def _report_child(worker: Worker, selftest: bool, close: tuple[int, ...] = ()) -> dict[str, Any]:
    """Fork one child that hardens itself exactly as a run's child does and reports what
    held (and, in self-test mode, what the probe could still do). Its report is the
    honest description of the processes that run skill code."""
    r, w = os.pipe()
    req_r, req_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.close(req_w)
            # The same descriptors a run's child holds: 0-2, its request and reply pipes.
            for fd in (worker.wfd, *close):
                os.close(fd)
            high_r = fcntl.fcntl(req_r, fcntl.F_DUPFD, CHILD_REPLY_FD + 1)
            high_w = fcntl.fcntl(w, fcntl.F_DUPFD, CHILD_REPLY_FD + 1)
            os.close(req_r)
            os.close(w)
            os.dup2(high_r, CHILD_REQUEST_FD, inheritable=False)
            os.dup2(high_w, CHILD_REPLY_FD, inheritable=False)
            os.close(high_r)
            os.close(high_w)
            w = CHILD_REPLY_FD
            rep = harden_child((0, 1, 2, CHILD_REQUEST_FD, CHILD_REPLY_FD),
                               seccomp=worker.seccomp)
            rep["fds"] = _open_fds()
            if selftest:
                from .selftest import probe

                rep["probe"] = probe()
            protocol.write_all(w, protocol.encode(rep))
        except BaseException as exc:  # noqa: BLE001 - reported, not raised, in the child
            try:
                protocol.write_all(w, protocol.encode({"error": f"{type(exc).__name__}: {exc}"}))
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(0)
    os.close(w)
    os.close(req_r)
    os.close(req_w)
    try:
        msg = protocol.FrameReader(r).read(1 << 20)
    except (EOFError, OSError, ValueError):
        msg = {"error": "the report child died"}
    os.close(r)
    os.waitpid(pid, 0)
    return msg if isinstance(msg, dict) else {}


def _cap_zygote_cpu(max_runs: Any) -> int | str:
    """The zygote's CPU budget as a soft ``RLIMIT_CPU`` (whole seconds of its own CPU
    time, children not included): what its life's forks and reaps may cost. Past it the
    kernel ends the zygote (SIGXCPU) and the host starts another. Each child sets its own
    soft limit for its run (``Worker.arm``); the hard limit is unchanged."""
    runs = max_runs if isinstance(max_runs, int) and not isinstance(max_runs, bool) else 100
    usage = resource.getrusage(resource.RUSAGE_SELF)
    budget = (ZYGOTE_CPU_SECONDS_PER_CHILD * (max(runs, 1) + LIVE_CHILDREN)
              + ZYGOTE_CPU_SLACK_SECONDS)
    soft = int(math.ceil(usage.ru_utime + usage.ru_stime + budget))
    try:
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (OSError, ValueError) as exc:
        return f"failed: {exc}"
    return soft


def main(argv: list[str]) -> int:
    config = json.loads(argv[1]) if len(argv) > 1 else {}
    modules = tuple(config.get("modules", ()))
    root = config.get("root") or "/"
    debug = bool(config.get("debug"))
    seccomp = not config.get("no_seccomp")

    # fd 1 carries the ready report; the zygote's socket (if any) is passed by number.
    # 0/1 (and 2 unless debugging) become /dev/null.
    wfd = os.dup(1)
    sock_fd = None
    if isinstance(config.get("socket_fd"), int):
        sock_fd = os.dup(config["socket_fd"])
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if not debug:
        os.dup2(devnull, 2)
    os.close(devnull)
    keep = {wfd} | ({sock_fd} if sock_fd is not None else set())
    _close_other_fds(keep)
    for fd in keep:
        os.set_inheritable(fd, False)

    worker = Worker(-1, wfd, modules, seccomp=seccomp)
    worker.debug = debug
    _prewarm(modules)
    selftest = bool(config.get("selftest"))
    if selftest:
        from .selftest import probe  # noqa: F401 - imported before hardening
    report = harden(root, keep_fds=tuple(sorted(keep)), seccomp=seccomp)
    # The zygote only forks and reaps: a soft address-space cap of its own; each child
    # sets its run's limit (soft, up to the unchanged hard one).
    try:
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = ZYGOTE_MEMORY_MB * _MB
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        report["zygote_memory_mb"] = soft // _MB
    except (OSError, ValueError) as exc:
        report["zygote_memory_mb"] = f"failed: {exc}"
    report["zygote_cpu_seconds"] = _cap_zygote_cpu(config.get("max_runs"))
    prepare_child()
    zygote_report = dict(report)
    child = _report_child(worker, selftest, () if sock_fd is None else (sock_fd,))
    # What the host reports is what binds skill code: the child's view.
    report["zygote"] = zygote_report
    if "error" in child:
        report["child_error"] = child["error"]
    report["rlimits"] = {**report.get("rlimits", {}), **child.get("rlimits", {})}
    report["fds"] = child.get("fds", [])
    zygote_seccomp = report.get("seccomp")
    report["seccomp"] = (
        "on" if zygote_seccomp == "on" and child.get("seccomp") == "on"
        else child.get("seccomp", zygote_seccomp)
    )
    if selftest:
        report["probe"] = child.get("probe", {})
    report["env"] = sorted(os.environ)
    report["python"] = sys.version.split()[0]
    gc.collect()
    gc.freeze()  # boot objects are never scanned by a child's collections
    worker.send({"op": "ready", "pid": os.getpid(), "hardening": report})
    if sock_fd is None:
        return 0  # self-test: nothing to serve
    sock = socket.socket(fileno=sock_fd)
    return worker.zygote(sock)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
