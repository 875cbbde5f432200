"""Red team, process level: what holds if the language barrier ever broke.

The self-test starts a real hardened worker and runs *trusted* code in it after
hardening: the same full Python an attacker would have after escaping RestrictedPython.
Also: the worker's environment and file descriptors, crash recovery, and the host's
handling of a worker that speaks garbage.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from redteam import OK_CODE

from sandbox import Limits, Sandbox
from sandbox.host import _Child, _Deadline, _Protocol, _Worker
from sandbox.protocol import encode, frame
from sandbox.results import finish

IS_ROOT = os.geteuid() == 0
IS_LINUX_X86 = platform.system() == "Linux" and platform.machine() == "x86_64"
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _selftest(no_seccomp: bool = False) -> dict:
    root = tempfile.mkdtemp(prefix="sandbox-selftest-")
    try:
        config = {"modules": ["json"], "root": root, "selftest": True, "no_seccomp": no_seccomp}
        proc = subprocess.Popen(
            [sys.executable, "-E", "-s", "-B", "-m", "sandbox.worker", json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=PACKAGE_PARENT, env={},
        )
        try:
            (size,) = struct.unpack(">I", proc.stdout.read(4))
            msg = json.loads(proc.stdout.read(size))
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
        return msg["hardening"]
    finally:
        os.rmdir(root)


def test_escaped_code_still_cannot_touch_the_system():
    report = _selftest()
    probe = report["probe"]
    assert probe, report
    for name, outcome in probe.items():
        assert outcome.startswith("blocked"), f"{name}: {outcome}"
    if IS_LINUX_X86:
        assert report["seccomp"] == "on"
        assert report["no_new_privs"] == "on"


def test_layers_hold_without_seccomp_too():
    """With the syscall filter off, privilege drop, chroot and rlimits still stop these."""
    report = _selftest(no_seccomp=True)
    probe = report["probe"]
    # Process limits bind everyone: no raising hard limits, no new processes (NPROC=0
    # for the dropped uid; as non-root the host's own uid may still have headroom).
    assert probe["raise_rlimit_nofile"].startswith("blocked")
    if IS_ROOT:
        assert report["uid"] == 65534 and report["chroot"] == "on"
        for name in ("open_read_etc_passwd", "open_write_tmp", "fork", "exec", "kill_pid_1",
                     "setuid_0", "unlink"):
            assert probe[name].startswith("blocked"), f"{name}: {probe[name]}"
        assert report["netns"] == "on"


def test_worker_hardening_report(sandbox):
    report = sandbox.hardening()
    assert report["rlimits"]["RLIMIT_NPROC"] == 0
    assert report["rlimits"]["RLIMIT_FSIZE"] == 0
    assert report["rlimits"]["RLIMIT_CORE"] == 0
    assert report["fds"] == [0, 1, 2, 3, 4]  # /dev/null x3 and the two protocol pipes
    if IS_LINUX_X86:
        assert report["seccomp"] == "on"
    if IS_ROOT:
        assert report["uid"] == 65534 and report["gid"] == 65534 and report["groups"] == []
        assert report["chroot"] == "on" and report["netns"] == "on"


def test_worker_environment_is_empty_and_fds_are_not_inherited():
    os.environ["SANDBOX_TEST_SECRET"] = "hunter2"
    leaked_fd = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaked_fd, True)
    try:
        with Sandbox(workers=1) as box:
            report = box.hardening()
    finally:
        del os.environ["SANDBOX_TEST_SECRET"]
        os.close(leaked_fd)
    assert set(report["env"]) <= {"LC_CTYPE"}  # set by the interpreter itself (PEP 538)
    assert report["fds"] == [0, 1, 2, 3, 4]


def test_worker_killed_from_outside_is_a_result_and_is_replaced(sandbox):
    victim = {}

    def spin_then_kill():
        time.sleep(0.3)
        if "pid" in victim:
            os.kill(victim["pid"], signal.SIGSEGV)

    # The tool runs in the host: it notes which child is busy with this skill.
    code = "def f():\n    mark()\n    while True:\n        pass\n"

    def mark():
        for w in sandbox._pool.workers:
            if w not in sandbox._pool.idle and w.current is not None:
                victim.setdefault("pid", w.current.pid)
        return 1

    t = threading.Thread(target=spin_then_kill)
    t.start()
    r = sandbox.run(code, entry="f", tools={"mark": mark},
                    limits=Limits(cpu_seconds=5, wall_seconds=10))
    t.join()
    assert not r.ok and r.error.type == "WorkerCrashed" and "SIGSEGV" in r.error.message
    assert sandbox.run(OK_CODE, entry="ok").value == 42


def _fake_worker() -> tuple[_Worker, int]:
    """A _Worker whose current child is a pipe the test writes into."""
    r, w = os.pipe()
    worker = _Worker.__new__(_Worker)
    worker.current = _Child(-1, 0, os.open(os.devnull, os.O_WRONLY), r)
    worker.buf = bytearray()
    worker.sock_closed = True  # no zygote behind it
    return worker, w


@pytest.mark.parametrize("garbage, error", [
    (struct.pack(">I", 2**31), "exceeds|cap"),
    (frame("not json at all"), "invalid JSON"),
    (frame("[1, 2, 3]"), "non-object"),
    (frame("{\"a\": " + "[" * 20000 + "]" * 20000 + "}"), "invalid JSON"),
])
def test_host_rejects_garbage_frames(garbage, error):
    worker, w = _fake_worker()
    try:
        os.write(w, garbage[:60000])
        with pytest.raises(_Protocol, match=error):
            worker.recv(time.monotonic() + 2, 1 << 20, None)
    finally:
        os.close(w)
        worker.current.close()


def test_host_times_out_on_a_silent_worker():
    worker, w = _fake_worker()
    try:
        os.write(w, encode({"op": "call"})[:7])  # a partial frame, then silence
        started = time.monotonic()
        with pytest.raises(_Deadline):
            worker.recv(time.monotonic() + 0.3, 1 << 20, None)
        assert time.monotonic() - started < 2
    finally:
        os.close(w)
        worker.current.close()


def test_malformed_done_frames_are_protocol_errors(sandbox):
    for msg in ({"op": "done", "ok": "yes"}, {"op": "done", "ok": True},
                {"op": "done", "ok": False, "error": "x", "stdout": ""},
                {"op": "done", "ok": False, "limit": "everything", "stdout": ""}):
        with pytest.raises(_Protocol):
            finish(sandbox._pool, _QuietWorker(), -1, msg, [], Limits())


class _QuietWorker:
    """What finish asks of a worker, for a frame that never came from one."""

    last_frame_bytes = 0
    base_bytes = 0

    @staticmethod
    def peak_memory_bytes(pid, field=b"VmPeak:"):
        return None


def _scripted_worker(frames: list[dict]) -> _Worker:
    """A _Worker whose current child has already sent ``frames`` and closed its pipe."""
    worker, w = _fake_worker()
    worker.runs = 0
    worker.exits = {0: 0}
    worker.last_frame_bytes = 0
    worker.killed_by_us = False
    worker.base_bytes = 0
    os.write(w, b"".join(encode(f) for f in frames))
    os.close(w)
    return worker


def test_compiled_code_is_taken_only_from_a_childs_first_frame_when_asked_for():
    """What a child compiled is cached only from its first frame, sent before any skill
    code runs, and only when the request left code out: skill code that escaped the
    language could otherwise plant code for later runs of the Sandbox."""
    entry = {"code": "YQ==", "called": [], "defined": []}
    done = {"op": "done", "ok": True, "stdout": "", "value": 1}
    call = {"op": "call", "name": "t", "args": [], "kwargs": {}}
    digest = "d" * 64
    with Sandbox(workers=1, code_cache=True) as box:
        cache = box._pool.code_cache
        for frames, fill in [
            ([call, {"op": "compiled", "codes": [entry]}, done], [digest]),  # after a call
            ([{"op": "compiled", "codes": [entry]}, done], None),  # not asked for
            ([{"op": "compiled", "codes": [entry]}, done], [None]),  # the code was sent
            ([{"op": "compiled", "codes": [entry, entry]}, done], [digest]),  # wrong shape
        ]:
            worker = _scripted_worker(frames)
            try:
                result, _ = box._execute(worker, b"", Limits(), {"t": lambda: 1}, {}, [], fill)
            finally:
                worker.end_child()
            assert result.error is not None and result.error.type == "ProtocolError", result
            assert len(cache) == 0
        worker = _scripted_worker([{"op": "compiled", "codes": [entry]}, done])
        try:
            result, _ = box._execute(worker, b"", Limits(), {}, {}, [], [digest])
        finally:
            worker.end_child()
        assert result.ok and result.value == 1
        assert cache.get(digest) == entry
