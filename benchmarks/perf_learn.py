"""Batch learning throughput against the embedding-alone floor, measured in one run.

    python benchmarks/perf_learn.py [--traces 300] [--workflows 12] [--single 40]

Makes ``--traces`` short verified traces (2-3 tool calls) over ``--workflows`` workflow
shapes, with a different customer, persona sentence and wording in each, then times:
  - floor:      embedding the texts learning must embed (each task and its masked example
                text), in batches, and nothing else;
  - learn_many: ``SkillLibrary.learn_many(traces)`` on a fresh library (generalize, replay
                in the sandbox, merge or save, index);
  - learn:      ``SkillLibrary.learn(trace)`` one at a time on another fresh library, for the
                first ``--single`` traces;
and prints traces/s of each, the skills learned per workflow and the statuses.
Target (issue 8): learn_many >= 25 traces/s for short traces on the 2-core machine.

    python benchmarks/perf_learn.py --taubench [DIR] [--taubench-limit N] [--profile FILE]

measures on real traces instead: the τ-bench retail train tasks' gold traces (DIR, default
``../shared/benchmarks/taubench-retail``; the state-changing ones of the first N train tasks
with ``--taubench-limit``, e.g. 40 for CI), in one run: the floor = embedding their task
texts alone (batches of 64; the faster of two passes, one before and one after
``learn_many``), and ``learn_many`` of their verified traces on a fresh library
with every tool declared; prints traces/s, texts/s and their ratio.
Target (issue 22): learn_many >= 0.5x the texts/s of the floor. Also printed: the CPU time of
both (this process and its sandbox workers), whose ratio is the work ratio whatever the
load of a shared machine. ``--profile FILE`` writes
cProfile statistics of the ``learn_many`` call to FILE (read them with ``python -m pstats``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

FIRST = "Dana Ravi Mia Lee Zoe Omar Ines Kofi Ana Yuki Lars Nia Tom Eva Raj Sol".split()
LAST = "Whitfield Osei Chen Park Novak Haddad Silva Berg Moreau Tanaka Ruiz Okafor".split()
ACTIONS = """cancel refund archive restock ship reserve renew suspend verify close""".split()
OBJECTS = """order invoice parcel ticket booking licence account voucher""".split()
MOODS = ["I am patient but busy.", "Thanks a lot!", "I'm in a hurry.", "Hope you are well.", ""]


def make_traces(count: int, workflows: int, seed: int = 0) -> tuple[list, list[str]]:
    """``count`` traces over ``workflows`` shapes, and each trace's workflow name."""
    from skill_library.models import Outcome, ToolCall, Trace

    rng = random.Random(seed)
    shapes = []
    for n in range(workflows):
        action, obj = ACTIONS[n % len(ACTIONS)], OBJECTS[(n // len(ACTIONS) + n) % len(OBJECTS)]
        lookup = rng.choice(["email", "phone"])
        shapes.append((action, obj, lookup))
    traces, names = [], []
    for i in range(count):
        action, obj, lookup = shapes[i % workflows]
        first, last = rng.choice(FIRST), rng.choice(LAST)
        email = f"{first.lower()}.{last.lower()}{rng.randint(1, 999)}@example.org"
        phone = f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
        key = email if lookup == "email" else phone
        ref = f"{obj[:2].upper()}{rng.randint(100000, 999999)}"
        ask = rng.choice([f"Please {action} {obj} {ref}.", f"Could you {action} my {obj} {ref}?",
                          f"I need {obj} {ref} {action}ed."])
        task = " ".join(x for x in [f"I'm {first} {last}, {key}.", rng.choice(MOODS), ask] if x)
        user = f"u{rng.randint(1000, 9999)}"
        traces.append(Trace(
            task=task,
            params={lookup: key, f"{obj}_id": ref},
            calls=[
                ToolCall(name=f"find_user_by_{lookup}", arguments={lookup: key}, result={"user_id": user}),
                ToolCall(name=f"{action}_{obj}", arguments={"user_id": user, f"{obj}_id": ref},
                         result={"status": "done"}),
            ],
            outcome=Outcome(success=True, verifier="synthetic-check"),
        ))
        names.append(f"{action}_{obj}_by_{lookup}")
    return traces, names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=300)
    parser.add_argument("--workflows", type=int, default=12)
    parser.add_argument("--single", type=int, default=40)
    parser.add_argument("--taubench", nargs="?", const="", default=None, metavar="DIR",
                        help="measure on the τ-bench retail train traces of DIR (default data folder when omitted)")
    parser.add_argument("--taubench-limit", type=int, default=None, metavar="N",
                        help="with --taubench: only the first N train tasks (a small slice for CI)")
    parser.add_argument("--profile", default=None, metavar="FILE",
                        help="with --taubench: write cProfile statistics of the learn_many call to FILE")
    args = parser.parse_args(argv)
    if args.taubench is not None:
        return taubench(args.taubench or None, args.taubench_limit, profile=args.profile)

    from skill_library import Policy, SkillLibrary
    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.induction import DataflowGeneralizer
    from skill_library.induction.admission import example_for

    print(f"$ python benchmarks/perf_learn.py --traces {args.traces} --workflows {args.workflows} "
          f"--single {args.single}")
    embedder = SentenceTransformerEmbedder(threads=1)
    embedder.embed(["warm up"])
    traces, _names = make_traces(args.traces, args.workflows)
    generalizer = DataflowGeneralizer()
    example_texts = [example_for(t, generalizer.generalize(t)).text for t in traces]

    start = time.perf_counter()
    for begin in range(0, len(traces), 64):
        embedder.embed([t.task for t in traces[begin:begin + 64]])
        embedder.embed(list(dict.fromkeys(example_texts[begin:begin + 64])))
    floor = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        with SkillLibrary(Path(tmp) / "many", embedder=embedder, policy=Policy(auto_approve="all")) as library:
            _ = library.sandbox  # start the workers outside the timing, as a long-lived library has
            start = time.perf_counter()
            results = library.learn_many(traces, generalizer=generalizer)
            many = time.perf_counter() - start
            statuses = Counter(r.status for r in results)
            skills = len(library.list())
        with SkillLibrary(Path(tmp) / "single", embedder=embedder, policy=Policy(auto_approve="all")) as library:
            _ = library.sandbox
            subset = traces[: args.single]
            start = time.perf_counter()
            for trace in subset:
                library.learn(trace, generalizer=generalizer)
            single = time.perf_counter() - start

    print(f"traces: {len(traces)} over {args.workflows} workflows (2 tool calls each)")
    print(f"floor (embedding alone): {len(traces) / floor:8.1f} traces/s")
    print(f"learn_many:              {len(traces) / many:8.1f} traces/s  "
          f"({many / floor:.1f}x the floor's time; target >= 25 traces/s)")
    print(f"learn, one at a time:    {len(subset) / single:8.1f} traces/s  (first {len(subset)} traces)")
    print(f"skills learned: {skills} for {args.workflows} workflows; statuses: {dict(statuses)}")
    return 0 if statuses.get("rejected", 0) == 0 else 1


def taubench(data: str | None, limit: int | None, *, profile: str | None = None) -> int:
    """learn_many over the τ-bench train traces beside embedding their task texts alone, in one run.

    Returns 2 (a one-line error) for a missing or partial data folder, else 0 after printing;
    :func:`measure_taubench` gives the numbers."""
    from benchmarks.taubench.data import DataError

    try:
        figures = measure_taubench(data, limit, profile=profile)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown = f" --taubench-limit {limit}" if limit is not None else ""
    print(f"$ python benchmarks/perf_learn.py --taubench{' ' + data if data else ''}{shown}")
    print(f"τ-bench retail train traces: {figures['traces']:.0f} (state-changing, of {figures['tasks']:.0f} tasks)")
    before, after = figures["floor_passes_s"]
    print(f"floor (embedding the task texts alone): {figures['texts_per_s']:8.1f} texts/s  "
          f"(passes before and after learn_many: {before:.1f} s, {after:.1f} s)")
    print(f"learn_many:                             {figures['traces_per_s']:8.2f} traces/s  "
          f"({figures['ratio']:.3f}x the floor; target >= 0.5x)")
    print(f"CPU time (this process and its sandbox workers): floor {figures['floor_cpu_s']:.1f} s, learn_many "
          f"{figures['learn_cpu_s']:.1f} s: {figures['cpu_ratio']:.3f}x (the work ratio, whatever the load)")
    print(f"skills learned: {figures['skills']:.0f}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


def cpu_seconds() -> float:
    """CPU time of this process and every process below it (the sandbox workers, which
    outlive a measurement so ``os.times`` never counts them), from ``/proc``; this process
    alone where there is no ``/proc``. Unlike wall time on a shared machine, it measures the
    work done, whatever the load."""
    own = os.times()
    total = own.user + own.system
    try:
        tick = os.sysconf("SC_CLK_TCK")
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError):
        return total
    below: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return total + sum(times[pid] for pid in below)


def measure_taubench(data: str | None, limit: int | None, *, embedder=None,
                     profile: str | None = None) -> dict[str, Any]:
    """The numbers of :func:`taubench`: traces, texts/s, traces/s, ratio, skills, seconds.

    ``profile``: a file for cProfile statistics of the ``learn_many`` call (the caller's
    thread only: work on other threads shows as waiting)."""
    from benchmarks.taubench.data import Retail
    from benchmarks.taubench.protocol import gold_trace, open_library

    retail = Retail(data, option="--taubench")
    tasks = retail.split("train")[:limit]
    traces = [gold_trace(retail, t) for t in tasks if t.changes_state]
    if embedder is None:
        from skill_library.embeddings import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(threads=1)
        embedder.embed(["warm up"])
    texts = [t.task for t in traces]

    cpu: dict[str, list[float]] = {"floor": [], "learn": []}

    def embed_alone() -> float:
        start, used = time.perf_counter(), cpu_seconds()
        for begin in range(0, len(texts), 64):
            embedder.embed(texts[begin:begin + 64])
        cpu["floor"].append(cpu_seconds() - used)
        return time.perf_counter() - start

    # the floor is the faster of two passes, one before learn_many and one after it: what
    # embedding alone can do here, under the load of the same minutes
    passes = [embed_alone()]
    with tempfile.TemporaryDirectory() as tmp:
        library = open_library(Path(tmp) / "tau", retail, embedder)
        try:
            _ = library.sandbox  # start the workers outside the timing, as a long-lived library has
            profiler = None
            if profile is not None:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            start, used = time.perf_counter(), cpu_seconds()
            results = library.learn_many(traces, generalizer="dataflow")
            many = time.perf_counter() - start
            cpu["learn"].append(cpu_seconds() - used)
            if profiler is not None and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
            skills = len(library.list())
        finally:
            library.close()
    passes.append(embed_alone())
    floor = min(passes)
    rejected = sum(r.status == "rejected" for r in results)
    texts_per_s, traces_per_s = len(texts) / floor, len(traces) / many
    return {"tasks": len(tasks), "traces": len(traces), "texts_per_s": texts_per_s, "traces_per_s": traces_per_s,
            "ratio": traces_per_s / texts_per_s, "skills": skills, "floor_s": floor, "learn_s": many,
            "rejected": rejected, "floor_passes_s": passes, "floor_cpu_s": min(cpu["floor"]),
            "learn_cpu_s": cpu["learn"][0], "cpu_ratio": min(cpu["floor"]) / cpu["learn"][0]}


if __name__ == "__main__":
    sys.exit(main())
