"""Red team, what callers of the sandbox share (issue 23, items 4, 5 and availability).

The zygote used to compile every run's new sources for a cache its children inherited:
six attacker runs grew it 26 -> 300+ MB (later failures were reported as memory limits,
a valid 117 KB skill failed to compile, a victim run waited behind the zygote's compiles),
its interned strings answered "has anyone run a source naming this token?" through
``id()``, and ``compile_ms == 0`` answered "has anyone run this source?". Now the zygote
never receives a source; each run compiles its own (or, with ``code_cache=True``, gets
what an earlier run of the *same Sandbox* compiled); ``id`` is gone. And one Sandbox never
waits for another.
"""

from __future__ import annotations

import os
import secrets
import signal
import statistics
import threading
import time

from redteam import OK_CODE

from sandbox import Limits, Sandbox
from sandbox.worker import LIVE_CHILDREN

_MB = 1024 * 1024


def _status_bytes(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def _status_field(pid: int, field: str) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split()[1]
    except OSError:
        pass
    return ""


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _zygote(box: Sandbox) -> int:
    (worker,) = box._pool.workers
    return worker.pid


def _settle(box: Sandbox) -> None:
    """Let the zygote finish what the last run left it (reaping, forking the spares)."""
    (worker,) = box._pool.workers
    for _ in range(50):
        worker._pump_quietly()
        if len(worker.spares) >= LIVE_CHILDREN - 1:
            return
        time.sleep(0.02)


def _memory_holds(pid: int, needle: bytes) -> int:
    """How often ``needle`` occurs in the readable memory of process ``pid`` (root)."""
    hits = 0
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                hits += mem.read(hi - lo).count(needle)
            except (OSError, ValueError, OverflowError):
                continue
    return hits


def _inflating_source(tag: str, size: int = 60_000) -> str:
    """A valid source whose code object is ~150x its size (folded 4 KB constants)."""
    lines = ["def f():\n    a0 = 0\n"]
    n = 0
    total = len(lines[0])
    while total < size:
        n += 1
        line = f"    a{n} = 'x' * 4000 + '{tag}{n}'\n"
        lines.append(line)
        total += len(line)
    lines.append("    return 1\n")
    return "".join(lines)


#: A valid skill of ~117 KB (4,700 lines): ``v(0)`` ends in a ZeroDivisionError.
VICTIM = ("def v(n):\n    t = 0\n" + "".join(f"    t = t + n * {i} % 7\n" for i in range(4700))
          + "    return t // n\n")


# -- item 4: the zygote is no shared resource ---------------------------------------------
def test_six_inflating_runs_leave_the_zygote_as_it_was_and_the_victim_unharmed():
    assert 110_000 < len(VICTIM) < 125_000
    big = Limits(cpu_seconds=20, wall_seconds=60, memory_mb=512)
    # With the code cache on: what runs compile is kept in the host, never in the zygote
    # (and the victim's second run reuses its first run's compile).
    with Sandbox(workers=1, code_cache=True) as box:
        assert box.run(OK_CODE, entry="ok").ok
        _settle(box)
        zygote = _zygote(box)
        size, cpu = _status_bytes(zygote, "VmSize"), _cpu_seconds(zygote)
        for _ in range(6):
            r = box.run(_inflating_source(secrets.token_hex(4)), entry="f", limits=big)
            assert r.ok, r.error
        _settle(box)
        assert _zygote(box) == zygote
        grown = _status_bytes(zygote, "VmSize") - size
        spent = _cpu_seconds(zygote) - cpu
        # Before: +50 MB a run and 0.3-0.5 s of the zygote's CPU a run (its compiles).
        assert grown <= 4 * _MB, f"the zygote grew by {grown / _MB:.1f} MB"
        assert spent < 0.25, f"the zygote spent {spent:.2f} s of CPU on six runs"
        # The default memory_mb (256); time enough to compile 117 KB on a loaded machine.
        victim = Limits(cpu_seconds=15, wall_seconds=90, memory_mb=256)
        ok = box.run(VICTIM, entry="v", args={"n": 3}, limits=victim)
        assert ok.ok and isinstance(ok.value, int), ok.error
        failed = box.run(VICTIM, entry="v", args={"n": 0}, limits=victim)
        assert failed.error.type == "ZeroDivisionError" and failed.limit is None, failed.error
        small = box.run("def f():\n    raise ValueError('no')\n", entry="f")
        assert small.error.type == "ValueError" and small.limit is None


def test_memory_limit_reports_count_the_runs_own_pages_only():
    """The child starts with the zygote's address space; a run is at its memory limit
    when what it added reached MEMORY_LIMIT_SHARE of what memory_mb left it."""
    from sandbox.results import MEMORY_LIMIT_SHARE

    with Sandbox(workers=1, limits=Limits(cpu_seconds=5, wall_seconds=10, memory_mb=128)) as box:
        r = box.run("def f():\n    x = []\n    while True:\n        x.append(' ' * 10**6)\n",
                    entry="f")
        assert r.limit == "memory", r.error
        (worker,) = box._pool.workers
        assert 10 * _MB < worker.base_bytes < 100 * _MB  # the interpreter, as the host saw it
        assert 0 < MEMORY_LIMIT_SHARE < 1
        # Allocating what is left minus a margin is no memory limit.
        r = box.run("def f():\n    x = ' ' * (10 * 1024 * 1024)\n    raise ValueError(len(x))\n",
                    entry="f")
        assert r.limit is None and r.error.type == "ValueError"


# -- item 5: no membership oracles ----------------------------------------------------------
def test_interned_strings_of_other_runs_are_no_oracle():
    """The attack: a victim's source names a token; the attacker compiles 24 candidate
    tokens and looks at id(): the one the zygote had interned lived elsewhere (4 of 4
    before). Now id() is not offered, and the token never reaches the zygote."""
    tokens = [f"tok{secrets.randbelow(10**8):08d}" for _ in range(24)]
    secret = tokens[secrets.randbelow(24)]
    victim = f"def g():\n    {secret} = 1\n    return '{secret}'\n"
    probe = "def f():\n    return [" + ", ".join(f"id('{t}')" for t in tokens) + "]\n"
    with Sandbox(workers=1) as box:
        for _ in range(LIVE_CHILDREN + 2):
            assert box.run(victim, entry="g").ok
        for _ in range(LIVE_CHILDREN + 1):  # children forked after the victim's runs
            assert box.run(OK_CODE, entry="ok").ok
        r = box.run(probe, entry="f")
        if r.ok:  # the attacker's best guess: the address that stands apart
            middle = statistics.median(r.value)
            guess = max(range(24), key=lambda i: abs(r.value[i] - middle))
            assert tokens[guess] != secret, "id() told which token another run had used"
        assert not r.ok and r.error.type == "NameError" and "'id'" in r.error.message
        _settle(box)
        assert _memory_holds(_zygote(box), secret.encode()) == 0


def test_compile_time_is_no_oracle():
    """The attack: time a guessed source (compile_ms == 0 when someone had run it; its
    duration too). Now every run compiles its own sources and compile_ms is always 0."""
    def source(token: str) -> str:  # ~11 KB: its compile dominates a run's time
        return (f"def g(n):\n    t = '{token}'\n"
                + "".join(f"    t = t + str(n * {i} % 7)\n" for i in range(400))
                + "    return len(t)\n")

    seen, unseen = source(secrets.token_hex(8)), source(secrets.token_hex(8))
    with Sandbox(workers=1) as box:
        for _ in range(LIVE_CHILDREN + 2):  # another caller runs `seen`
            assert box.run(seen, entry="g", args={"n": 1}).ok
        compiled = box.stats()["compiled"]
        durations: dict[str, list[float]] = {"seen": [], "unseen": []}
        for _ in range(3):
            for label, code in (("seen", seen), ("unseen", unseen)):
                r = box.run(code, entry="g", args={"n": 2})
                assert r.ok and r.compile_ms == 0.0, r
                durations[label].append(r.duration_ms)
        assert box.stats()["compiled"] == compiled + 6  # nothing reused another's compile
    # Before: the seen source ran in ~3 ms, the unseen one in ~100+ ms (its compile).
    assert min(durations["seen"]) > 0.3 * min(durations["unseen"]), durations


def test_a_code_cache_is_private_to_its_sandbox():
    """code_cache=True reuses compiled code within one Sandbox (one trust domain) only."""
    code = f"def g():\n    return '{secrets.token_hex(8)}'\n"
    with Sandbox(workers=1, code_cache=True) as a, Sandbox(workers=1, code_cache=True) as b:
        assert a.run(code, entry="g").ok and a.run(code, entry="g").ok
        assert a.stats()["cache_hits"] == 1
        assert b.run(code, entry="g").ok
        assert b.stats()["compiled"] == 1 and b.stats()["cache_hits"] == 0
        assert a._pool.code_cache is not b._pool.code_cache
        _settle(a)
        assert _memory_holds(_zygote(a), code.encode()[-20:]) == 0


# -- availability: Sandboxes are independent ---------------------------------------------------
def test_a_short_run_does_not_wait_behind_another_sandboxs_cpu_bound_run():
    started = threading.Event()
    out: dict = {}
    spin = "def f():\n    started()\n    n = 0\n    while True:\n        n += 1\n"
    with Sandbox(workers=1, limits=Limits(cpu_seconds=30, wall_seconds=60)) as busy, \
            Sandbox(workers=1) as other:
        assert busy._pool is not other._pool and busy._pool.cond is not other._pool.cond
        assert busy._pool.root != other._pool.root
        assert not {w.pid for w in busy._pool.workers} & {w.pid for w in other._pool.workers}
        assert other.run(OK_CODE, entry="ok").ok

        def hog() -> None:
            out["busy"] = busy.run(spin, entry="f", tools={"started": started.set})

        thread = threading.Thread(target=hog)
        thread.start()
        try:
            assert started.wait(30), "the CPU-bound run did not start"
            for n in (1000, 2000, 3000):
                r = other.run("def f(n):\n    return sum(range(n))\n", entry="f", args={"n": n})
                assert r.ok and r.value == n * (n - 1) // 2
                # Structural: it finished while the other Sandbox's run was still running.
                assert thread.is_alive() and "busy" not in out
        finally:
            busy.close()
            thread.join(30)
    assert out["busy"].error.type == "SandboxClosed"


def test_the_zygotes_cpu_is_budgeted():
    """A soft RLIMIT_CPU on the zygote: its boot plus 20 ms for each child it may fork in
    its life plus 10 s (the kernel ends it past that, and the pool starts another)."""
    from sandbox.worker import ZYGOTE_CPU_SECONDS_PER_CHILD, ZYGOTE_CPU_SLACK_SECONDS

    with Sandbox(workers=1, max_runs_per_worker=50) as box:
        report = box.hardening()
        zygote = _zygote(box)
        with open(f"/proc/{zygote}/limits") as f:
            line = next(x for x in f if x.startswith("Max cpu time"))
        # What the kernel does past the budget; the pool replaces the zygote.
        os.kill(zygote, signal.SIGXCPU)
        for _ in range(200):
            if not os.path.exists(f"/proc/{zygote}") or _status_field(zygote, "State") == "Z":
                break
            time.sleep(0.01)
        r = box.run(OK_CODE, entry="ok")
        assert r.ok and r.value == 42, r.error
        assert _zygote(box) != zygote
    budget = ZYGOTE_CPU_SECONDS_PER_CHILD * (50 + LIVE_CHILDREN) + ZYGOTE_CPU_SLACK_SECONDS
    soft = report["zygote_cpu_seconds"]
    assert isinstance(soft, int) and budget <= soft <= budget + 5, report
    assert line.split()[3] == str(soft), line
