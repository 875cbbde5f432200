"""Where fetch's similarity floor comes from: similarities of related and unrelated tasks.

    python benchmarks/calibrate_fetch.py [--out DIR]

For each world (crafting, shop) it learns a library from the train tasks (the harness's
skills condition, seed 0), then fetches (k=1, no similarity floor) for
  - related queries: the world's test tasks (the best match's similarity),
  - unrelated queries: the other world's test tasks and a fixed list of everyday requests
    no skill here solves,
and prints both distributions, the rate of unrelated queries that would get a skill at
each candidate floor, and the share of related queries that keep theirs. The library's
``DEFAULT_MIN_SIMILARITY`` is chosen from this table (docs/fetch.md#fetch-feedback-reliability).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

UNRELATED = [
    "What is the capital of Australia?", "Write a haiku about autumn leaves.",
    "How many calories are in a banana?", "Translate 'good morning' into Italian.",
    "Summarise the plot of Hamlet in two sentences.", "What time is it in Tokyo right now?",
    "Recommend a good science fiction novel.", "Explain how a rainbow forms.",
    "Is it going to rain tomorrow in Paris?", "Tell me a joke about programmers.",
    "Convert 30 degrees Celsius to Fahrenheit.", "Who won the football world cup in 2010?",
    "Suggest a name for my new puppy.", "How do I fix a flat bicycle tyre?",
    "What is the square root of 144?", "Plan a three-day trip to Lisbon.",
    "Why is the sky blue?", "Draft a polite email declining a meeting.",
    "What are the symptoms of the flu?", "Give me a recipe for pancakes.",
    "hello", "thanks, that is all", "can you help me?", "What can you do?",
]
FLOORS = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from benchmarks.harness import RunConfig, default_embedder, run_benchmark
    from benchmarks.worlds import load_tasks
    from skill_library import SkillLibrary

    print("$ python benchmarks/calibrate_fetch.py")
    embedder = default_embedder()
    out = args.out or Path(tempfile.mkdtemp(prefix="calibrate-"))
    agents = {"crafting": "explorer", "shop": "replay"}
    tests = {w: [t.instruction for t in load_tasks(w) if t.split == "test"] for w in agents}
    related: list[float] = []
    unrelated: list[float] = []
    for world, agent in agents.items():
        config = RunConfig(world=world, agent=agent, conditions=["skills"], seeds=1,
                           out=out / world)
        run_benchmark(config, embedder=embedder)
        other = [q for w, qs in tests.items() if w != world for q in qs]
        with SkillLibrary(out / world / "libraries" / "skills-seed0", embedder=embedder) as library:
            for query in tests[world]:
                found = library.fetch(query, k=1, min_similarity=-1.0)
                related.append(found[0].similarity if found else -1.0)
            for query in other + UNRELATED:
                found = library.fetch(query, k=1, min_similarity=-1.0)
                unrelated.append(found[0].similarity if found else -1.0)

    def describe(name: str, values: list[float]) -> None:
        q = statistics.quantiles(values, n=20)
        print(f"{name:10s} n={len(values):3d}  min {min(values):.3f}  p5 {q[0]:.3f}  "
              f"median {statistics.median(values):.3f}  p95 {q[-1]:.3f}  max {max(values):.3f}")

    describe("related", related)
    describe("unrelated", unrelated)
    print("\nfloor  related kept  unrelated fetched")
    for floor in FLOORS:
        kept = sum(v >= floor for v in related) / len(related)
        leaked = sum(v >= floor for v in unrelated) / len(unrelated)
        print(f"{floor:5.2f}  {kept:11.0%}  {leaked:16.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
