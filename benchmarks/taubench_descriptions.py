"""Are learned descriptions enough to find a skill? ``python -m benchmarks.taubench_descriptions``.

Issue 21 judges a skill's description by fetch on τ-bench retail's dev split with the
description as the *only* index text: no example tasks, no prototypes, no ranking terms.

1. a fresh library learns the gold traces of every state-changing train task (as
   ``python -m benchmarks taubench --protocol dev`` does);
2. for each state-changing dev task, its *solvers*: the learned skills that reach the gold
   final state when run with the gold arguments (``protocol.oracle``); a task no skill solves
   is a generalization miss and is left out;
3. each active skill is embedded by its description alone, in the form the index embeds it
   (``index_text(when)``), and, as a second index, by its description and its phrase
   (:mod:`skill_library.phrases`); each task's instruction is embedded as fetch embeds a query
   (``query_text``); skills are ranked by cosine (the best of a skill's texts);
4. **fetch@k** = a solver is among the k nearest skills; reported for k = 1, 3 with the
   solver's rank per task.

It reads ``../shared/benchmarks/taubench-retail`` (train and dev only) and writes nothing
of the task texts: results hold task ids, skill names, ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

INDEXES: dict[str, str] = {
    "description": "the description (when) only",
    "description+phrase": "the description and its phrase (skill_library.phrases)",
}
KS = (1, 3)


def _texts(when: str, index: str) -> list[str]:
    from skill_library.phrases import phrase_text
    from skill_library.shapes import index_text

    text = index_text(when)
    phrase = phrase_text(text) if index == "description+phrase" else None
    return [text] + ([phrase] if phrase else [])


def rank_skills(embedder: Any, skills: Sequence[tuple[str, str]], queries: Sequence[str],
                index: str) -> list[list[str]]:
    """For each query, the skill names (``skills``: name, when) nearest first, by the best
    cosine of the skill's texts in ``index`` (one of :data:`INDEXES`)."""
    import numpy as np

    from skill_library.shapes import query_text

    owners, texts = [], []
    for name, when in skills:
        for text in _texts(when, index):
            owners.append(name)
            texts.append(text)
    matrix = np.asarray(embedder.embed(texts), dtype=np.float64)
    vectors = np.asarray(embedder.embed([query_text(q) for q in queries]), dtype=np.float64)
    out = []
    for sims in vectors @ matrix.T:
        best: dict[str, float] = {}
        for name, sim in zip(owners, sims):
            best[name] = max(best.get(name, -2.0), float(sim))
        out.append(sorted(best, key=lambda n: (-best[n], n)))
    return out


def measure(data: Path | None = None, *, embedder: Any = None, limit: int | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the protocol (module doc); return the results."""
    from benchmarks.taubench import protocol
    from benchmarks.taubench.data import Retail

    started = time.perf_counter()
    retail = Retail(data)
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    train = retail.split("train")[:limit]
    tests = [t for t in retail.split("dev") if t.changes_state]
    with tempfile.TemporaryDirectory(prefix="taubench-descriptions-") as tmp:
        library = protocol.open_library(Path(tmp) / "library", retail, embedder)
        try:
            if progress:
                progress(f"learning {len(train)} train tasks")
            learned = protocol.learn(library, retail, train)
            skills = [s for s in library.list() if s.status == "active" and s.kind == "code"]
            solvers: dict[str, list[str]] = {}
            for n, task in enumerate(tests, 1):
                if progress:
                    progress(f"solvers of dev task {n}/{len(tests)}")
                solvers[task.id] = protocol.oracle(library, retail, task, skills,
                                                   protocol.Binder("gold", task), {})
        finally:
            library.close()
    judged = [t for t in tests if solvers[t.id]]
    pairs = [(s.name, s.when) for s in skills]
    indexes: dict[str, Any] = {}
    for index in INDEXES:
        ranked = rank_skills(embedder, pairs, [t.instruction for t in judged], index)
        rows: list[dict[str, Any]] = []
        ranks: list[int] = []
        for task, names in zip(judged, ranked):
            ranks.append(min(names.index(s) + 1 for s in solvers[task.id]))
            rows.append({"task_id": task.id, "rank": ranks[-1], "top": names[:3], "solvers": solvers[task.id]})
        found: dict[str, Any] = {"what": INDEXES[index], "rows": rows}
        for k in KS:
            found[f"fetch_at_{k}"] = round(sum(r <= k for r in ranks) / len(ranks), 4) if ranks else None
        indexes[index] = found
    return {"skills": len(skills), "learn": {k: learned[k] for k in ("traces", "learn_s", "statuses")},
            "dev_tasks": len(tests), "judged": len(judged), "no_solver": [t.id for t in tests if not solvers[t.id]],
            "indexes": indexes, "elapsed_s": round(time.perf_counter() - started, 1)}


def markdown(results: dict[str, Any], command: str) -> str:
    """The results as a short markdown report."""
    lines = ["# τ-bench retail dev: fetch by the description alone", "",
             f"command: `{command}`; {results['skills']} skills learned from {results['learn']['traces']} "
             f"train traces; {results['judged']} of {results['dev_tasks']} state-changing dev tasks have a "
             f"solver (the rest: no learned skill solves them, left out); {results['elapsed_s']} s", "",
             "| index text | fetch@1 | fetch@3 |", "|---|---|---|"]
    for r in results["indexes"].values():
        cells = " | ".join(f"{100 * r[f'fetch_at_{k}']:.0f}%" if r[f"fetch_at_{k}"] is not None else "–" for k in KS)
        lines.append(f"| {r['what']} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.taubench_descriptions",
        description="τ-bench retail dev: fetch@k with the description as the only index text")
    parser.add_argument("--data", type=Path, default=None, help="the taubench-retail folder (default: ../shared/...)")
    parser.add_argument("--limit", type=int, default=None, help="learn only the first N train tasks")
    parser.add_argument("--out", type=Path, default=Path("bench-output/taubench_descriptions"))
    args = parser.parse_args(argv)
    command = "python -m benchmarks.taubench_descriptions" + " ".join(
        [""] + [a for a in (argv if argv is not None else sys.argv[1:])])
    results = measure(args.data, limit=args.limit, progress=lambda m: print(m, file=sys.stderr, flush=True))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"command": command, **results}, indent=1), encoding="utf-8")
    text = markdown(results, command)
    (args.out / "results.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"results: {args.out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
