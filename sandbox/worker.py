"""The worker process: ``python -m sandbox.worker CONFIG_JSON``.

Started by the host as a fresh interpreter (never forked from it). It imports everything
it will need, hardens itself (``sandbox.hardening``), says ``ready``, then serves runs one
at a time over its stdin/stdout pipes (moved to private fds; 0/1/2 become /dev/null).
Every message is a length-prefixed JSON frame. The worker is trusted code until it loads
skill code; after that the host treats everything it says as untrusted.
"""

from __future__ import annotations

import builtins
import gc
import json
import math
import os
import resource
import sys
import time
from collections import OrderedDict
from typing import Any

from . import protocol
from .hardening import harden
from .models import PolicyViolation, ToolError
from .policy import compile_source, source_digest
from .runtime import BASE_BUILTINS, NotPlainJSON, RunNamespace, build_module_proxies, to_plain

MAX_REQUEST_BYTES = 256 * 1024 * 1024
CACHE_SIZE = 256
MAX_MESSAGE_CHARS = 2000
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

    __slots__ = ("closed", "limits", "files", "namespace", "compiled", "cache_hits")

    def __init__(self, limits: dict[str, Any]) -> None:
        self.compiled = 0
        self.cache_hits = 0
        self.closed = False
        self.limits = limits
        self.files: dict[str, int] = {}
        self.namespace: RunNamespace | None = None


