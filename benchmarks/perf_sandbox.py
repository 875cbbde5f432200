"""Sandbox performance, measured side by side in one run on this machine.

    python benchmarks/perf_sandbox.py [--quick]

1. Per-run overhead of a trivial skill: warm pool (every run in a fresh child forked from
   the zygote), with the Sandbox's code cache (compiled code reused) and without it (the
   default: each run's child compiles its sources), vs a direct call vs a cold process;
   compile time of a new source, reported separately; one fork + exit + reap here.
2. CPU-bound skill code (integer loops, dict building, nested iteration, string work,
   records) under the sandbox vs plain ``exec`` of the same source.
3. Round-trip cost of one tool call.
4. The same CPU-bound code under smolagents' ``LocalPythonExecutor`` (an AST-interpreting
   executor), when it is installed.

Each timing is the best of several interleaved repetitions (the machine is shared; the
minimum is the least noisy estimate of the cost), the median is printed next to it.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandbox import Limits, Sandbox  # noqa: E402

TARGET_WARM_P50_MS = 2.0
TARGET_CPU_RATIO = 1.3
TARGET_VS_AST = 20.0

WORKLOADS: dict[str, str] = {
    "integer loops": '''
def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
        if i % 3 == 0:
            total -= 1
    return total
''',
    "dict building": '''
def work(n):
    d = {}
    for i in range(n):
        k = i % 1000
        d[k] = d.get(k, 0) + i
    counts = {}
    for k, v in d.items():
        counts[v % 10] = counts.get(v % 10, 0) + 1
    return [len(d), len(counts)]
''',
    "nested iteration": '''
def work(n):
    m = int(n ** 0.5)
    grid = [[(i * j) % 10 for j in range(m)] for i in range(m)]
    s = 0
    for row in grid:
        for x in row:
            if x > 4:
                s += x
    pairs = [(a, b) for a in range(m // 2) for b in range(m // 2) if (a + b) % 5 == 0]
    return s + len(pairs)
''',
    "string work": '''
def work(n):
    words = []
    for i in range(n // 4):
        w = "item" + str(i)
        words.append(w.upper() if i % 2 else w.lower())
    text = " ".join(words)
    out = []
    for p in text.split(" "):
        if p.startswith("ITEM"):
            out.append(p.replace("ITEM", "x")[:6])
    return [len("".join(out)), text.count("item1")]
''',
    "records": '''
def work(n):
    rows = []
    for i in range(n // 8):
        rows.append({"id": i, "group": "g" + str(i % 17), "price": (i * 37) % 101})
    by_group = {}
    for row in rows:
        g = row["group"]
        if g not in by_group:
            by_group[g] = []
        by_group[g].append(row["price"])
    best = sorted(by_group.items(), key=lambda kv: -sum(kv[1]))[:3]
    return [[g, sum(p), max(p)] for g, p in best]
''',
}


def best_and_median(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def percentile(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def plain_fn(source: str) -> Callable[..., Any]:
    ns: dict[str, Any] = {}
    exec(compile(source, "<plain>", "exec"), ns)  # noqa: S102 - benchmark baseline
    return ns["work"]


def time_call(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def section_overhead(sb: Sandbox, plain: Sandbox, runs: int, cold_runs: int) -> dict[str, float]:
    """``sb`` has the code cache on, ``plain`` is a default Sandbox."""
    print("\n1. Per-run overhead of a trivial skill")
    trivial = "def f():\n    return 1\n"
    for box in (sb, plain):
        for _ in range(20):
            box.run(trivial, entry="f")
    warm: list[float] = []
    uncached: list[float] = []
    for _ in range(runs):  # alternating: the same load on both
        for box, samples in ((sb, warm), (plain, uncached)):
            t0 = time.perf_counter()
            r = box.run(trivial, entry="f")
            samples.append((time.perf_counter() - t0) * 1000.0)
            assert r.ok and r.value == 1, r
    ns: dict[str, Any] = {}
    exec(compile(trivial, "<direct>", "exec"), ns)  # noqa: S102
    f = ns["f"]
    loops = 200_000
    t0 = time.perf_counter()
    for _ in range(loops):
        f()
    direct_ms = (time.perf_counter() - t0) * 1000.0 / loops
    cold = []
    for _ in range(cold_runs):
        t0 = time.perf_counter()
        with Sandbox(workers=1) as fresh:
            r = fresh.run(trivial, entry="f")
        cold.append((time.perf_counter() - t0) * 1000.0)
        assert r.ok, r
    p50, p90, p99 = (percentile(warm, q) for q in (0.5, 0.9, 0.99))
    u50, u90, u99 = (percentile(uncached, q) for q in (0.5, 0.9, 0.99))
    cold_p50 = statistics.median(cold)
    # A source never seen: the child compiles it (and sends the code to the host's cache);
    # its compile time is the child's own measurement, in the Sandbox's totals.
    compile_ms, fresh_total = [], []
    for i in range(min(runs, 200)):
        source = f"def f():\n    # {i} {time.perf_counter_ns()}\n    return 1\n"
        before = sb.stats()["compile_ms"]
        r = sb.run(source, entry="f")
        assert r.ok, r
        spent = sb.stats()["compile_ms"] - before
        compile_ms.append(spent)
        fresh_total.append(r.duration_ms - spent)
    # What isolation costs in processes: one fork + exit + reap of a process this size.
    fork_ms = []
    for _ in range(100):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        fork_ms.append((time.perf_counter() - t0) * 1000.0)
    print(f"   direct call                 {direct_ms * 1000:9.3f} us")
    print(f"   warm pool  p50 {p50:7.3f} ms  p90 {p90:7.3f} ms  p99 {p99:7.3f} ms  ({runs} runs, "
          "code cache on)")
    print(f"   no cache   p50 {u50:7.3f} ms  p90 {u90:7.3f} ms  p99 {u99:7.3f} ms  ({runs} runs, "
          "the default: the child compiles the source)")
    print(f"   cold process per run p50    {cold_p50:9.1f} ms  ({cold_runs} runs: start, run, close)")
    print(f"   compile a new source  p50   {statistics.median(compile_ms):9.3f} ms "
          f"(in the run's child; runs of a new source: p50 {statistics.median(fresh_total):.3f}"
          " ms beyond compiling)")
    print(f"   fork + exit + reap    p50   {statistics.median(fork_ms):9.3f} ms "
          "(this benchmark process; the zygote forks ahead, off the run's path)")
    print(f"   warm p50 / direct call      {p50 / direct_ms:9.0f}x")
    print(f"   cold p50 / warm p50         {cold_p50 / p50:9.1f}x")
    print(f"   target: warm p50 <= {TARGET_WARM_P50_MS} ms -> {verdict(p50 <= TARGET_WARM_P50_MS)}")
    return {"warm_p50": p50, "uncached_p50": u50, "cold_p50": cold_p50,
            "direct_us": direct_ms * 1000,
            "compile_p50": statistics.median(compile_ms), "fork_p50": statistics.median(fork_ms)}


def section_cpu(sb: Sandbox, n: int, reps: int) -> float:
    print(f"\n2. CPU-bound skill code, n={n} (best of {reps}; median in brackets)")
    print(f"   {'workload':18s} {'plain exec':>20s} {'sandbox':>20s} {'ratio':>7s} "
          f"{'(medians)':>9s}")
    ratios = []
    big = Limits(cpu_seconds=60, wall_seconds=120, memory_mb=1024)
    for name, source in WORKLOADS.items():
        fn = plain_fn(source)
        expected = fn(n)
        # One run puts the source's code in the Sandbox's code cache: compiling is
        # reported in section 1, not here.
        sb.run(source, entry="work", args={"n": 10}, limits=big)
        plain, boxed = [], []
        for _ in range(reps):
            plain.append(time_call(lambda: fn(n)))  # noqa: B023 - called at once
            t0 = time.perf_counter()
            r = sb.run(source, entry="work", args={"n": n}, limits=big)
            boxed.append((time.perf_counter() - t0) * 1000.0)
            assert r.ok, r.error
            assert r.value == (list(expected) if isinstance(expected, tuple) else expected), (
                name, r.value, expected)
        (pb, pm), (sbest, smed) = best_and_median(plain), best_and_median(boxed)
        ratio = sbest / pb
        ratios.append(ratio)
        print(f"   {name:18s} {pb:9.1f} ms [{pm:7.1f}] {sbest:9.1f} ms [{smed:7.1f}] {ratio:6.2f}x "
              f"{smed / pm:8.2f}x")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"   geometric mean ratio {geo:.2f}x; target <= {TARGET_CPU_RATIO}x -> "
          f"{verdict(geo <= TARGET_CPU_RATIO)}")
    return geo


def section_tool(sb: Sandbox, calls: int) -> float:
    print("\n3. Tool call round trip")
    code = f"def f():\n    s = 0\n    for i in range({calls}):\n        s += echo(x=i)\n    return s\n"
    base = "def f():\n    s = 0\n    for i in range({calls}):\n        s += i\n    return s\n"
    base = base.format(calls=calls)
    limits = Limits(max_tool_calls=calls + 1, wall_seconds=60, cpu_seconds=30)
    with_tools, without = [], []
    for _ in range(7):
        t0 = time.perf_counter()
        r = sb.run(code, entry="f", tools={"echo": lambda x: x}, limits=limits)
        with_tools.append((time.perf_counter() - t0) * 1000.0)
        assert r.ok and len(r.calls) == calls, r.error
        t0 = time.perf_counter()
        sb.run(base, entry="f", limits=limits)
        without.append((time.perf_counter() - t0) * 1000.0)
    per_call = (min(with_tools) - min(without)) / calls * 1000.0
    print(f"   {calls} calls: {min(with_tools):.1f} ms vs {min(without):.1f} ms without tools")
    print(f"   one tool call round trip    {per_call:9.1f} us (JSON over a pipe, validated, recorded)")
    return per_call


def section_smolagents(sb: Sandbox, n: int) -> float | None:
    print(f"\n4. AST-interpreting executor (smolagents LocalPythonExecutor), n={n}")
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        print("   skipped: smolagents is not installed "
              "(pip install smolagents; it is not a project dependency)")
        return None
    ratios = []
    print(f"   {'workload':18s} {'smolagents':>12s} {'sandbox':>12s} {'sandbox faster':>15s}")
    for name, source in WORKLOADS.items():
        ex = LocalPythonExecutor(additional_authorized_imports=[], timeout_seconds=None)
        ex.send_tools({})
        program = source + f"\nwork({n})\n"
        smol = []
        for _ in range(2):
            t0 = time.perf_counter()
            out = ex(program)
            smol.append((time.perf_counter() - t0) * 1000.0)
        expected = plain_fn(source)(n)
        got = out.output
        assert (list(got) if isinstance(got, tuple) else got) == (
            list(expected) if isinstance(expected, tuple) else expected), (name, got)
        boxed = []
        for _ in range(5):
            t0 = time.perf_counter()
            r = sb.run(source, entry="work", args={"n": n})
            boxed.append((time.perf_counter() - t0) * 1000.0)
            assert r.ok, r.error
        ratio = min(smol) / min(boxed)
        ratios.append(ratio)
        print(f"   {name:18s} {min(smol):9.1f} ms {min(boxed):9.2f} ms {ratio:14.0f}x")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"   geometric mean: sandbox is {geo:.0f}x faster; target >= {TARGET_VS_AST:.0f}x -> "
          f"{verdict(geo >= TARGET_VS_AST)}")
    return geo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    quick = opts.quick
    print(f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs; pid {os.getpid()}")
    with Sandbox(workers=1, code_cache=True) as sb, Sandbox(workers=1) as plain:
        sb.run("def f():\n    return 1\n", entry="f")
        hard = sb.hardening()
        print("worker hardening: " + ", ".join(
            f"{k}={v}" for k, v in hard.items() if k in ("uid", "chroot", "netns", "seccomp")))
        overhead = section_overhead(sb, plain, runs=200 if quick else 1000,
                                    cold_runs=5 if quick else 15)
        geo = section_cpu(sb, n=200_000 if quick else 400_000, reps=3 if quick else 15)
        per_call = section_tool(sb, calls=200 if quick else 1000)
        smol = section_smolagents(sb, n=20_000 if quick else 40_000)
    print("\nSummary")
    print(f"   warm per-run overhead p50   {overhead['warm_p50']:.3f} ms with the code cache "
          f"(target <= {TARGET_WARM_P50_MS} ms: {verdict(overhead['warm_p50'] <= TARGET_WARM_P50_MS)});"
          f" {overhead['uncached_p50']:.3f} ms without")
    print(f"   compile a new source p50    {overhead['compile_p50']:.3f} ms (not in the warm figure)")
    print(f"   fork + exit + reap p50      {overhead['fork_p50']:.3f} ms")
    print(f"   CPU-bound vs plain exec     {geo:.2f}x geometric mean "
          f"(target <= {TARGET_CPU_RATIO}x: {verdict(geo <= TARGET_CPU_RATIO)})")
    print(f"   tool call round trip        {per_call:.0f} us")
    if smol is None:
        print("   vs AST executor             skipped (smolagents not installed)")
    else:
        print(f"   vs AST executor             {smol:.0f}x faster "
              f"(target >= {TARGET_VS_AST:.0f}x: {verdict(smol >= TARGET_VS_AST)})")


if __name__ == "__main__":
    main()
