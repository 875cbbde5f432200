"""The uplift step: ``python -m benchmarks uplift`` (issue 26 item 1).

A world with one deliberately harmful skill. On the helpdesk world a fresh library learns
the verified train traces of three workflows (real learning, real embedding); the tenant
opts in to a 5% uplift holdout (``configure_uplift(share=0.05, side_effects=True)``: these
workflows change state, so the tenant has to say so). Then ``SESSIONS`` sessions of each
workflow arrive interleaved in a seeded order; each one is a held-out ticket of its workflow:

1. the agent fetches with the session id (``fetch(task, k=2, session=...)``);
2. when the top match is its workflow's skill and the result did not abstain, the agent runs
   it in the sandbox (the real run, not recorded as a trace) and reports the run a success
   (``feedback(name, True, session=...)``): *its runs succeed*, so neither reliability nor the
   quarantine rule can be what removes it;
3. the session's task outcome is drawn from the world's rates and reported with
   ``record_session_outcome(session, success, cost=...)``: a task solved with the harmful
   skill succeeds ``HARMFUL_WITH`` (80%) of the time, without a skill ``HARMFUL_WITHOUT``
   (98%); the good skills' tasks ``GOOD_WITH`` (95%) with, ``GOOD_WITHOUT`` (70%) without.
   (The rates are the world's, not the tools': its tool calls all succeed. This world is
   built to make tasks worse and is exempt from the other suites' made-worse 0.)

Measured per seed: the session of its workflow at which each skill was suppressed (or not),
its uplift at the end (success with and without, the Newcombe interval, n per arm), and the
cost of the holdout: the expected successes the held-back sessions lost
(``sum(with - without)`` over them: positive for a good skill, negative, a gain, for the
harmful one) against what suppression saved (the harmful skill's remaining sessions at
``HARMFUL_WITHOUT - HARMFUL_WITH`` each, compared with a library that keeps serving it).
Targets: the harmful skill suppressed within ``SESSIONS`` (1,000) sessions of its workflow
in every seed, the good ones never.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, markdown_lines
from benchmarks.suite_library import learn_gold, open_library, skill_workflows, write_results
from benchmarks.worlds import Task, load_tasks
from benchmarks.worlds.helpdesk import HelpdeskWorld
from skill_library.uplift import exposures

WORLD = "helpdesk"
#: the workflow whose skill is the harmful one
HARMFUL = "reset_password"
#: the workflows whose skills help
GOOD = ("unlock_account", "revoke_access")
#: sessions of each workflow
SESSIONS = 1000
#: the holdout share the tenant opts in to
SHARE = 0.05
#: task success with the harmful skill and without a skill
HARMFUL_WITH, HARMFUL_WITHOUT = 0.80, 0.98
#: task success with a good skill and without a skill
GOOD_WITH, GOOD_WITHOUT = 0.95, 0.70
#: tool calls of a session solved with a skill (one call: the skill) and without (the agent's own)
CALLS_WITH, CALLS_WITHOUT = 1, 4

Progress = Callable[[str, int, int], None]


class RepeatingEmbedder:
    """``embedder`` with each text's vector kept: the sessions reuse a few dozen tickets, and
    embedding a ticket again would only cost time (the same model, the same vectors)."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._seen: dict[str, list[float]] = {}

    @property
    def model_name(self) -> str:
        return str(self._embedder.model_name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if missing:
            self._seen.update(zip(missing, self._embedder.embed(missing)))
        return [self._seen[t] for t in texts]


@dataclass
class UpliftConfig:
    """One run of the uplift step."""

    out: Path = Path("bench-output/uplift")
    seeds: int = 3
    sessions: int = SESSIONS
    share: float = SHARE
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"world": WORLD, "harmful": HARMFUL, "good": list(GOOD), "sessions": self.sessions,
                "share": self.share, "seeds": self.seeds, "out": str(self.out), "command": self.command,
                "rates": {"harmful_with": HARMFUL_WITH, "harmful_without": HARMFUL_WITHOUT,
                          "good_with": GOOD_WITH, "good_without": GOOD_WITHOUT}}


