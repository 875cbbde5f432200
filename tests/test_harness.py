"""The benchmark harness end to end: protocol, metrics, results.json, results.md, plots, CLI."""

from __future__ import annotations

import json

import pytest

from benchmarks import __main__ as cli
from benchmarks import report
from benchmarks.harness import RunConfig, run_benchmark, train_order
from benchmarks.worlds import load_tasks
from skill_library.governance import Policy

#: these tests learn skills that activate: they opt in to auto-approval
ALL = Policy(auto_approve="all")


def small_suite():
    """Four crafting tasks: two train workflows, then one repeat with another count and one composition."""
    tasks = {t.id: t for t in load_tasks("crafting")}
    ids = ["crafting-train-13-iron_ingot-5", "crafting-train-18-iron_pickaxe-1",
           "crafting-test-08-iron_ingot-3", "crafting-test-14-iron_sword-1"]
    return [tasks[i] for i in ids]


def test_train_order_is_the_file_for_seed_zero_and_a_shuffle_otherwise():
    tasks = load_tasks("crafting", "train")
    assert train_order(tasks, 0) == tasks
    shuffled = train_order(tasks, 1)
    assert shuffled != tasks and sorted(t.id for t in shuffled) == sorted(t.id for t in tasks)
    assert train_order(tasks, 1) == shuffled


