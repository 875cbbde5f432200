"""Load test: N client processes fetching and recording outcomes, shared vs folder deployment.

    python benchmarks/perf_shared.py [--clients 2,4,8] [--seconds 10] [--skills 200]
                                     [--failures 0.1] [--records URL --index URL]

Without ``--records``/``--index`` it starts a throwaway PostgreSQL cluster and a Chroma
server on loopback (benchmarks/local_servers.py). For each N it seeds a fresh library of
synthetic skills (once per deployment), then N spawned processes each open it, warm up,
and for ``--seconds`` repeat one operation: ``fetch(task)`` then ``feedback`` on the top
skill, a failure with probability FAILURE_SHARE (each client's own seeded draw). Printed per
deployment and N: operations/s over all clients, p50/p95 latency of one operation, errors
(must be 0), whether the outcome counts add up exactly, and how many skills the
quarantine rule took out of the index during the run (each one is an index write that every
other client's next fetch notices and reopens for: they show in p95).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: seconds each client process may take to open the library and warm up
WARMUP_TIMEOUT_SECONDS = 300
#: share of the outcomes reported as failures, drawn per operation and seeded per client: a
#: healthy library's. (A fixed "every third fails" over a task cycle divisible by 3 failed
#: the same skills every time; even drawn at 1/3, 5 of 6 recent failures come often enough
#: that the quarantine rule took 6-10 of 100 skills out per run, which measured that churn.)
FAILURE_SHARE = 0.1


def _client(spec: dict[str, Any], tasks: list[str], seconds: float, ready: Any, go: Any, out: Any,
            client: int = 0, failures: float = FAILURE_SHARE) -> None:
    import random

    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.library import SkillLibrary

    draws = random.Random(1000 + client)
    latencies: list[float] = []
    errors: list[str] = []
    recorded = 0
    with SkillLibrary(**spec, embedder=SentenceTransformerEmbedder(threads=1)) as lib:
        lib.fetch(tasks[0], min_reliability=0)  # load the model, open the index
        ready.release()
        go.wait()
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            task = tasks[n % len(tasks)]
            n += 1
            started = time.perf_counter()
            try:
                found = lib.fetch(task, min_reliability=0)
                if found:
                    lib.feedback(found[0].skill.name, draws.random() >= failures)
                    recorded += 1
            except Exception as exc:  # counted and reported, never hidden
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies.append((time.perf_counter() - started) * 1000)
    out.put((latencies, errors, recorded))


def run(spec: dict[str, Any], clients: int, seconds: float, tasks: list[str],
        failures: float = FAILURE_SHARE) -> dict[str, Any]:
    """One load run: N clients for ``seconds``; figures."""
    from skill_library.library import SkillLibrary

    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Semaphore(0), context.Event(), context.Queue()
    with SkillLibrary(**spec) as lib:
        before = sum(s.successes + s.failures for s in lib.list())
        quarantined_before = len(lib.list(status="quarantined"))
    workers = [context.Process(target=_client,
                               args=(spec, tasks[i::clients] or tasks, seconds, ready, go, out, i, failures))
               for i in range(clients)]
    for w in workers:
        w.start()
    for _ in workers:
        if not ready.acquire(timeout=WARMUP_TIMEOUT_SECONDS):
            raise RuntimeError("a client did not warm up in time")
    started = time.perf_counter()
    go.set()
    results = [out.get(timeout=seconds + WARMUP_TIMEOUT_SECONDS) for _ in workers]
    elapsed = time.perf_counter() - started
    for w in workers:
        w.join()
    latencies = sorted(x for r in results for x in r[0])
    errors = [e for r in results for e in r[1]]
    recorded = sum(r[2] for r in results)
    with SkillLibrary(**spec) as lib:
        after = sum(s.successes + s.failures for s in lib.list())
        quarantined = len(lib.list(status="quarantined")) - quarantined_before
    return {
        "clients": clients,
        "ops": len(latencies),
        "ops_per_s": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) if latencies else float("nan"),
        "p95_ms": latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan"),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "counts_exact": after - before == recorded,
        "quarantined": quarantined,
    }


def seed(spec: dict[str, Any], count: int) -> list[str]:
    """A fresh library of ``count`` synthetic skills (each with one success); the tasks."""
    from benchmarks.perf_fetch import synthetic_whens
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    whens = synthetic_whens(count, seed=7)
    skills = []
    for i, when in enumerate(whens):
        name = f"skill_{i}"
        code = f'def {name}(target: str) -> dict:\n    """{when}"""\n    return {{"target": target}}\n'
        skills.append(Skill.from_function(code, when=when))
    with SkillLibrary(**spec) as lib:
        lib.add_many(skills, verified=True)
    return [f"please {w}" for w in whens]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="2,4,8")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--failures", type=float, default=FAILURE_SHARE,
                        help="share of outcomes reported as failures (1/3 quarantines skills: index writes)")
    parser.add_argument("--records", help="PostgreSQL URL (default: a throwaway local cluster)")
    parser.add_argument("--index", help="Chroma server URL (default: a throwaway local server)")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    from benchmarks.local_servers import ChromaServer, PostgresServer

    servers: list[Any] = []
    try:
        records, index = args.records, args.index
        if records is None:
            servers.append(PostgresServer().start())
            records = servers[-1].create_database("perf_shared")
        if index is None:
            servers.append(ChromaServer().start())
            index = servers[-1].url
        with tempfile.TemporaryDirectory() as tmp:
            specs = {
                "folder": {"path": str(Path(tmp) / "lib")},
                "shared": {"records": records, "index": f"{index.rstrip('/')}/perf_shared"},
            }
            print(f"{'deployment':<10} {'N':>2} {'ops':>6} {'ops/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
                  f"{'errors':>6} exact quarantined")
            for kind, spec in specs.items():
                tasks = seed(spec, args.skills)
                for n in counts:
                    r = run(spec, n, args.seconds, tasks, args.failures)
                    print(f"{kind:<10} {n:>2} {r['ops']:>6} {r['ops_per_s']:>7.1f} {r['p50_ms']:>7.1f} "
                          f"{r['p95_ms']:>7.1f} {r['errors']:>6} {r['counts_exact']!s:>5} {r['quarantined']:>11}"
                          + (f"  first error: {r['first_error'][:200]}" if r["errors"] else ""), flush=True)
    finally:
        for server in reversed(servers):
            server.stop()


if __name__ == "__main__":
    main()
