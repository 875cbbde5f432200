"""Fetch while another process holds the library's write lock (issue 24, defect 6).

    python benchmarks/perf_locks.py [--skills 200] [--hold 5] [--repeat 3]

Builds a library of synthetic skills (``add_many``), opens it here, and starts a second
process on the same folder that serves three commands: ``add`` (write one skill and exit
the write lock: this process must reopen its index on its next fetch), ``hold`` (take the
write lock and keep it ``--hold`` seconds) and ``bump`` (take it, bump the index generation
as a writer does before it writes, and keep it: a writer at work, as a revision that
generalizes under the lock). Times, in this process:
  - idle:             fetch, nobody else at work (median of 20);
  - reopen, held:     the first fetch after the other process's write, while it holds the
                      write lock (the fetch must reopen the index);
  - writer at work:   the first fetch while the other process holds the lock with the
                      generation bumped and the index not marked yet.
Each held case is timed ``--repeat`` times; a fetch that waits for the lock takes about
``--hold`` seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

#: the other process: opens the library once, then serves commands read from stdin
WRITER = """
import sys, time
from skill_library.embeddings import SentenceTransformerEmbedder
from skill_library.library import SkillLibrary
from skill_library.models import Skill
lib = SkillLibrary(sys.argv[1], embedder=SentenceTransformerEmbedder(threads=1))
hold = float(sys.argv[2])
print("ready", flush=True)
for n, line in enumerate(sys.stdin):
    command = line.strip()
    if command == "add":
        code = f"def extra_{n}(target: str) -> str:\\n    return target\\n"
        lib.add(Skill.from_function(code, when=f"polish the extra brass lamps number {n}"), verified=True)
        print("added", flush=True)
    elif command in ("hold", "bump"):
        lock = lib.context.store.write_lock()
        lock.acquire()
        if command == "bump":
            lib.context.store.bump_index_generation()
        print("held", flush=True)
        time.sleep(hold)
        lock.release()
        print("released", flush=True)
lib.close()
"""


def _expect(proc: subprocess.Popen, word: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != word:
        raise RuntimeError(f"the writer process said {line!r}, not {word!r}")


def _send(proc: subprocess.Popen, command: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()


def _timed_fetch(lib, query: str) -> float:
    started = time.perf_counter()
    lib.fetch(query, k=2)
    return (time.perf_counter() - started) * 1000


def measure(skills: int, hold: float, repeat: int) -> dict[str, list[float]]:
    from benchmarks.perf_fetch import synthetic_whens
    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    whens = synthetic_whens(skills, seed=11)
    embedder = SentenceTransformerEmbedder(threads=1)
    times: dict[str, list[float]] = {"idle": [], "reopen, held": [], "writer at work": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lib"
        lib = SkillLibrary(folder, embedder=embedder)
        lib.add_many([Skill.from_function(f"def skill_{i}(target: str) -> str:\n    return target\n", when=w)
                      for i, w in enumerate(whens)], verified=True)
        query = "please " + whens[0]
        for _ in range(5):
            lib.fetch(query, k=2)
        times["idle"] = [_timed_fetch(lib, query) for _ in range(20)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                                          os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(hold)], env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            _expect(proc, "ready")
            for _ in range(repeat):
                _send(proc, "add")
                _expect(proc, "added")
                _send(proc, "hold")
                _expect(proc, "held")
                times["reopen, held"].append(_timed_fetch(lib, query))
                _expect(proc, "released")
                _send(proc, "bump")
                _expect(proc, "held")
                times["writer at work"].append(_timed_fetch(lib, query))
                _expect(proc, "released")
                lib.fetch(query, k=2)  # the generation moved on: settle before the next round
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
            lib.close()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    times = measure(args.skills, args.hold, args.repeat)
    print(f"$ python benchmarks/perf_locks.py --skills {args.skills} --hold {args.hold:g} --repeat {args.repeat}")
    print(f"{'case':<16} {'median ms':>10} {'max ms':>10}  (the other process holds the lock {args.hold:g} s)")
    for case, values in times.items():
        print(f"{case:<16} {statistics.median(values):>10.1f} {max(values):>10.1f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
