"""What a reader pays after another process wrote the index: a full check against the
records, or the unchecked reopen of an index marked with the records' generation.

    python benchmarks/perf_reopen.py [--sizes 1000,10000] [--repeat 5]

For each size it adds that many synthetic skills (``add_many``, one text each), then times,
side by side in one run, the two ways ``SyncedIndex`` reopens after another writer's change
(skill_library/index_sync.py): ``_open_checked`` (read every index entry and every record,
compare) and ``_reload_marked`` (the writer's mark equals the records' generation: reload the
folder's Chroma client, shared by every index of the folder in this process, as it is).
A first open in a process always takes the full check; a reopen takes it only when the mark
is behind (a writer died between bumping the generation and marking its write). The third
column is what a writer adds after a reopen: zeroing the unused HNSW slots
(``scrub_unused_slots``, so that freed texts never reach the disk).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def measure(size: int, repeat: int) -> tuple[int, float, float, float]:
    """(entries, full check ms, marked reopen ms, scrub ms), medians of ``repeat``."""
    from benchmarks.perf_fetch import synthetic_whens
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    whens = synthetic_whens(size, seed=7)
    body = 'def skill_{i}(target: str) -> dict:\n    """{w}"""\n    return {{"target": target}}\n'
    skills = [Skill.from_function(body.format(i=i, w=w), when=w) for i, w in enumerate(whens)]
    with tempfile.TemporaryDirectory() as tmp, SkillLibrary(Path(tmp) / "lib") as lib:
        lib.add_many(skills, verified=True)
        lib.fetch("please " + whens[0])
        synced, generation = lib._index, lib.context.store.index_generation()
        times: dict[str, list[float]] = {"full": [], "marked": [], "scrub": []}
        current = synced.current()
        for _ in range(repeat):
            started = time.perf_counter()
            index = synced._open_checked()
            times["full"].append((time.perf_counter() - started) * 1000)
            index.close()
            started = time.perf_counter()
            assert synced._reload_marked(current, generation)
            times["marked"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            current.scrub_unused_slots()
            times["scrub"].append((time.perf_counter() - started) * 1000)
        medians = [statistics.median(times[k]) for k in ("full", "marked", "scrub")]
        return lib.index.count(), medians[0], medians[1], medians[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"$ python benchmarks/perf_reopen.py --sizes {args.sizes} --repeat {args.repeat}")
    print(f"{'skills':>7} {'entries':>8} {'full check ms':>14} {'marked reopen ms':>17} {'ratio':>7} {'scrub ms':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        entries, full, marked, scrub = measure(size, args.repeat)
        print(f"{size:>7} {entries:>8} {full:>14.1f} {marked:>17.1f} {full / marked:>6.0f}x {scrub:>9.1f}",
              flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
