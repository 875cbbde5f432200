"""CPU seconds per test, for profiling the suite (``SKILLS_TESTS_CPU_LOG=FILE``; tests/conftest.py).

Each test's CPU (user + system, setup and teardown included) is the growth of the CPU of the
pytest process's tree: the process itself, its children living or reaped, and the servers it
started that daemonized away from it (the PostgreSQL cluster, registered by ``pg_server``).
One line per test, ``nodeid<TAB>cpu_seconds<TAB>wall_seconds``, appended to FILE.<worker>."""

from __future__ import annotations

import os
import time

_TICK = os.sysconf("SC_CLK_TCK")
extra_roots: list[int] = []  # pids of daemonized servers the session started


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _times(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime stime cutime cstime: fields 14-17 of stat, 11-14 after the name
    return sum(int(v) for v in fields[11:15]) / _TICK


def tree_cpu() -> float:
    """CPU seconds of this process, its descendants (living and reaped) and the extra roots."""
    tree = _children()
    seen: set[int] = set()
    stack = [os.getpid(), *extra_roots]
    total = 0.0
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _times(pid)
        stack.extend(tree.get(pid, ()))
    return total


class CpuLog:
    def __init__(self, path: str) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.path = f"{path}.{worker}"

    def record(self, nodeid: str, cpu: float, wall: float) -> None:
        with open(self.path, "a") as f:
            f.write(f"{nodeid}\t{cpu:.3f}\t{wall:.3f}\n")


def measure(log: CpuLog, nodeid: str):
    """A generator for a hookwrapper: measure around the ``yield``."""
    cpu, wall = tree_cpu(), time.monotonic()
    yield
    log.record(nodeid, tree_cpu() - cpu, time.monotonic() - wall)
