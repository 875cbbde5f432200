"""τ-bench retail in the harness (benchmarks/taubench/): the world against the gold replay,
the data-folder errors, the binding rules, the plan attempt hook (with a stand-in library)
and one fold over the first 100 train tasks through the real library.

The data folder is ../shared/benchmarks/taubench-retail (read-only); the tests skip when it
is absent. Nothing of its task texts is written here: tasks are picked by shape at run time.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from benchmarks.taubench import binding, data, protocol
from benchmarks.taubench.data import Call, DataError, Retail

DATA = data.default_data_dir()
needs_data = pytest.mark.skipif(DATA is None, reason="no ../shared/benchmarks/taubench-retail")


@pytest.fixture(scope="module")
def retail() -> Retail:
    return Retail(DATA)


# -- the world --------------------------------------------------------------------------------


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.slow
@needs_data
def test_world_reaches_every_gold_replay_state(retail):
    """Every task's gold, replayed on the world, reaches its gold_replay hash (and error list).

    Fast: each replay shares the untouched records of one base copy and deep-copies only the
    records its gold names (the orders, their users, the users named); the hash is composed
    from the base records' cached canonical JSON and the copied records' fresh JSON, which is
    the whole database's canonical JSON (checked once against the world's own hash). That a
    replay changed no shared record is checked at the end: the base still hashes as fresh."""
    fresh = retail.new_env()
    initial = fresh.state_hash()
    base = fresh.data
    cached = {table: {key: _canon(rec) for key, rec in rows.items()} for table, rows in base.items()}

    def composed(data: dict[str, Any]) -> str:
        tables = []
        for table in sorted(data):
            rows = data[table]
            parts = [f"{_canon(key)}:{cached[table][key] if rows[key] is base[table][key] else _canon(rows[key])}"
                     for key in sorted(rows)]
            tables.append(f"{_canon(table)}:{{{','.join(parts)}}}")
        return hashlib.sha256(("{" + ",".join(tables) + "}").encode("utf-8")).hexdigest()

    assert composed(base) == initial
    assert len(retail.split("train")) == 500 and len(retail.split("dev")) == 20
    for task in retail.tasks:
        data = {table: dict(rows) for table, rows in base.items()}
        orders = {a.kwargs["order_id"] for a in task.actions if a.kwargs.get("order_id") in data["orders"]}
        users = {data["orders"][o]["user_id"] for o in orders} | {
            a.kwargs["user_id"] for a in task.actions if a.kwargs.get("user_id") in data["users"]}
        for table, keys in (("orders", orders), ("users", users)):
            for key in keys:
                data[table][key] = copy.deepcopy(base[table][key])
        env = retail.env_module.RetailEnv(data=data)
        errors = []
        for i, action in enumerate(task.actions):
            if action.name == "transfer_to_human_agents":  # the gold replay skips it (no effect)
                continue
            out = env.call(action.name, **action.kwargs)
            if out.startswith("Error") or out.startswith("Unknown action"):
                errors.append(i)
        got = composed(env.data)
        assert got == task.gold_hash, task.id
        assert (got != initial) == task.changes_state, task.id
        assert errors == [e["index"] for e in task.gold_errors], task.id
    assert retail.env_module.state_hash(base) == initial  # no replay touched a shared record


@needs_data
def test_gold_traces_record_failed_calls_as_errors(retail):
    erred = [t for t in retail.split("train") if t.gold_errors and t.changes_state]
    assert erred, "the train split has state-changing tasks whose gold hits a tool error"
    trace = protocol.gold_trace(retail, erred[0])
    failed = [c for c in trace.calls if not c.ok]
    assert [trace.calls.index(c) for c in failed] == [e["index"] for e in erred[0].gold_errors]
    assert all(c.error.startswith("Error:") and c.result is None for c in failed)
    clean = next(t for t in retail.split("train") if t.changes_state and not t.gold_errors and len(t.writes) > 1)
    trace = protocol.gold_trace(retail, clean)
    assert all(c.ok and isinstance(c.result, str) for c in trace.calls)
    assert trace.task == clean.instruction and trace.outcome.success
    assert trace.params == binding.trace_params(clean.writes)


@needs_data
def test_tools_declared_with_side_effects(retail):
    specs = retail.tool_specs()
    assert len(specs) == 16
    read_only = {n for n, s in specs.items() if not s.side_effects}
    assert read_only == set(retail.env_module.READ_ONLY_TOOLS)
    assert "cancel_pending_order" not in read_only and "modify_user_address" not in read_only


def test_folds_by_task_id_hash():
    ids = [f"retail_train_{i:03d}" for i in range(200)]
    assert [data.fold_of(i) for i in ids] == [int(hashlib.sha256(i.encode()).hexdigest(), 16) % 5 for i in ids]
    assert set(data.fold_of(i) for i in ids) == {0, 1, 2, 3, 4}


# -- bad data ---------------------------------------------------------------------------------


def test_missing_data_folder_names_the_option(tmp_path, capsys):
    from benchmarks.__main__ import main

    assert main(["taubench", "--data", str(tmp_path / "nowhere"), "--no-progress"]) == 2
    out = capsys.readouterr().out
    assert "--data" in out and "nowhere" in out and len(out.strip().splitlines()) == 1


def test_absent_default_folder_names_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "project_root", lambda: tmp_path / "project")
    with pytest.raises(DataError, match="--data"):
        data.resolve_data_dir(None)


@needs_data
def test_partial_data_folder_names_the_missing_file(tmp_path, capsys):
    from benchmarks.__main__ import main

    partial = tmp_path / "partial"
    shutil.copytree(DATA, partial)
    for folder in (partial, partial / "retail"):
        os.chmod(folder, 0o755)
    (partial / "retail" / "products.json").unlink()
    assert main(["taubench", "--data", str(partial), "--no-progress"]) == 2
    out = capsys.readouterr().out
    assert "retail/products.json" in out and len(out.strip().splitlines()) == 1


# -- binding ----------------------------------------------------------------------------------

WRITES = [
    Call("cancel_pending_order", {"order_id": "#A", "reason": "r"}),
    Call("return_delivered_order_items", {"order_id": "#B", "item_ids": ["1", "2"], "payment_method_id": "p"}),
    Call("return_delivered_order_items", {"order_id": "#C", "item_ids": ["3"], "payment_method_id": "p"}),
]


def _schema(**props: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": t} for n, t in props.items()}, "required": list(props)}


def test_numbered_parameters_take_values_in_call_order():
    args = binding.bind_gold(_schema(order_id="string", order_id_2="string", order_id_3="string",
                                     item_ids_2="array", payment_method_id="string"), WRITES)
    assert args == {"order_id": "#A", "order_id_2": "#B", "order_id_3": "#C", "item_ids_2": ["3"],
                    "payment_method_id": "p"}
    assert binding.trace_params(WRITES) == {"order_id": "#A", "order_id_2": "#B", "order_id_3": "#C",
                                            "reason": "r", "item_ids": ["1", "2"], "item_ids_2": ["3"],
                                            "payment_method_id": "p"}


def test_required_parameter_without_a_value_does_not_bind():
    assert binding.bind_gold(_schema(order_id="string", order_id_4="string"), WRITES) is None
    assert binding.bind_gold(_schema(new_item_ids="array"), WRITES) is None
    optional = {"type": "object", "properties": {"order_id": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["order_id"]}
    assert binding.bind_gold(optional, WRITES) == {"order_id": "#A"}


def test_list_parameters_take_all_values():
    assert binding.bind_gold(_schema(order_ids="array"), WRITES) == {"order_ids": ["#A", "#B", "#C"]}
    assert binding.bind_gold(_schema(order_id="array"), WRITES) == {"order_id": ["#A", "#B", "#C"]}
    # a list argument keeps its own lists: item_ids is the first call's list, not all items
    assert binding.bind_gold(_schema(item_ids="array"), WRITES) == {"item_ids": ["1", "2"]}


def test_text_binding_takes_only_values_written_in_the_text():
    text = "I am Ada Lovelace, ada.l@example.com, zip 12345. Cancel #W1234567, no longer needed; also #W7654321."
    args = binding.bind_text(_schema(order_id="string", order_id_2="string", reason="string", email="string",
                                     zip="string"), text)
    assert args == {"order_id": "#W1234567", "order_id_2": "#W7654321", "reason": "no longer needed",
                    "email": "ada.l@example.com", "zip": "12345"}
    assert binding.bind_text(_schema(order_id="string", payment_method_id="string"), text) is None


def test_plan_steps_consume_values_across_steps():
    steps = [(_schema(order_id="string", item_ids="array", payment_method_id="string"),
              ["return_delivered_order_items"]),
             (_schema(order_id="string", item_ids="array", payment_method_id="string"),
              ["return_delivered_order_items"]),
             (_schema(order_id="string", reason="string"), ["cancel_pending_order"])]
    bound = binding.bind_plan_steps(steps, WRITES)
    assert bound == [{"order_id": "#B", "item_ids": ["1", "2"], "payment_method_id": "p"},
                     {"order_id": "#C", "item_ids": ["3"], "payment_method_id": "p"},
                     {"order_id": "#A", "reason": "r"}]
    assert binding.bind_plan_steps([(_schema(zip="string"), ["modify_user_address"])], WRITES) == [None]


# -- the plan attempt hook, with a stand-in library ---------------------------------------------


@dataclass
class StandInSkill:
    """A stand-in for a learned skill: parameters, tools and a body calling the tools."""

    name: str
    parameters: dict[str, Any]
    tools: list[str]
    body: Callable[[dict[str, Any], dict[str, Callable[..., str]]], None]
    version: int = 1
    kind: str = "code"


@dataclass
class StandInStep:
    name: str
    version: int = 1
    part: str = ""
    params: list[str] = field(default_factory=list)


@dataclass
class StandInPlan:
    steps: list[StandInStep]


@dataclass
class StandInMatch:
    skill: StandInSkill
    similarity: float = 0.5


@dataclass
class StandInRun:
    ok: bool
    error: Any = None
    limit: str | None = None


class StandInLibrary:
    """A stand-in for a SkillLibrary with ``plan`` (until the real one lands): fetch returns the
    given single skills, plan the given steps, run calls the stand-in skill's body in-process."""

    def __init__(self, skills: list[StandInSkill], plan_steps: list[str], fetched: list[str]) -> None:
        self.skills = {s.name: s for s in skills}
        self.plan_steps, self.fetched = plan_steps, fetched
        self.runs: list[tuple[str, dict[str, Any], bool]] = []
        self.plans_asked: list[int] = []

    def fetch(self, task: str, k: int = 2, **_: Any) -> list[StandInMatch]:
        return [StandInMatch(self.skills[n]) for n in self.fetched[:k]]

    def plan(self, task: str, *, k: int = 8) -> StandInPlan:
        self.plans_asked.append(k)
        return StandInPlan([StandInStep(n, params=list(self.skills[n].parameters["properties"]))
                            for n in self.plan_steps])

    def get(self, name: str, version: int | None = None) -> StandInSkill:
        return self.skills[name]

    def run(self, name, args, tools, *, version=None, tool_schemas=None, record=True) -> StandInRun:
        self.runs.append((name, dict(args), record))
        self.skills[name].body(args, tools)
        return StandInRun(ok=True)