class Worker:
    def __init__(self, rfd: int, wfd: int, modules: tuple[str, ...]) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.reader = protocol.FrameReader(rfd)
        self.modules = modules
        self.proxies = build_module_proxies(modules, freeze=True)
        self.cache: OrderedDict[str, Any] = OrderedDict()
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

    def abort(self, run: _Run, limit: str, message: str, stdout: str) -> None:
        """End the run now, whatever skill code would do next: report, then exit."""
        try:
            self.send({
                "op": "done", "ok": False, "limit": limit, "recycle": True, "stdout": stdout,
                "error": {"type": "LimitExceeded", "message": message, "line": None},
            })
        finally:
            os._exit(0)

    # -- compile ---------------------------------------------------------------------------
    def compiled(self, run: _Run, source: str) -> tuple[str, Any]:
        digest = source_digest(source)
        hit = self.cache.get(digest)
        if hit is not None:
            self.cache.move_to_end(digest)
            run.cache_hits += 1
            return digest, hit
        run.compiled += 1
        filename = f"{_FILE_PREFIX}{digest[:16]}>"
        compiled = compile_source(source, filename, self.modules)
        self.cache[digest] = compiled
        if len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)
        return digest, compiled

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
            if len(text) > cap:
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
        if reply.get("op") != "tool_result":
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
        try:
            message = str(exc)
            if type(message) is not str:
                message = ""
        except BaseException:
            message = "<unprintable exception>"
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

    def reset_shared_state(self) -> None:
        """Per-worker module state a previous run may have changed through public API."""
        if "decimal" in self.modules:
            import decimal

            decimal.setcontext(decimal.Context())
        if "random" in self.modules:
            import random

            random.seed()

    def run(self, msg: dict[str, Any]) -> None:
        limits = msg["limits"]
        run = _Run(limits)
        self.reset_shared_state()
        self.arm(limits)
        result: dict[str, Any]
        value_text = None
        try:
            result, value_text = self._execute(run, msg)
        except BaseException as exc:  # noqa: BLE001 - skill code can raise anything
            result = {"ok": False, "error": self.error_from(run, exc), "limit": None}
            if isinstance(exc, MemoryError):
                result["limit"] = "memory"
                result["error"]["message"] = (
                    f"memory limit of {limits['memory_mb']} MB exceeded"
                    + (f" ({result['error']['message']})" if result["error"]["message"] else "")
                )
        stdout = ""
        try:
            if run.namespace is not None:
                stdout = run.namespace.output()
        except BaseException:
            stdout = ""
        run.closed = True
        try:
            if run.namespace is not None:
                run.namespace.close()
            run.namespace = None
            gc.collect()
        except BaseException:
            result.setdefault("recycle", True)
        result["op"] = "done"
        result["stdout"] = stdout
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result["cpu"] = usage.ru_utime + usage.ru_stime
        result["compiled"] = run.compiled
        result["cache_hits"] = run.cache_hits
        text = protocol.dumps(result)
        if value_text is not None:
            text = text[:-1] + ',"value":' + value_text + "}"
        self.send_text(text)

    def _execute(self, run: _Run, msg: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        sources = msg["sources"]
        entry = msg["entry"]
        args = msg["args"]
        index = 0
        try:
            called: set[str] = set()
            defined: set[str] = set()
            codes = []
            for index, source in enumerate(sources):
                digest, compiled = self.compiled(run, source)
                run.files[f"{_FILE_PREFIX}{digest[:16]}>"] = index
                codes.append(compiled.code)
                called |= compiled.called
                defined |= compiled.defined
        except PolicyViolation as exc:
            kind = getattr(exc, "kind", "PolicyViolation")
            return {"ok": False, "limit": None, "error": {
                "type": kind, "message": _short(exc.message), "line": exc.line,
                "source_index": index}}, None

        tool_names = set(msg["tools"])
        # Calls to names nothing defines become stubs too, so calling a tool that is not
        # on the list reaches the host, is refused there and is recorded.
        stub_names = tool_names | (called - defined - self.builtin_names)
        tools = {name: self.make_tool(run, name) for name in stub_names}
        cap = int(run.limits["max_output_bytes"])

        def overflow(text: str) -> None:
            self.abort(run, "output", f"output limit of {cap} bytes exceeded", text)

        ns = RunNamespace(self.proxies, tools, cap, overflow)
        run.namespace = ns
        g = ns.globals
        for code in codes:
            exec(code, g)  # noqa: S102 - restricted code in a restricted namespace
        fn = g.get(entry)  # the globals only: tools and builtins live in __builtins__
        if fn is None:
            return {"ok": False, "limit": None, "error": {
                "type": "NameError", "line": None,
                "message": f"entry function {entry!r} is not defined by the skill code"}}, None
        if not callable(fn):
            return {"ok": False, "limit": None, "error": {
                "type": "TypeError", "line": None,
                "message": f"entry {entry!r} is not a function"}}, None
        value = fn(**args)
        try:
            plain = to_plain(value)
            value_text = protocol.dumps(plain)
        except (NotPlainJSON, ValueError, RecursionError) as exc:
            return {"ok": False, "limit": None, "error": {
                "type": "ResultError", "line": None,
                "message": _short(f"the result is not plain JSON: {exc}")}}, None
        max_bytes = int(run.limits["max_result_bytes"])
        if len(value_text) > max_bytes or len(value_text.encode("utf-8", "surrogatepass")) > max_bytes:
            return {"ok": False, "limit": "result_size", "recycle": True, "error": {
                "type": "LimitExceeded", "line": None,
                "message": f"result is larger than {max_bytes} bytes of JSON"}}, None
        return {"ok": True, "limit": None, "error": None}, value_text


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


def main(argv: list[str]) -> int:
    config = json.loads(argv[1]) if len(argv) > 1 else {}
    modules = tuple(config.get("modules", ()))
    root = config.get("root") or "/"
    debug = bool(config.get("debug"))

    # Private protocol fds; 0/1 (and 2 unless debugging) become /dev/null.
    rfd = os.dup(0)
    wfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if not debug:
        os.dup2(devnull, 2)
    os.close(devnull)
    _close_other_fds({rfd, wfd})
    os.set_inheritable(rfd, False)
    os.set_inheritable(wfd, False)

    worker = Worker(rfd, wfd, modules)
    _prewarm(modules)
    selftest = bool(config.get("selftest"))
    if selftest:
        from .selftest import probe  # imported before hardening: nothing opens after
    report = harden(root, keep_fds=(rfd, wfd), seccomp=not config.get("no_seccomp"))
    report["env"] = sorted(os.environ)
    report["python"] = sys.version.split()[0]
    gc.collect()
    gc.freeze()  # boot objects are never scanned again: per-run gc.collect stays cheap
    if selftest:
        report["probe"] = probe()
    worker.send({"op": "ready", "pid": os.getpid(), "hardening": report})

    while True:
        try:
            msg = worker.reader.read(MAX_REQUEST_BYTES)
        except (EOFError, OSError):
            return 0
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "run":
            worker.run(msg)
        elif op == "exit":
            return 0
        else:
            return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