def test_none_condition_end_to_end(tmp_path):
    config = RunConfig(world="crafting", agent="explorer", conditions=["none"], seeds=2, out=tmp_path)
    seen = []
    results = run_benchmark(config, tasks=small_suite(), progress=lambda *a: seen.append(a))
    records = results["records"]
    assert len(records) == 8 and seen[-1] == ("done", 8, 8)
    assert {(r["seed"], r["phase"]) for r in records} == {(0, "train"), (0, "test"), (1, "train"), (1, "test")}
    assert all(r["success"] and r["tool_calls"] == r["decisions"] > 0 for r in records)
    assert all(r["llm_calls"] == r["tokens"] == r["fetches"] == 0 and r["learn"] is None for r in records)
    m = results["summary"]["none"]["test"]
    assert m["success_rate"] == 1.0 and m["tasks"] == 2 and m["seeds"] == 2
    assert m["fetch_hit_rate"] is None and m["skills_learned"] == 0
    text, plots = report.write(results, tmp_path)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["summary"] == json.loads(json.dumps(results["summary"]))
    assert "| none | test | 100% ± 0 |" in text and (tmp_path / "results.md").read_text() == text
    for path in plots:
        with open(path, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_shop_replay_costs_exactly_the_gold_actions(tmp_path):
    tasks = load_tasks("shop")
    config = RunConfig(world="shop", agent="replay", conditions=["none"], out=tmp_path, max_train=3, max_test=3)
    results = run_benchmark(config, tasks=tasks)
    by_id = {t.id: t for t in tasks}
    assert len(results["records"]) == 6
    for r in results["records"]:
        assert r["success"] and r["decisions"] == len(by_id[r["task_id"]].gold)


def test_skills_condition_end_to_end(tmp_path, embedder):
    config = RunConfig(world="crafting", agent="explorer", conditions=["none", "skills"], seeds=1, out=tmp_path)
    results = run_benchmark(config, tasks=small_suite(), embedder=embedder)
    summary = results["summary"]
    none, skills = summary["none"], summary["skills"]
    assert none["test"]["success_rate"] == skills["test"]["success_rate"] == 1.0
    assert skills["train"]["skills_learned"] == 2
    train = [r for r in results["records"] if r["condition"] == "skills" and r["phase"] == "train"]
    assert [r["learn"]["status"] for r in train] == ["saved", "saved"]
    # the pickaxe was learned calling the ingot skill; the test tasks reuse both
    library = results["libraries"]["skills-seed0"]["skills"]
    ingot = next(s for s in library if s["name"] == "smelt_iron_ingot")
    assert any(ingot["name"] in s["depends_on"] for s in library)
    assert skills["test"]["reuse_rate"] == 1.0 and skills["test"]["fetch_hit_rate"] > 0
    assert skills["test"]["decisions"] < none["test"]["decisions"]
    # frozen for test: no learning, and learned-skill outcomes come only from training
    test = [r for r in results["records"] if r["condition"] == "skills" and r["phase"] == "test"]
    assert all(r["learn"] is None for r in test)
    assert (tmp_path / "libraries" / "skills-seed0").is_dir()
    text, _ = report.write(results, tmp_path)
    assert "| skills | test | 100% |" in text and ingot["name"] in text


def test_cli_run_writes_the_report(tmp_path, capsys):
    code = cli.main(["run", "--world", "crafting", "--agent", "explorer", "--conditions", "none",
                     "--max-train", "2", "--max-test", "1", "--out", str(tmp_path), "--no-progress",
                     "--agent-opt", "max_tool_calls=300"])
    out = capsys.readouterr().out
    assert code == 0
    assert "| condition | phase | success |" in out and "learning_curve.png" in out
    assert (tmp_path / "results.md").exists() and (tmp_path / "with_vs_without.png").exists()
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["agent_options"] == {"max_tool_calls": 300}


def test_cli_rejects_unknown_names(tmp_path, capsys):
    assert cli.main(["run", "--world", "mars", "--agent", "explorer", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "unknown world 'mars'" in capsys.readouterr().out
    assert cli.main(["run", "--world", "shop", "--agent", "explorer", "--conditions", "none",
                     "--out", str(tmp_path), "--no-progress"]) == 2
    assert "does not work in world 'shop'" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["run", "--world", "shop", "--agent", "replay", "--agent-opt", "oops"])


def test_demo_runs_crafting_with_the_explorer_with_and_without_skills(monkeypatch, tmp_path):
    captured = {}
    monkeypatch.setattr(cli, "_run", lambda config, **kw: captured.setdefault("config", config))
    assert cli.main(["demo", "--out", str(tmp_path), "--no-progress"]) == 0
    config = captured["config"]
    assert (config.world, config.agent, config.conditions) == ("crafting", "explorer", ["none", "skills"])
    assert config.seeds == cli.DEMO_SEEDS and config.out == tmp_path


def test_cli_conditions_default_to_the_agents_and_wrong_ones_are_named(monkeypatch, tmp_path, capsys):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    base = ["run", "--world", "shop", "--out", str(tmp_path), "--no-progress"]
    # a condition the agent does not run under is refused before any agent is built (so not
    # hidden by the llm agent's missing endpoint), naming the agent's conditions
    assert cli.main(base + ["--agent", "llm", "--conditions", "none,skills"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "the llm agent does not run under condition(s) skills" in out
    assert "its conditions are: none, prompt, tools" in out
    assert cli.main(base + ["--agent", "replay", "--conditions", "prompt"]) == 2
    assert "its conditions are: none, skills" in " ".join(capsys.readouterr().out.split())
    # the help says which conditions apply to which agent
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "explorer, replay: none,skills" in help_text and "llm: none,prompt,tools" in help_text

    configs = []
    monkeypatch.setattr(cli, "_run", lambda config, **kw: configs.append(config))
    for agent in ("llm", "replay"):
        assert cli.main(base + ["--agent", agent]) == 0
    assert cli.main(base + ["--agent", "llm", "--conditions", "none,tools"]) == 0
    assert [c.conditions for c in configs] == [["none", "prompt", "tools"], ["none", "skills"], ["none", "tools"]]


def test_llm_agent_runs_under_its_default_conditions(tmp_path, embedder):
    from tests.chat_server import ScriptedChatServer

    tasks = [next(t for t in load_tasks("shop", split) if t.workflow == "cancel_by_email")
             for split in ("train", "test")]
    with ScriptedChatServer([lambda body: "Done."] * 6, prompt_tokens=50, completion_tokens=5) as server:
        config = RunConfig(world="shop", agent="llm", out=tmp_path,
                           agent_options={"base_url": server.base_url, "api_key": "test"})
        assert config.conditions == ["none", "prompt", "tools"]
        results = run_benchmark(config, tasks=tasks, embedder=embedder)
        assert server.remaining == 0
    records = results["records"]
    assert [(r["condition"], r["phase"]) for r in records] == [
        (c, p) for c in ("none", "prompt", "tools") for p in ("train", "test")
    ]
    # the scripted model answers without acting: every task fails, each cost one call
    assert all(not r["success"] and r["llm_calls"] == 1 and r["tokens"] == 55 for r in records)
    assert all(r["fetches"] == (0 if r["condition"] == "none" else 1) for r in records)
    assert set(results["libraries"]) == {"prompt-seed0", "tools-seed0"}


def test_learning_uses_the_runs_generalizer_not_the_environment(tmp_path, embedder, monkeypatch):
    # an endpoint in the environment must not turn the offline run into an LLM-learning one
    # (SkillLibrary.learn alone would pick the LLM generalizer, here an unreachable one)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    tasks = small_suite()[:1]
    config = RunConfig(world="crafting", agent="explorer", conditions=["skills"], out=tmp_path)
    results = run_benchmark(config, tasks=tasks, embedder=embedder)
    (record,) = results["records"]
    assert record["learn"]["status"] == "saved", record["learn"]
    assert record["learn_tokens"] == 0 and results["config"]["generalizer"] == "dataflow"
    assert results["summary"]["skills"]["train"]["learn_tokens"] == 0
    assert "with the dataflow generalizer" in report.markdown(results)
    with pytest.raises(ValueError, match="unknown generalizer 'magic'"):
        run_benchmark(RunConfig(world="crafting", agent="explorer", out=tmp_path, generalizer="magic"),
                      tasks=tasks, embedder=embedder)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    with pytest.raises(ValueError, match="llm generalizer needs an endpoint"):
        run_benchmark(RunConfig(world="crafting", agent="explorer", out=tmp_path, generalizer="llm"),
                      tasks=tasks, embedder=embedder)


def test_model_tokens_spent_on_learning_are_recorded(tmp_path, embedder):
    from skill_library.induction import DataflowGeneralizer

    class Metered(DataflowGeneralizer):
        """The offline generalizer, reporting model usage the way the LLM one does."""

        def generalize(self, *args, **kwargs):
            candidate = super().generalize(*args, **kwargs)
            candidate.usage = {"prompt_tokens": 300, "completion_tokens": 40}
            return candidate

    from benchmarks.agents import get_agent
    from benchmarks.harness import run_task
    from benchmarks.worlds import get_world
    from skill_library.library import SkillLibrary

    task = small_suite()[0]
    crafting = get_world("crafting")
    with SkillLibrary(tmp_path / "lib", embedder=embedder, policy=ALL,
                      trusted_output_tools=crafting.trusted_output_tools()) as library:
        record = run_task(get_agent("explorer"), crafting, task, library,
                          seed=0, learning=True, generalizer=Metered())
    assert record["learn"]["status"] == "saved" and record["learn_tokens"] == 340
    results = {
        "config": RunConfig(world="crafting", agent="explorer", conditions=["skills"], out=tmp_path).to_json(),
        "tasks": {"train": [task.id], "test": []},
        "records": [dict(record, seed=0, condition="skills", phase="train", index=0)],
        "libraries": {},
    }
    results["summary"] = report.summarize(results["records"], ["skills"])
    assert results["summary"]["skills"]["train"]["learn_tokens"] == 340
    assert "skills: 340 per train task" in report.markdown(results)


def test_a_structured_run_error_is_reported_as_one_line():
    from benchmarks.harness import _short
    from skill_library.models import RunError

    assert _short(RunError(type="KeyError", message="'planks'", line=4)) == "KeyError: 'planks' (line 4)"
    assert _short("x" * 300).endswith("...") and len(_short("x" * 300)) == 200
    assert _short(None) is None
