"""Re-verification after a tool schema change, at 100 skills (issue 26, item 2).

    python benchmarks/perf_schemas.py [--skills 100] [--traces 3]

Builds a library of ``--skills`` synthetic skills that all call the tool ``lookup``, each
added with ``--traces`` stored example traces (a verified success each), the tool declared
with a schema. Then, one after the other:
  - compatible:   ``register_tools`` with a wider ``lookup`` schema: every skill is
                  suspended, re-verified by replaying its traces' calls, and active again;
  - incompatible: a schema requiring an argument the traces never passed: every skill is
                  suspended and held for a person.
For each it prints the wall time of ``register_tools`` (the suspension, the replay and the
re-activation with its index writes) and checks that, once it returned, fetch serves none
of the held versions (target: re-verification of 100 skills <= 10 s; 0 fetches).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

LOOKUP: dict[str, Any] = {"type": "object", "properties": {"item": {"type": "string"}, "shelf": {"type": "integer"}},
          "required": ["item"]}


def build(path: Path, skills: int, traces: int, embedder):  # type: ignore[no-untyped-def]
    from benchmarks.perf_fetch import synthetic_whens
    from skill_library.governance import Policy, ToolSpec
    from skill_library.library import SkillLibrary
    from skill_library.models import Outcome, Provenance, Skill, ToolCall, Trace

    library = SkillLibrary(path, embedder=embedder, policy=Policy(auto_approve="all"))
    library.register_tools({"lookup": ToolSpec(schema=LOOKUP, side_effects=False)})
    whens = synthetic_whens(skills, seed=7)
    made = []
    for i, when in enumerate(whens):
        ids = []
        for j in range(traces):
            trace = Trace(task=f"{when} (shelf {j})", params={"item": f"item{i}", "shelf": j},
                          calls=[ToolCall(name="lookup", arguments={"item": f"item{i}", "shelf": j},
                                          result={"found": True})],
                          result={"found": True}, outcome=Outcome(success=True, verifier="bench"))
            library.context.store.save_trace(trace)
            ids.append(trace.id)
        code = f"def skill_{i}(item: str, shelf: int):\n    return lookup(item=item, shelf=shelf)\n"
        made.append(Skill.from_function(code, when=when, tools=["lookup"],
                                        provenance=Provenance(trace_ids=ids)))
    results = library.add_many(made, verified=True)
    assert all(r.status == "added" for r in results), [r for r in results if r.status != "added"][:3]
    return library, whens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--traces", type=int, default=3)
    args = parser.parse_args(argv)
    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.governance import ToolSpec

    embedder = SentenceTransformerEmbedder(threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        library, whens = build(Path(tmp) / "lib", args.skills, args.traces, embedder)
        print(f"built {args.skills} skills x {args.traces} traces in {time.perf_counter() - started:.1f} s")
        wider = {**LOOKUP, "properties": {**LOOKUP["properties"], "aisle": {"type": "string"}}}
        started = time.perf_counter()
        outcome = library.register_tools({"lookup": ToolSpec(schema=wider, side_effects=False)})
        compatible = time.perf_counter() - started
        assert len(outcome.suspended) == args.skills and len(outcome.reactivated) == args.skills, outcome
        stricter = {**wider, "required": ["item", "store"],
                    "properties": {**wider["properties"], "store": {"type": "string"}}}
        started = time.perf_counter()
        outcome = library.register_tools({"lookup": ToolSpec(schema=stricter, side_effects=False)})
        incompatible = time.perf_counter() - started
        assert len(outcome.held) == args.skills, outcome
        served = sum(len(library.fetch(w, min_reliability=0, abstain=False)) for w in whens)
        library.close()
    print(f"compatible change:   {args.skills} suspended, re-verified and active again in {compatible:.2f} s")
    print(f"incompatible change: {args.skills} suspended and held in {incompatible:.2f} s")
    print(f"fetches of a held version after register_tools returned: {served} (of {len(whens)} queries)")
    ok = compatible <= 10 and served == 0
    print("target (<= 10 s, 0 fetches):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