def _one_call_skill(tool: str, kwargs: dict[str, Any]) -> StandInSkill:
    schema = {"type": "object", "properties": {k: {"type": "array" if isinstance(v, list) else "string"}
                                               for k, v in kwargs.items()}, "required": list(kwargs)}
    return StandInSkill(f"do_{tool}", schema, [tool], lambda args, tools: tools[tool](**args) and None)


@needs_data
def test_plan_is_the_first_attempt_and_binds_across_steps(retail):
    task = next(t for t in retail.split("train") if t.shape == "mixed" and not t.gold_errors
                and len(t.writes) == len(t.write_tools) == 2)
    first, second = task.writes
    skills = [_one_call_skill(first.name, first.kwargs), _one_call_skill(second.name, second.kwargs)]
    stand_in = StandInLibrary(skills, plan_steps=[s.name for s in skills], fetched=[skills[0].name, skills[1].name])
    got = protocol.attempts_for(stand_in, retail, task, protocol.Binder("gold", task), k=3)
    assert stand_in.plans_asked == [protocol.PLAN_K]
    assert [a["kind"] for a in got["attempts"]] == ["plan", "skill", "skill"]
    assert got["attempts"][0]["skills"] == [s.name for s in skills]
    assert got["solved_at_1"] and got["attempts"][0]["solved"]
    assert not got["right_first"]  # the top single skill does one of the task's two writes
    assert not got["attempts"][1]["solved"] and not got["attempts"][2]["solved"]  # each does half the task
    assert all(record is False for _, _, record in stand_in.runs)  # evaluation records nothing
    assert stand_in.runs[0] == (skills[0].name, first.kwargs, False)


