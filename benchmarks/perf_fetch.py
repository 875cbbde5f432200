"""Fetch latency against its floor, at 1k and 10k skills, measured side by side.

    python benchmarks/perf_fetch.py [--sizes 1000,10000] [--queries 200]

For each library size it builds a fresh library of synthetic skills with distinct `when`
texts (ingest through ``SkillLibrary.add_many``), then, for the same queries in one
interleaved loop, times:
  - fetch:  ``SkillLibrary.fetch(query, k=2)`` (embed, over-fetch, reliability filter, rank)
  - floor:  embedding the query alone + a raw Chroma query with that embedding (n=k)
and prints p50/p95 of both, the p50 ratio (target <= 1.2x at 10k) and the ingest rate.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

VERBS = """archive audit book cancel catalogue compile convert count deliver delete deploy
download draft email export fetch file forecast format grade import inspect install invoice
label launch measure merge migrate monitor order pack paint patch plant print publish rank
recycle refund register rename repair replace reserve resize restore review schedule scan
ship sign sort summarise survey tag test track translate tune update upload validate water
weigh""".split()
OBJECTS = """accounts album alarms apples backups badges batteries beehives bicycles blog
boilers books bridges budgets cables calendars cameras candles carpets certificates chairs
charts cheques claims classrooms clocks contracts coupons crops dashboards databases deeds
diagrams dishes drones engines exams fences ferries files forms fountains fridges gardens
gifts glaciers grants greenhouses guitars harbours helmets herbs hotels invoices jackets
kettles keys ladders lamps laptops leases letters licences lockers maps meters mirrors
models museums newsletters notebooks orchards ovens packages paintings parcels passports
payments pensions pianos pipelines playlists podcasts pools posters printers prisms quotes
radios receipts recipes reports robots roofs routers salaries satellites scarves schedules
scripts sensors servers shelves shoes signs skis sockets songs spreadsheets stadiums stamps
statues subscriptions surveys sweaters tables tablets tents tickets tiles timesheets tires
tools towers toys tractors trains trophies trucks tunnels umbrellas uniforms vaccines vans
vases videos violins wallets warehouses watches websites wells wheels windows wines""".split()
CONTEXTS = """for the annual audit|before the storm arrives|in the northern warehouse|for a new
customer|after the product launch|during the school holidays|for the hospital wing|at the
weekend market|for the chess club|in the mountain cabin|for the film festival|on the cargo
ship|for the rowing team|in the city library|for the bakery chain|at the airport lounge|for
the dental clinic|in the science lab|for the wedding guests|at the train depot|for the zoo
keepers|in the botanical garden|for the law firm|at the ski resort|for the orchestra|in the
data centre|for the football league|at the fish market|for the charity run|in the old
castle""".replace("\n", " ").split("|")


def synthetic_whens(count: int, seed: int) -> list[str]:
    """``count`` distinct task descriptions from verb x object x context."""
    rng = random.Random(seed)
    combos = [(v, o, c.strip()) for v in VERBS for o in OBJECTS for c in CONTEXTS]
    rng.shuffle(combos)
    return [f"{v} the {o} {c}" for v, o, c in combos[:count]]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(size: int, queries: int, embedder, workdir: Path) -> dict[str, float]:
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    whens = synthetic_whens(size, seed=size)
    skills = [
        Skill.from_function(
            f"def skill_{i}(target: str) -> str:\n    return target\n", when=when
        )
        for i, when in enumerate(whens)
    ]
    lib = SkillLibrary(workdir / f"lib_{size}", embedder=embedder)
    start = time.perf_counter()
    results = lib.add_many(skills, verified=True, progress=True)
    ingest_s = time.perf_counter() - start
    stored = sum(r.added for r in results)

    rng = random.Random(7)
    probes = [
        f"please {w.split()[0]} all the {w.split()[2]} {' '.join(w.split()[3:])}"
        for w in rng.sample(whens, min(queries, len(whens)))
    ]
    collection = lib.index._collection
    for q in probes[:10]:  # warm both paths
        lib.fetch(q, k=2)
        collection.query(query_embeddings=[embedder.embed([q])[0]], n_results=2)
    fetch_ms: list[float] = []
    floor_ms: list[float] = []
    for q in probes:  # interleaved, so both see the same machine state
        t0 = time.perf_counter()
        lib.fetch(q, k=2)
        t1 = time.perf_counter()
        vector = embedder.embed([q])[0]
        collection.query(query_embeddings=[vector], n_results=2)
        t2 = time.perf_counter()
        fetch_ms.append((t1 - t0) * 1000)
        floor_ms.append((t2 - t1) * 1000)
    lib.close()
    return {
        "size": size,
        "stored": stored,
        "ingest_per_s": stored / ingest_s,
        "fetch_p50": statistics.median(fetch_ms),
        "fetch_p95": percentile(fetch_ms, 0.95),
        "floor_p50": statistics.median(floor_ms),
        "floor_p95": percentile(floor_ms, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from skill_library.embeddings import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(threads=1)
    embedder.embed(["warm up"])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(s) for s in args.sizes.split(",")]:
            rows.append(measure(size, args.queries, embedder, Path(tmp)))
    print()
    print(f"fetch vs floor (embed query + raw Chroma query), k=2, {args.queries} queries, torch threads=1")
    print(f"{'skills':>7} {'stored':>7} {'ingest/s':>9} {'fetch p50':>10} {'fetch p95':>10} "
          f"{'floor p50':>10} {'floor p95':>10} {'p50 ratio':>10}")
    for r in rows:
        ratio = r["fetch_p50"] / r["floor_p50"]
        print(f"{r['size']:>7} {r['stored']:>7} {r['ingest_per_s']:>9.1f} {r['fetch_p50']:>8.2f}ms "
              f"{r['fetch_p95']:>8.2f}ms {r['floor_p50']:>8.2f}ms {r['floor_p95']:>8.2f}ms {ratio:>9.2f}x")
    last = rows[-1]
    ratio = last["fetch_p50"] / last["floor_p50"]
    verdict = "met" if ratio <= 1.2 else "NOT met"
    print(f"target: fetch p50 <= 1.2x floor at {last['size']} skills: {ratio:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
