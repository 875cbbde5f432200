"""Fetch latency against its floor, at 1k and 10k skills, measured side by side.

    python benchmarks/perf_fetch.py [--sizes 1000,10000] [--queries 200]

For each library size it builds a fresh library of synthetic skills with distinct `when`
texts (ingest through ``SkillLibrary.add_many``), then, for the same queries in one
interleaved loop, times:
  - fetch:  ``SkillLibrary.fetch(query, k=2)`` (embed, over-fetch, reliability filter, rank)
  - floor:  embedding the query alone + a raw Chroma query with that embedding (n=k)
and prints p50/p95 of both, the p50 ratio (target <= 1.2x at 10k) and the ingest rate:
skills through ``add_many`` per second (each embedded and checked, then stored or refused
as a duplicate; also printed: those stored per second) against the same embedder alone
on the same texts in batches of 256, measured just before in the same run.
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
    from skill_library.induction.description import index_text

    # the embedding-alone floor of ingest: the same model on a sample of the same texts
    sample = [index_text(w) for w in whens[:EMBED_SAMPLE]]
    start = time.perf_counter()
    for begin in range(0, len(sample), 256):
        embedder.embed(sample[begin:begin + 256])
    embed_per_s = len(sample) / (time.perf_counter() - start)
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
        # skills through add_many per second (each embedded, checked, then stored or refused
        # as a duplicate): the unit of embed_per_s, one text per skill
        "ingest_per_s": size / ingest_s,
        "stored_per_s": stored / ingest_s,
        "embed_per_s": embed_per_s,
        "rss_mb": _rss_mb(),
        "fetch_p50": statistics.median(fetch_ms),
        "fetch_p95": percentile(fetch_ms, 0.95),
        "floor_p50": statistics.median(floor_ms),
        "floor_p95": percentile(floor_ms, 0.95),
    }


#: texts embedded alone to measure the floor of ingest throughput
EMBED_SAMPLE = 5000


def _rss_mb() -> float:
    """This process's resident set size now, in MB (from /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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
    print(f"$ python benchmarks/perf_fetch.py --sizes {args.sizes} --queries {args.queries}")
    print("each skill here is added by add_many with one indexed text (its when); learned skills "
          "hold up to 1 + MAX_INDEXED_EXAMPLES (8) texts")
    print("ingest/s: skills through add_many per second (stored or refused as duplicates), "
          "stored/s: those stored; embed/s: the same embedder alone on the same texts, batches of 256")
    print(f"{'skills':>7} {'stored':>7} {'ingest/s':>9} {'stored/s':>9} {'embed/s':>8} "
          f"{'fetch p50':>10} {'fetch p95':>10} {'floor p50':>10} {'floor p95':>10} {'p50 ratio':>10} {'RSS MB':>7}")
    for r in rows:
        ratio = r["fetch_p50"] / r["floor_p50"]
        print(f"{r['size']:>7} {r['stored']:>7} {r['ingest_per_s']:>9.1f} {r['stored_per_s']:>9.1f} "
              f"{r['embed_per_s']:>8.1f} {r['fetch_p50']:>8.2f}ms {r['fetch_p95']:>8.2f}ms {r['floor_p50']:>8.2f}ms "
              f"{r['floor_p95']:>8.2f}ms {ratio:>9.2f}x {r['rss_mb']:>7.0f}")
    first, last = rows[0], rows[-1]
    ratio = last["fetch_p50"] / last["floor_p50"]
    print(f"target: fetch p50 <= 1.2x floor at {last['size']} skills: {ratio:.2f}x "
          f"({'met' if ratio <= 1.2 else 'NOT met'})")
    if len(rows) > 1:
        growth = last["fetch_p50"] / first["fetch_p50"]
        print(f"target: fetch p50 at {last['size']} <= 1.3x fetch p50 at {first['size']}: {growth:.2f}x "
              f"({'met' if growth <= 1.3 else 'NOT met'})")
    share = last["ingest_per_s"] / last["embed_per_s"]
    stored_share = last["stored_per_s"] / last["embed_per_s"]
    print(f"target: ingest at {last['size']} >= 0.8x embedding alone: {share:.2f}x "
          f"({'met' if share >= 0.8 else 'NOT met'}; stored/s {stored_share:.2f}x); RSS {last['rss_mb']:.0f} MB")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