@needs_data
def test_single_step_plan_leaves_the_single_skills(retail):
    task = next(t for t in retail.split("train") if t.shape == "single" and not t.gold_errors)
    (write,) = task.writes
    skill = _one_call_skill(write.name, write.kwargs)
    stand_in = StandInLibrary([skill], plan_steps=[skill.name], fetched=[skill.name])
    got = protocol.attempts_for(stand_in, retail, task, protocol.Binder("gold", task), k=3)
    assert [a["kind"] for a in got["attempts"]] == ["skill"] and got["solved_at_1"] and got["plan_steps"] == 1
    assert got["right_first"]  # the top match writes with exactly the task's write tool


@needs_data
def test_plan_with_an_unbindable_step_is_a_failed_attempt(retail):
    task = next(t for t in retail.split("train") if t.shape == "single" and not t.gold_errors)
    (write,) = task.writes
    skill = _one_call_skill(write.name, write.kwargs)
    other = _one_call_skill("modify_user_address", {"user_id": "x", "zip": "y"})
    stand_in = StandInLibrary([skill, other], plan_steps=[skill.name, other.name], fetched=[skill.name])
    got = protocol.attempts_for(stand_in, retail, task, protocol.Binder("gold", task), k=3)
    assert got["attempts"][0]["kind"] == "plan" and not got["attempts"][0]["bound"]
    assert got["attempts"][0]["unbound_steps"] == [1]
    assert got["attempts"][1]["solved"] and not got["solved_at_1"] and got["solved_at_k"]