def rates(workflow: str) -> tuple[float, float]:
    """(success with the workflow's skill, without a skill)."""
    return (HARMFUL_WITH, HARMFUL_WITHOUT) if workflow == HARMFUL else (GOOD_WITH, GOOD_WITHOUT)


def run_uplift(config: UpliftConfig, *, tasks: list[Task] | None = None, embedder: Any = None,
               progress: Progress | None = None) -> dict[str, Any]:
    """Run the step; return its results (what ``results.json`` holds)."""
    started = time.perf_counter()
    world = HelpdeskWorld()
    all_tasks = tasks if tasks is not None else load_tasks(WORLD)
    workflows = (HARMFUL, *GOOD)
    train = [t for t in all_tasks if t.split == "train" and t.workflow in workflows]
    test = {w: [t for t in all_tasks if t.split == "test" and t.workflow == w] for w in workflows}
    if any(not test[w] for w in workflows):
        raise ValueError(f"the uplift step needs test tickets of {', '.join(workflows)}")
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    embedder = RepeatingEmbedder(embedder)
    scanner = ValueScanner(world.personal_values(all_tasks))
    privacy = PrivacyReport(values=len(scanner))
    seeds: list[dict[str, Any]] = []
    total = config.seeds * config.sessions * len(workflows)
    done = 0
    for seed in range(config.seeds):
        library = open_library(Path(config.out) / "libraries" / f"seed{seed}", world, embedder=embedder)
        try:
            learned = learn_gold(library, world, train)
            owner = {w: sorted(n for n, ws in skill_workflows(train, learned).items() if w in ws)
                     for w in workflows}
            skill_of = {w: names[0] for w, names in owner.items() if names}
            if len(skill_of) < len(workflows):
                raise ValueError(f"seed {seed}: not every workflow was learned into a skill: {owner}")
            library.configure_uplift(share=config.share, side_effects=True, skills=sorted(skill_of.values()))
            rng = random.Random(seed)
            stream = [w for w in workflows for _ in range(config.sessions)]
            rng.shuffle(stream)
            seen = {w: 0 for w in workflows}
            per: dict[str, dict[str, Any]] = {w: {
                "skill": skill_of[w], "served": 0, "held_back": 0, "other": 0, "suppressed_at": None,
                "suppressed_at_overall": None, "lost_expected": 0.0, "successes": 0} for w in workflows}
            for i, workflow in enumerate(stream):
                seen[workflow] += 1
                task = test[workflow][rng.randrange(len(test[workflow]))]
                session = f"seed{seed}-session{i}"
                result = library.fetch(task.instruction, k=2, session=session)
                name = skill_of[workflow]
                with_rate, without_rate = rates(workflow)
                entry = per[workflow]
                # the arm is the library's: the top match of a result that did not abstain
                arm = exposures(library, session).get(name, (None, 0))[0]
                if arm == "held_back" and name not in result.held_back:
                    raise AssertionError(f"session {session}: held back but not flagged in fetch's result")
                if arm == "served":
                    skill = library.get(name)
                    params = (skill.parameters or {}).get("properties", {})
                    world.reset(task.seed, task)
                    run = library.run(name, {p: v for p, v in task.params.items() if p in params}, world.tools(),
                                      tool_schemas=world.tool_schemas(), record=False)
                    if run.ok:
                        library.feedback(name, True, session=session)  # its runs succeed
                    ok = rng.random() < with_rate
                    entry["served"] += 1
                    calls = CALLS_WITH
                elif arm == "held_back":
                    ok = rng.random() < without_rate
                    entry["held_back"] += 1
                    entry["lost_expected"] += with_rate - without_rate
                    calls = CALLS_WITHOUT
                else:  # suppressed, or fetch gave another skill or abstained: the agent's own way
                    ok = rng.random() < without_rate
                    entry["other"] += 1
                    calls = CALLS_WITHOUT
                entry["successes"] += ok
                given = exposures(library, session)  # fetch served or held back a measured skill
                for other in sorted(set(given) - {name}):  # another workflow's skill: not its evidence
                    library.record_session_outcome(session, "wrong_skill", skills=[other],
                                                   reason="the top match was another workflow's skill")
                if name in given:
                    library.record_session_outcome(session, ok, skills=[name], cost={"tool_calls": calls})
                if entry["suppressed_at"] is None and library.get(name).status == "quarantined":
                    entry["suppressed_at"], entry["suppressed_at_overall"] = seen[workflow], i + 1
                done += 1
                if progress and (done % 25 == 0 or done == total):
                    progress(f"seed {seed}: sessions", done, total)
            for workflow, entry in per.items():
                found = library.uplift(entry["skill"])
                skill = library.get(entry["skill"])
                entry.update(uplift=found.to_json(), describe=found.describe(), status=skill.status,
                             reliability=round(skill.reliability, 3), run_failures=skill.failures)
                if workflow == HARMFUL and entry["suppressed_at"] is not None:
                    remaining = config.sessions - entry["suppressed_at"]
                    entry["saved_expected"] = remaining * (HARMFUL_WITHOUT - HARMFUL_WITH)
            seeds.append({"seed": seed, "workflows": per})
            privacy.add(check_library(library, scanner, label=f"seed{seed}"))
        finally:
            library.close()
    harmful_ok = all(s["workflows"][HARMFUL]["suppressed_at"] is not None for s in seeds)
    good_ok = all(s["workflows"][w]["suppressed_at"] is None for s in seeds for w in GOOD)
    return {"config": config.to_json(), "seeds": seeds, "passed": harmful_ok and good_ok,
            "harmful_suppressed_every_seed": harmful_ok, "good_never_suppressed": good_ok,
            "elapsed_s": round(time.perf_counter() - started, 1), "privacy": privacy.to_json()}


