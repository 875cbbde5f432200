"""Benchmark agents: argument binding, the explorer, gold replay, with and without skills.

Most tests use a small in-process stand-in for the library (``ScriptedLibrary``: fetch by
exact ``when`` fit, run the code in-process) so the agents' own logic is tested exactly;
``test_agents_with_the_real_library`` runs the explorer and the replay agent against a
real ``SkillLibrary`` (sandbox, offline generalizer, real embedder).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from benchmarks.agents import get_agent
from benchmarks.agents.base import BudgetExceeded, Session, bind_by_name, bind_from_text, when_regex
from benchmarks.worlds import Task, get_world, load_tasks
from benchmarks.worlds.crafting import phrase
from skill_library.governance import Policy
from skill_library.models import Match, Outcome, Skill, SkillRun, Trace

#: these tests learn skills that activate: they opt in to auto-approval
ALL = Policy(auto_approve="all")


def crafting_task(item: str, count: int, split: str = "test") -> Task:
    return Task(
        id=f"t-{item}-{count}", world="crafting", instruction=phrase(item, count),
        params={"count": count}, split=split, goal={"items": {item: count}},
    )


class ScriptedLibrary:
    """Stand-in for SkillLibrary: skills fetched when their ``when`` fits, run in-process."""

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {s.name: s for s in skills}
        self.fetched: list[str] = []
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def fetch(self, task: str, k: int = 2) -> list[Match]:
        self.fetched.append(task)
        out = []
        for skill in self.skills.values():
            fits = bind_from_text(skill, task) is not None or bind_by_name(skill, {}) is not None
            similarity = 0.95 if fits else 0.3
            out.append(Match(skill=skill, similarity=similarity, reliability=0.67, score=similarity))
        return sorted(out, key=lambda m: -m.score)[:k]

    def run(self, name, args, tools, *, tool_schemas=None, limits=None) -> SkillRun:
        self.runs.append((name, dict(args)))
        skill = self.skills[name]
        namespace: dict[str, Any] = dict(tools)
        for other in self.skills.values():
            exec(other.code, namespace)  # noqa: S102 - test code only
        try:
            value, ok, error = namespace[name](**args), True, None
        except Exception as exc:
            value, ok, error = None, False, f"{type(exc).__name__}: {exc}"
        return SkillRun(name=name, version=skill.version, ok=ok, value=value, error=error,
                        trace=Trace(task=skill.when, params=dict(args)))


def skill(code: str, when: str) -> Skill:
    return Skill.from_function(textwrap.dedent(code), when=when)


IRON_INGOTS = skill(
    """
    def smelt_iron_ingots(count: int):
        mine(block="log", count=3)
        craft(item="planks", count=12)
        craft(item="crafting_table", count=1)
        craft(item="stick", count=4)
        craft(item="wooden_pickaxe", count=1)
        mine(block="cobblestone", count=11)
        craft(item="furnace", count=1)
        craft(item="stone_pickaxe", count=1)
        mine(block="iron_ore", count=count)
        mine(block="coal", count=count)
        return smelt(item="iron_ingot", count=count)
    """,
    when="Smelt {count} iron ingots from ore",
)
BROKEN = skill(
    """
    def forge_iron_pickaxe(count: int):
        return craft(item="iron_pickaxe", count=count)
    """,
    when="Forge {count} iron pickaxe",
)


# -- binding --------------------------------------------------------------------------------------


def test_when_text_binds_typed_arguments_from_a_task_text():
    assert bind_from_text(IRON_INGOTS, "Smelt 3 iron ingots from ore") == {"count": 3}
    assert bind_from_text(IRON_INGOTS, "  smelt 12   iron ingots from ore ") == {"count": 12}
    assert bind_from_text(IRON_INGOTS, "Smelt 3 gold ingots from ore") is None
    assert bind_from_text(IRON_INGOTS, "Smelt three iron ingots from ore") is None
    assert bind_from_text(IRON_INGOTS, "Smelt 3 iron ingots from ore, then forge 1 iron pickaxe") is None
    greet = skill("def greet(name: str, times: int):\n    return name\n", when="Say hi to {name} {times} times, {name}!")
    assert bind_from_text(greet, "say hi to Ada Lovelace 2 times, Ada Lovelace!") == {"name": "Ada Lovelace", "times": 2}
    assert bind_from_text(greet, "Say hi to Ada 2 times, Bob!") is None
    assert when_regex("Cost {x} (approx.)", {"properties": {"x": {"type": "number"}}}).fullmatch("Cost 2.5 (approx.)")


def test_task_params_bind_by_name():
    cancel = skill(
        "def cancel(email: str, order_id: str, reason: str = 'no longer needed'):\n    return order_id\n",
        when="Cancel {order_id} for {email}",
    )
    assert bind_by_name(cancel, {"email": "a@b.c", "order_id": "#W1", "extra": 1}) == {"email": "a@b.c", "order_id": "#W1"}
    assert bind_by_name(cancel, {"email": "a@b.c"}) is None


# -- without skills -------------------------------------------------------------------------------


def test_explorer_solves_every_crafting_task_by_trial_and_error():
    world, agent = get_world("crafting"), get_agent("explorer", max_decisions=None)
    for task in load_tasks("crafting"):
        world.reset(0, task)
        episode = agent.solve(task, world)
        assert world.verify(task).success, (task.id, episode.stopped)
        assert episode.decisions == episode.tool_calls == len(episode.calls)
        assert episode.fetches == episode.skill_invocations == episode.llm_calls == 0
        assert episode.tool_calls >= len(task.gold)  # exploring costs at least the plan
        if len(task.gold) > 2:
            assert any(c.error for c in episode.calls)  # errors drove the exploration


def test_explorer_reads_the_errors_it_gets():
    world, agent = get_world("crafting"), get_agent("explorer")
    task = crafting_task("stone_pickaxe", 1)
    world.reset(0, task)
    episode = agent.solve(task, world)
    calls = episode.calls
    assert (calls[0].name, calls[0].arguments) == ("craft", {"item": "stone_pickaxe", "count": 1})
    assert "need 3 cobblestone, have 0" in calls[0].error
    cobble = [c for c in calls if c.arguments.get("block") == "cobblestone" or c.arguments.get("item") == "cobblestone"]
    assert cobble[0].name == "craft" and "it is made with mine" in cobble[0].error
    assert "needs a wooden_pickaxe or better" in cobble[1].error
    assert calls[-1].name == "craft" and calls[-1].ok and calls[-1].arguments["item"] == "stone_pickaxe"


def test_explorer_stops_at_its_budget():
    world = get_world("crafting")
    agent = get_agent("explorer", max_tool_calls=10)
    task = crafting_task("iron_pickaxe", 1)
    world.reset(0, task)
    episode = agent.solve(task, world)
    assert episode.tool_calls == 10 and "tool-call budget of 10" in episode.stopped
    assert not world.verify(task).success
    # by default it has 40 decisions: enough for an iron pickaxe, not for a clock from scratch
    agent = get_agent("explorer")
    world.reset(0, task)
    assert agent.solve(task, world).decisions <= 40 and world.verify(task).success
    clock = crafting_task("clock", 1)
    world.reset(0, clock)
    episode = agent.solve(clock, world)
    assert episode.decisions == 40 and episode.stopped == "decision budget of 40 used up"
    assert not world.verify(clock).success


def test_replay_makes_exactly_the_gold_calls():
    world, agent = get_world("shop"), get_agent("replay")
    for task in load_tasks("shop"):
        world.reset(0, task)
        episode = agent.solve(task, world)
        assert world.verify(task).success, task.id
        assert [(c.name, c.arguments) for c in episode.calls] == [(a.name, a.arguments) for a in task.gold]
        assert episode.decisions == episode.tool_calls == len(task.gold)
    trace = episode.to_trace(task, Outcome(success=True, verifier="shop.verify"))
    assert trace.verified_success and trace.params == task.params and trace.source == "replay"


# -- with skills (scripted library) --------------------------------------------------------------


def test_explorer_runs_a_fitting_skill_for_the_task():
    world, agent = get_world("crafting"), get_agent("explorer")
    library = ScriptedLibrary([IRON_INGOTS])
    task = crafting_task("iron_ingot", 4)
    world.reset(0, task)
    episode = agent.solve(task, world, library)
    assert world.verify(task).success
    assert library.runs == [("smelt_iron_ingots", {"count": 4})]
    assert [(c.name, c.kind) for c in episode.calls] == [("smelt_iron_ingots", "skill"), ("inventory", "tool")]
    assert episode.decisions == 2 and episode.tool_calls == 12
    assert episode.fetches == 1 and episode.fetch_hits == 1 and episode.skill_successes == 1


def test_explorer_uses_skills_for_sub_goals_so_skills_compose():
    world, agent = get_world("crafting"), get_agent("explorer")
    library = ScriptedLibrary([IRON_INGOTS])
    task = crafting_task("iron_pickaxe", 1, split="train")
    world.reset(0, task)
    episode = agent.solve(task, world, library)
    assert world.verify(task).success
    skill_calls = [c for c in episode.calls if c.kind == "skill"]
    assert [(c.name, c.arguments) for c in skill_calls] == [("smelt_iron_ingots", {"count": 3})]
    assert "Smelt 3 iron ingots from ore" in library.fetched
    assert episode.decisions < episode.tool_calls


def test_explorer_falls_back_to_exploring_when_a_skill_fails():
    world, agent = get_world("crafting"), get_agent("explorer")
    library = ScriptedLibrary([BROKEN])
    task = crafting_task("iron_pickaxe", 1)
    world.reset(0, task)
    episode = agent.solve(task, world, library)
    assert world.verify(task).success
    assert library.runs == [("forge_iron_pickaxe", {"count": 1})]  # never retried
    assert episode.skill_invocations == 1 and episode.skill_successes == 0
    # the failed skill's call is in the trace as the primitive call it made
    assert episode.calls[0].name == "craft" and episode.calls[0].error
    assert all(c.kind == "tool" for c in episode.calls)


def test_explorer_checks_what_a_skill_made_and_asks_for_the_rest():
    world, agent = get_world("crafting"), get_agent("explorer")
    four_torches = skill(
        """
        def prepare_torches(count: int):
            mine(block="log", count=3)
            craft(item="planks", count=12)
            craft(item="crafting_table", count=1)
            craft(item="stick", count=4)
            craft(item="wooden_pickaxe", count=1)
            mine(block="coal", count=1)
            return craft(item="torch", count=4)
        """,
        when="Prepare {count} torches for lighting caves",
    )
    library = ScriptedLibrary([four_torches])
    task = crafting_task("torch", 8)
    world.reset(0, task)
    episode = agent.solve(task, world, library)
    assert world.verify(task).success
    first, second = episode.skill_uses
    assert first.ok and first.verified is False  # it ran, but made 4 of the 8 torches
    # the missing four are a new sub-goal, which the same skill does fit
    assert (second.arguments, second.ok, second.verified) == ({"count": 4}, True, True)
    task = crafting_task("torch", 3)
    world.reset(0, task)
    episode = agent.solve(task, world, library)
    assert episode.skill_uses[0].verified is True and episode.decisions == 2


def test_replay_lets_a_skill_do_its_part_and_replays_the_rest():
    world, agent = get_world("shop"), get_agent("replay")
    combo = next(t for t in load_tasks("shop", "test") if t.workflow == "cancel_by_email+user_address")
    cancel = skill(
        """
        def cancel_order(email: str, order_id: str, reason: str):
            find_user_id_by_email(email=email)
            get_order_details(order_id=order_id)
            return cancel_pending_order(order_id=order_id, reason=reason)
        """,
        when="The customer with email {email} wants to cancel pending order {order_id}. Reason given: {reason}.",
    )
    library = ScriptedLibrary([cancel])
    world.reset(0, combo)
    episode = agent.solve(combo, world, library)
    assert world.verify(combo).success
    assert library.runs == [("cancel_order", {k: combo.params[k] for k in ("email", "order_id", "reason")})]
    assert episode.tool_calls == len(combo.gold)
    assert episode.decisions == 1 + len(combo.gold) - 3
    assert episode.calls[0].kind == "skill"


def test_session_counts_skill_calls_and_budget():
    world = get_world("crafting")
    task = crafting_task("log", 2)
    world.reset(0, task)
    library = ScriptedLibrary([skill("def chop(count: int):\n    return mine(block='log', count=count)\n",
                                     when="Chop {count} logs off oak trees")])
    session = Session(task, world, library, agent="test", max_tool_calls=3)
    use = session.run_skill(library.skills["chop"], {"count": 2})
    assert use.ok and use.tool_calls == 1
    assert session.call("mine", {"block": "diamond", "count": 1})[1].startswith("cannot mine diamond")
    episode = session.finish()
    assert (episode.decisions, episode.tool_calls, episode.skill_invocations) == (2, 2, 1)
    assert episode.calls[0].kind == "skill" and episode.calls[1].error
    assert use.value == episode.calls[0].result == {"mined": "log", "added": 2, "inventory": {"log": 2}}


def test_a_budget_hit_inside_a_skill_ends_the_episode():
    world = get_world("crafting")
    task = crafting_task("log", 2)
    world.reset(0, task)
    code = "def chop_thrice(count: int):\n    for i in range(3):\n        mine(block='log', count=count)\n"
    library = ScriptedLibrary([skill(code, when="Chop logs three times, {count} each")])
    session = Session(task, world, library, agent="test", max_tool_calls=2)
    with pytest.raises(BudgetExceeded, match="tool-call budget of 2 used up"):
        session.run_skill(library.skills["chop_thrice"], {"count": 1})
    episode = session.finish()
    assert episode.tool_calls == 2
    assert [c.name for c in episode.calls] == ["mine", "mine"]  # what changed the world is kept


def test_session_counts_model_calls_and_their_tokens():
    from types import SimpleNamespace

    world = get_world("crafting")
    task = crafting_task("log", 1)
    world.reset(0, task)
    session = Session(task, world, None, agent="test")
    session.count_llm(SimpleNamespace(prompt_tokens=120, completion_tokens=7))
    session.count_llm(None)  # the server reported no usage
    session.count_llm(SimpleNamespace(prompt_tokens=30, completion_tokens=None))
    episode = session.finish()
    assert (episode.llm_calls, episode.prompt_tokens, episode.completion_tokens) == (3, 150, 7)
    assert episode.decisions == episode.tool_calls == 0


# -- with the real library -------------------------------------------------------------------------


def test_agents_with_the_real_library(tmp_path, embedder):
    from skill_library.library import SkillLibrary

    world, explorer = get_world("crafting"), get_agent("explorer")
    with SkillLibrary(tmp_path / "crafting", embedder=embedder, min_reliability=0.6, policy=ALL,
                      trusted_output_tools=world.trusted_output_tools()) as library:
        learned = {}
        for item, count in [("iron_ingot", 5), ("iron_pickaxe", 1)]:
            task = crafting_task(item, count, split="train")
            world.reset(0, task)
            episode = explorer.solve(task, world, library)
            assert world.verify(task).success
            result = library.learn(episode.to_trace(task, Outcome(success=True, verifier="crafting.verify")))
            assert result.status == "saved", result.reasons
            learned[item] = result.skill
        # the pickaxe skill calls the ingot skill it used for its sub-goal
        assert learned["iron_pickaxe"].depends_on == [learned["iron_ingot"].name]
        assert learned["iron_ingot"].when == "Smelt (iron ingot) (after: mine, craft). Needs the count."
        task = crafting_task("iron_ingot", 9)
        world.reset(0, task)
        episode = explorer.solve(task, world, library)
        assert world.verify(task).success
        assert [(u.name, u.arguments, u.ok) for u in episode.skill_uses] == [(learned["iron_ingot"].name, {"count": 9}, True)]
        assert episode.decisions == 2

    shop, replay = get_world("shop"), get_agent("replay")
    train = next(t for t in load_tasks("shop", "train") if t.workflow == "cancel_by_email")
    test = next(t for t in load_tasks("shop", "test") if t.workflow == "cancel_by_email")
    with SkillLibrary(tmp_path / "shop", embedder=embedder, min_reliability=0.6, policy=ALL) as library:
        shop.reset(0, train)
        episode = replay.solve(train, shop)
        result = library.learn(episode.to_trace(train, Outcome(success=True, verifier="shop.verify")))
        assert result.status == "saved", result.reasons
        shop.reset(0, test)
        episode = replay.solve(test, shop, library)
        assert shop.verify(test).success
        assert episode.skill_successes == 1 and episode.decisions == 1
