"""Fetch latency with telemetry off and on, against a build without it, side by side.

    python benchmarks/perf_telemetry.py [--skills 1000] [--queries 300]

One library of ``--skills`` synthetic skills (benchmarks/perf_fetch.py's texts, added by
``add_many``); then, for the same queries in one loop, each query through three arms in a
rotating order (so each sees the same machine state):
  - without:  ``SkillLibrary.fetch.__wrapped__`` (the method without the telemetry decorator);
  - off:      ``SkillLibrary.fetch`` with no provider installed (nothing is emitted);
  - on:       ``SkillLibrary.fetch`` with the SDK's tracer provider (a batch span processor
              into an in-memory exporter) and meter provider (an in-memory reader).
Prints the p50/p95 of each and the p50 ratios (targets: off within 2% of without; on <= 5%
slower).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print("this benchmark needs the otel extra: pip install 'skill-library[otel]'")
        return 2
    from benchmarks.perf_fetch import percentile, synthetic_whens
    from skill_library import telemetry
    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    embedder = SentenceTransformerEmbedder(threads=1)
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    whens = synthetic_whens(args.skills, seed=args.skills)
    with tempfile.TemporaryDirectory() as tmp:
        lib = SkillLibrary(Path(tmp) / "lib", embedder=embedder)
        lib.add_many([Skill.from_function(f"def skill_{i}(target: str) -> str:\n    return target\n", when=w)
                      for i, w in enumerate(whens)], verified=True)
        queries = [f"please {w.split()[0]} all the {w.split()[2]} {' '.join(w.split()[3:])}"
                   for w in whens[: args.queries]]
        without = SkillLibrary.fetch.__wrapped__  # type: ignore[attr-defined]

        def arm_without(q: str) -> None:
            without(lib, q, 2)

        def arm_off(q: str) -> None:
            telemetry.use()
            lib.fetch(q, 2)

        def arm_on(q: str) -> None:
            telemetry.use(tracer_provider, meter_provider)
            lib.fetch(q, 2)
            telemetry.use()

        arms = {"without": arm_without, "off": arm_off, "on": arm_on}
        for q in queries[:20]:  # warm every path
            for arm in arms.values():
                arm(q)
        times: dict[str, list[float]] = {name: [] for name in arms}
        order = list(arms)
        for n, q in enumerate(queries):
            rotated = order[n % 3:] + order[: n % 3]
            for name in rotated:
                started = time.perf_counter()
                arms[name](q)
                times[name].append((time.perf_counter() - started) * 1000)
        lib.close()
    tracer_provider.shutdown()
    emitted = len(spans.get_finished_spans())
    p50 = {name: statistics.median(ms) for name, ms in times.items()}
    print(f"$ python benchmarks/perf_telemetry.py --skills {args.skills} --queries {args.queries}")
    print(f"{'arm':>8} {'p50':>9} {'p95':>9}")
    for name, ms in times.items():
        print(f"{name:>8} {p50[name]:>7.2f}ms {percentile(ms, 0.95):>7.2f}ms")
    off = p50["off"] / p50["without"] - 1
    on = p50["on"] / p50["without"] - 1
    print(f"spans exported while on: {emitted} (the on arm's {args.queries + 20} fetches)")
    print(f"telemetry off vs without: {off:+.1%} (target within 2%: {'met' if abs(off) <= 0.02 else 'NOT met'})")
    print(f"telemetry on vs without:  {on:+.1%} (target <= 5% slower: {'met' if on <= 0.05 else 'NOT met'})")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