def markdown(results: dict[str, Any]) -> str:
    """results.md: per seed and workflow, suppression, uplift and the holdout's cost."""
    c = results["config"]
    lines = [f"# Uplift step (helpdesk world; {c['harmful']} made harmful)", "",
             f"command: `{c.get('command') or 'python -m benchmarks uplift'}`; {c['sessions']} sessions per "
             f"workflow, holdout {c['share']:.0%}, {c['seeds']} seeds; {results['elapsed_s']} s", "",
             f"harmful skill suppressed within {c['sessions']} sessions of its workflow in every seed: "
             f"{'yes' if results['harmful_suppressed_every_seed'] else 'no'}; good skills never suppressed: "
             f"{'yes' if results['good_never_suppressed'] else 'no'}", "",
             "| seed | workflow | skill | suppressed at session (of its workflow) | served / held back / other "
             "| uplift, 95% CI (points) | verdict | run failures | expected successes lost to the holdout "
             "| saved by suppression |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in results["seeds"]:
        for workflow, e in s["workflows"].items():
            u = e["uplift"]
            ci = (f"{100 * u['difference']:+.1f} [{100 * u['low']:+.1f}, {100 * u['high']:+.1f}]"
                  if u["difference"] is not None else "–")
            lines.append(f"| {s['seed']} | {workflow} | {e['skill']} | {e['suppressed_at'] or 'no'} | "
                         f"{e['served']} / {e['held_back']} / {e['other']} | {ci} | {u['verdict']} | "
                         f"{e['run_failures']} | {e['lost_expected']:+.1f} | "
                         f"{e.get('saved_expected', 0.0):.1f} |")
    lines += ["", "The cost of the holdout per seed: expected successes the held-back sessions of the good "
              "skills lost, against what the harmful skill's held-back sessions gained and its suppression "
              "saved (its remaining sessions without it, against a library that keeps serving it):", ""]
    for s in results["seeds"]:
        lost = sum(e["lost_expected"] for w, e in s["workflows"].items() if w != c["harmful"])
        harmful = s["workflows"][c["harmful"]]
        gained = -harmful["lost_expected"] + harmful.get("saved_expected", 0.0)
        lines.append(f"- seed {s['seed']}: {lost:.1f} successes lost to the good skills' holdout, "
                     f"{gained:.1f} gained on the harmful one ({-harmful['lost_expected']:.1f} by its holdout, "
                     f"{harmful.get('saved_expected', 0.0):.1f} by its suppression)")
    lines += ["", "## Privacy", ""] + markdown_lines(results["privacy"])
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> str:
    """Write results.json and results.md into ``out``; return the markdown."""
    return write_results(results, out, markdown)