# -- one fold through the real library -----------------------------------------------------------


@needs_data
@pytest.mark.bench
def test_one_fold_over_100_train_tasks(tmp_path, embedder):
    from benchmarks.taubench import TauConfig, run

    results = run(TauConfig(data=DATA, protocol="cv", fold=0, limit=100, out=tmp_path / "out"), embedder=embedder)
    cv = results["cv"]
    assert cv["folds_done"] == ["0"]
    overall = cv["overall"]
    tests = [t for t in Retail(DATA).split("train")[:100] if data.fold_of(t.id) == 0 and t.changes_state]
    assert overall["tasks"] + overall["gold_tool_error_tasks"] == len(tests) == len(cv["records"])
    assert overall["solved_at_k"] > 0 and overall["solved_at_1"] <= overall["solved_at_k"] <= overall["oracle"]
    fold = cv["per_fold"]["0"]
    assert fold["library"]["skills_stored"] >= 1 and fold["library"]["distinct_code_shapes"] >= 1
    assert fold["library"]["traces"] == sum(1 for t in Retail(DATA).split("train")[:100]
                                            if data.fold_of(t.id) != 0 and t.changes_state)
    misses = overall["misses"]
    unsolved = sum(not r["solved_at_k"] for r in cv["records"] if not r["gold_tool_error"])
    assert misses["retrieval"] + misses["generalization"] == unsolved
    for record in cv["records"]:
        assert len(record["attempts"]) <= 3
        assert record["solved_at_k"] <= bool(record["solvers"]) or record["gold_tool_error"]
    written = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"results.json", "results.md"} <= written
    text = (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    for task in tests:  # results hold ids, names and numbers, no task text
        assert task.instruction[:40] not in text


# -- perf_learn on τ-bench traces ------------------------------------------------------------------


def test_perf_learn_taubench_bad_folder_names_the_option(tmp_path, capsys):
    import benchmarks.perf_learn as perf

    assert perf.main(["--taubench", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "--taubench" in err and "nowhere" in err and len(err.strip().splitlines()) == 1


@needs_data
@pytest.mark.bench
def test_perf_learn_taubench_slice(embedder):
    import benchmarks.perf_learn as perf

    # the floor passes embed the same texts twice: the model itself, not the suite's memory
    figures = perf.measure_taubench(str(DATA), 20, embedder=embedder.uncached())
    changing = sum(t.changes_state for t in Retail(DATA).split("train")[:20])
    assert figures["tasks"] == 20 and figures["traces"] == changing
    assert figures["texts_per_s"] > 0 and figures["traces_per_s"] > 0
    assert figures["ratio"] == pytest.approx(figures["traces_per_s"] / figures["texts_per_s"])
    assert figures["skills"] >= 1 and figures["rejected"] == 0
    assert len(figures["floor_passes_s"]) == 2 and figures["floor_cpu_s"] > 0 and figures["learn_cpu_s"] > 0
    assert figures["cpu_ratio"] == pytest.approx(figures["floor_cpu_s"] / figures["learn_cpu_s"])


# -- merging folds run as separate processes ----------------------------------------------------------


def _fold_results(fold: int, solved: list[bool]) -> dict[str, Any]:
    from benchmarks.taubench import TauConfig, report

    ids = [i for i in (f"retail_train_{n:03d}" for n in range(300)) if data.fold_of(i) == fold][: len(solved)]
    records = [{"task_id": i, "shape": "single", "write_tools": ["cancel_pending_order"], "gold_tool_error": False,
                "binding": "gold", "fetched": ["a"], "plan_steps": None,
                "attempts": [{"kind": "skill", "skills": ["a"], "bound": True, "ran": True, "solved": ok}],
                "solved_at_1": ok, "solved_at_k": ok, "solvers": ["a"] if ok else [],
                **({} if ok else {"miss": "generalization"})} for i, ok in zip(ids, solved)]
    skills = [{"name": "a", "version": 1, "status": "active", "tools": ["cancel_pending_order"], "params": ["order_id"],
               "shape": "x", "traces": 3}]
    learn = {"traces": 3, "learn_s": 1.0, "traces_per_s": 3.0, "statuses": {"saved": 1, "merged": 2},
             "traces_per_skill": {"a": 3}}
    cv = {"folds": {str(fold): {"learn": learn, "solve_s": 1.0, "skills": skills, "fetch_args": False, "plan": False,
                                "records": records}}}
    machine = {"host": "h", "cores": 2, "load": [1.0], "commit": "c", "finished": "t", "elapsed_s": 1.0}
    return report.build(TauConfig(protocol="cv", fold=fold, command=f"run {fold}"), cv, None, machine)


def test_right_workflow_first_is_a_share_of_the_tasks_and_none_for_older_results():
    from benchmarks.taubench import report

    rows = _fold_results(0, [True, False, True])["cv"]["records"]
    assert report.summarize(rows)["right_first"] is None  # written before the measure existed
    for row, right in zip(rows, (True, False, False)):
        row["right_first"] = right
    assert report.summarize(rows)["right_first"] == round(1 / 3, 4)


def test_merge_joins_folds_run_apart(tmp_path):
    from benchmarks.taubench import merge

    paths = []
    for fold, solved in ((0, [True, False]), (3, [True, True, True])):
        path = tmp_path / f"f{fold}.json"
        path.write_text(json.dumps(_fold_results(fold, solved)), encoding="utf-8")
        paths.append(path)
    merged = merge(paths, tmp_path / "out")
    cv = merged["cv"]
    assert cv["folds_done"] == ["0", "3"] and cv["overall"]["tasks"] == 5
    assert cv["overall"]["solved_at_k"] == 0.8 and cv["per_fold"]["0"]["summary"]["solved_at_k"] == 0.5
    assert cv["mean_skills_stored"] == 1 and (tmp_path / "out" / "results.md").is_file()
    with pytest.raises(ValueError, match="fold 0 is in two"):
        merge([paths[0], paths[0]], tmp_path / "again")
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json"):
        merge([tmp_path / "bad.json"], tmp_path / "again")


@needs_data
def test_committed_results_hold_no_task_text_or_values(retail):
    import re

    root = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    files = sorted(root.glob("taubench*/results.*"))
    if not files:
        pytest.skip("no committed τ-bench results")
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"#W\d{7}|@example\.com|\b\d{10}\b|(credit_card|paypal|gift_card)_\d+", text), path
        for task in retail.tasks:
            assert task.instruction[:50] not in text, (path, task.id)
