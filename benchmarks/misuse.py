"""The misuse step: ``python -m benchmarks misuse``.

A caller's mistake is not the skill's failure. On the helpdesk world:

1. a fresh library learns the verified train traces of the password-reset workflow (one
   skill expected; the one most of them went into is the skill under test);
2. it runs once on a correct held-out ticket (the agent reports the success with
   ``feedback``);
3. **misuse**: it runs (recording, as an agent's runs do) on ``MISUSE_INPUTS`` wrong inputs,
   typos of a real email, an employee id or a name where the email goes, another company's
   address: the lookup tool raises "no employee has the email ...". The skill must never be
   quarantined, and must still be fetched and run correctly afterwards;
4. **a real failure burst**: the skill's own state-changing call breaks (the world's
   ``reset_password`` raises: the password store is down) and it runs on correct inputs, up
   to ``BURST_MAX`` times. It must be quarantined within the burst (and then no longer be
   fetched).

The library records the outcome of each run itself (a failure in a read-only lookup on the
caller's value is ``misuse``, the skill's own call breaking is ``failure``: outcome kinds,
docs/outcomes.md); the step reads only
the skill's status, counters and what fetch returns, and the outcome kind a run reports
where it reports one. Then the privacy check, as on every run with a library.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from benchmarks.privacy import PrivacyReport, ValueScanner, check_library, explain_subjects, markdown_lines
from benchmarks.suite_library import learn_gold, open_library, outcome_kind, skill_workflows, statuses, write_results
from benchmarks.worlds import Task, load_tasks
from benchmarks.worlds.helpdesk import HelpdeskWorld

WORLD = "helpdesk"
WORKFLOW = "reset_password"
#: the misuse inputs fed to the skill (issue 21: 10)
MISUSE_INPUTS = 10
#: the most runs of the failure burst before the step gives up waiting for a quarantine
BURST_MAX = 12
OUTAGE = "password store unavailable: the directory is in read-only maintenance (try again later)"

Progress = Callable[[str, int, int], None]


@dataclass
class MisuseConfig:
    """One run of the misuse step."""

    out: Path = Path("bench-output/misuse")
    min_reliability: float = 0.6
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"world": WORLD, "workflow": WORKFLOW, "out": str(self.out), "misuse_inputs": MISUSE_INPUTS,
                "burst_max": BURST_MAX, "command": self.command}


def misuse_inputs(email: str, employee_id: str, first: str, last: str) -> list[tuple[str, str]]:
    """Ten wrong values for an ``email`` parameter, each with what is wrong with it."""
    local, _, domain = email.partition("@")
    swapped = local[:2] + local[3] + local[2] + local[4:] if len(local) > 4 else local[::-1]
    wrong = [
        ("two letters swapped", f"{swapped}@{domain}"),
        ("a letter missing", f"{local[:-1]}@{domain}"),
        ("a letter doubled", f"{local[0]}{local}@{domain}"),
        ("a misspelt domain", f"{local}@{domain.replace('example', 'exmaple')}"),
        ("another company's domain", f"{local}@northwind.com"),
        ("the employee id instead", employee_id),
        ("the name instead", f"{first} {last}"),
        ("no @", f"{local}{domain}"),
        ("a dot doubled", local.replace(".", "..", 1) + f"@{domain}"),
        ("someone who does not work here", f"nobody.{local}@{domain}"),
    ]
    return wrong[:MISUSE_INPUTS]


def run_misuse(config: MisuseConfig, *, tasks: list[Task] | None = None, embedder: Any = None,
               progress: Progress | None = None) -> dict[str, Any]:
    """Run the step; return its results (what ``results.json`` holds), redacted."""
    started = time.perf_counter()
    world = HelpdeskWorld()
    all_tasks = tasks if tasks is not None else load_tasks(WORLD)
    train = [t for t in all_tasks if t.split == "train" and t.workflow == WORKFLOW]
    test = [t for t in all_tasks if t.split == "test" and t.workflow == WORKFLOW]
    if not train or len(test) < 2:
        raise ValueError(f"the misuse step needs train and two test tickets of {WORKFLOW}")
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    scanner = ValueScanner(world.personal_values(all_tasks))
    steps = 4 + MISUSE_INPUTS + BURST_MAX
    log: list[dict[str, Any]] = []
    privacy = PrivacyReport(values=len(scanner))
    ticket, person = test[0], test[0].params["email"]
    other, other_person = test[1], test[1].params["email"]
    employee = _employee(world, ticket, person)

    def attempt(library: Any, name: str, phase: str, task: Task, email: str, what: str,
                outage: bool = False) -> dict[str, Any]:
        world.reset(task.seed, task)
        if outage:
            world.break_tool("reset_password", OUTAGE)
        run = library.run(name, {"email": email}, world.tools(), tool_schemas=world.tool_schemas())
        if run.ok:  # the agent reports what the verifier says
            library.feedback(name, bool(world.verify(task).success))
        skill = library.get(name)
        entry = {"phase": phase, "input": what, "ok": run.ok, "error": _short(run.error),
                 "outcome_kind": outcome_kind(run), "status": skill.status, "successes": skill.successes,
                 "failures": skill.failures, "fetched": _fetched(library, task, name)}
        log.append(entry)
        if progress:
            progress(f"{phase}: {what}", len(log), steps)
        return entry

    # the two halves run on two libraries learned alike, so that neither decides the other
    halves: dict[str, Any] = {}
    for half in ("misuse", "burst"):
        library = open_library(Path(config.out) / "libraries" / half, world, embedder=embedder,
                               min_reliability=config.min_reliability)
        try:
            learned = learn_gold(library, world, train)
            owners = Counter(r.skill.name for r in learned if r.skill is not None)
            if not owners:
                raise ValueError(f"no skill was learned from the {WORKFLOW} traces: {statuses(learned)}")
            name = owners.most_common(1)[0][0]
            halves[half] = {"skill": name, "learned_from": dict(owners), "learn_statuses": statuses(learned),
                            "workflows": {k: sorted(v) for k, v in skill_workflows(train, learned).items()},
                            "before": attempt(library, name, f"{half}: before", ticket, person, "a correct email")}
            if half == "misuse":
                runs = []
                for what, value in misuse_inputs(person, employee["employee_id"], employee["first_name"],
                                                 employee["last_name"]):
                    if library.get(name).status != "active":
                        break  # quarantined: it can run no more
                    runs.append(attempt(library, name, "misuse", ticket, value, what))
                active = library.get(name).status == "active"
                after = attempt(library, name, "after misuse", other, other_person, "a correct email") \
                    if active else None
                quarantined_at = next((i + 1 for i, e in enumerate(runs) if e["status"] == "quarantined"), None)
                halves[half].update(
                    inputs=MISUSE_INPUTS, fed=len(runs), quarantined_at=quarantined_at,
                    failed_runs=sum(not e["ok"] for e in runs),
                    outcome_kinds=dict(Counter(str(e["outcome_kind"]) for e in runs)),
                    still_fetched=all(e["fetched"] for e in runs), after=after,
                    passed=quarantined_at is None and after is not None and after["ok"] and after["status"] == "active")
            else:
                runs = []
                for i in range(BURST_MAX):
                    if library.get(name).status != "active":
                        break
                    runs.append(attempt(library, name, "failure burst", other, other_person, f"outage run {i + 1}",
                                        outage=True))
                burst_at = next((i + 1 for i, e in enumerate(runs) if e["status"] == "quarantined"), None)
                halves[half].update(runs=len(runs), quarantined_at=burst_at, final_status=library.get(name).status,
                                    fetched_after=_fetched(library, other, name), passed=burst_at is not None)
            privacy.add(check_library(library, scanner, label=f"{WORLD} {half}",
                                      queries=[t.instruction for t in test], subjects=explain_subjects(train, scanner)))
        finally:
            library.close()
    results = {"config": config.to_json(), "misuse": halves["misuse"], "burst": halves["burst"], "log": log,
               "privacy": privacy.to_json(), "elapsed_s": round(time.perf_counter() - started, 1)}
    return scanner.redact_json(results)


def _employee(world: Any, task: Task, email: str) -> dict[str, Any]:
    world.reset(task.seed, task)
    return world.get_employee(world.find_employee_by_email(email))


def _fetched(library: Any, task: Task, name: str) -> bool:
    """Whether fetch for the ticket returns the skill (among its top 3)."""
    return any(m.skill.name == name for m in library.fetch(task.instruction, k=3))


def _short(value: object, limit: int = 160) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def markdown(results: dict[str, Any]) -> str:
    """results.md: the two halves, pass or fail, and the run log."""
    m, b = results["misuse"], results["burst"]
    quarantined = f"quarantined at input {m['quarantined_at']}" if m["quarantined_at"] else "not quarantined"
    after = "not run (quarantined)" if m["after"] is None else ("ok" if m["after"]["ok"] else "failed")
    burst = (f"quarantined after {b['quarantined_at']} run(s)" if b["quarantined_at"]
             else f"not quarantined after {b['runs']} runs")
    lines = ["# Misuse step (helpdesk world, password reset)", "",
             f"command: `{results['config'].get('command') or 'python -m benchmarks misuse'}`; "
             f"skill `{m['skill']}` learned from {sum(m['learned_from'].values())} traces "
             f"(learn statuses {m['learn_statuses']}); each half on its own library; {results['elapsed_s']} s", "",
             "| half | expected | measured | passed |", "|---|---|---|---|",
             f"| {m['inputs']} misuse inputs (typos, wrong ids: the lookup raises \"not found\") | never quarantined "
             f"| {quarantined} ({m['fed']} fed, outcome kinds {m['outcome_kinds']}); a correct run afterwards: "
             f"{after} | {'yes' if m['passed'] else 'no'} |",
             f"| failure burst (its own reset_password call raising) | quarantined | {burst}; fetched afterwards: "
             f"{b['fetched_after']} | {'yes' if b['passed'] else 'no'} |", "",
             "## Runs", "", "| phase | input | ok | outcome kind | status after | ok/fail | fetched |",
             "|---|---|---|---|---|---|---|"]
    for e in results["log"]:
        lines.append(f"| {e['phase']} | {e['input']} | {e['ok']} | {e['outcome_kind'] or '–'} | {e['status']} | "
                     f"{e['successes']}/{e['failures']} | {e['fetched']} |")
    lines += ["", "## Privacy", ""] + markdown_lines(results["privacy"])
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> str:
    """Write results.json and results.md into ``out``; return the markdown."""
    return write_results(results, out, markdown)
