"""Calibrated abstention (skill_library.abstention) on real parts: libraries learned from the
helpdesk and office suites' gold traces (real Chroma index, real MiniLM, real sandbox replay)."""

from __future__ import annotations

import pytest

from benchmarks.suite_library import learn_gold, open_library
from benchmarks.worlds import get_world, load_tasks
from skill_library import abstention
from skill_library.abstention import Calibration, FetchResult
from skill_library.models import Skill

#: an in-domain request no helpdesk workflow covers (a question, not an action)
OUT_OF_SCOPE = "Hello, could you tell me when the office cafeteria opens tomorrow and what is on the menu?"
OFF_DOMAIN = "What is the capital of Australia?"


def _learned(tmp_path_factory, embedder, world_name: str, n: int | None):
    world = get_world(world_name)
    train = [t for t in load_tasks(world_name) if t.split == "train"][:n]
    library = open_library(tmp_path_factory.mktemp(world_name) / "lib", world, embedder=embedder)
    learn_gold(library, world, train)
    return library


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory, embedder):
    library = _learned(tmp_path_factory, embedder, "helpdesk", 48)
    yield library
    library.close()


@pytest.fixture(scope="module")
def office(tmp_path_factory, embedder):
    """32 skills, each learned from one trace: nothing to calibrate on."""
    library = _learned(tmp_path_factory, embedder, "office", None)
    yield library
    library.close()


@pytest.fixture(scope="module")
def shop(tmp_path_factory, embedder):
    library = _learned(tmp_path_factory, embedder, "shop", 64)
    yield library
    library.close()


@pytest.mark.slow
def test_a_learned_library_is_calibrated_with_its_expected_precision_and_recall(helpdesk):
    found = helpdesk.calibration()
    assert found.calibrated and found.queries >= abstention.MIN_QUERIES
    assert helpdesk.min_similarity <= found.floor < 1.0
    assert found.recall >= abstention.MIN_RECALL
    assert 0.0 <= found.false_accept <= 1.0 and 0.0 < found.precision <= 1.0
    assert found.precision == pytest.approx(found.recall / (found.recall + found.false_accept), abs=1e-3)
    assert 0.0 < found.margin <= abstention.MAX_MARGIN and found.ambiguous <= abstention.AMBIGUOUS_BUDGET
    assert "expected precision" in found.describe() and "recall" in found.describe()
    assert helpdesk.calibration() is found  # cached while the index is unchanged


def test_out_of_scope_request_abstains_in_a_calibrated_library(helpdesk):
    floor = helpdesk.calibration().floor
    result = helpdesk.fetch(OUT_OF_SCOPE, k=3, min_similarity=-1)
    assert isinstance(result, FetchResult) and isinstance(result, list)
    assert len(result) >= 1 and result[0].similarity < floor  # the old fixed floor would have given it
    assert result.abstained and "calibrated floor" in result.reason
    assert result.floor == floor
    # a ticket the library learned from is answered
    ticket = next(t for t in load_tasks("helpdesk") if t.split == "train")
    covered = helpdesk.fetch(ticket.instruction, k=3)
    assert covered and covered[0].similarity >= floor and not covered.abstained
    # off-domain: nothing over the hard floor, an empty result that abstains
    empty = helpdesk.fetch(OFF_DOMAIN, k=3)
    assert empty == [] and empty.abstained
    # abstain=False: the old shape, no flags
    plain = helpdesk.fetch(OUT_OF_SCOPE, k=3, min_similarity=-1, abstain=False)
    assert not plain.abstained and len(plain) == 3


def test_leave_one_out_floor_changes_with_the_domain(helpdesk, shop):
    a, b = helpdesk.calibration(), shop.calibration()
    assert a.calibrated and b.calibrated
    assert a.skills != b.skills
    assert abs(a.floor - b.floor) > 0.02, (a, b)


def test_single_trace_skills_leave_a_library_uncalibrated(office):
    found = office.calibration()
    assert not found.calibrated and found.floor is None and found.queries == 0
    assert "uncalibrated" in found.describe()
    result = office.fetch("please book the Baltic room on 2026-04-02 at 10:30", k=3)
    assert result and not result.abstained and result.floor is None, result.reason  # only the hard floor
    assert result[0].missing == []
    # without the date and time the booking skill cannot be bound from the task: abstained
    vague = office.fetch("please book the Baltic room for tomorrow morning", k=3)
    assert vague.abstained and "which the task does not supply" in vague.reason


def test_calibration_is_recomputed_when_skills_change(helpdesk):
    before = helpdesk.calibration()
    name = min(helpdesk.list(status="active"), key=lambda s: s.successes).name
    helpdesk.retire(name)
    after = helpdesk.calibration()
    assert after is not before and after.generation != before.generation
    assert after.skills == before.skills - 1


def _candidates_close_to_call(embedder, margin: float):
    """A query and two look-alike descriptions (cosine < 0.9 to each other, so both are
    stored) whose similarities to it differ by less than half the library's margin: searched
    among fixed texts of a domain no suite has (watering plants)."""
    from skill_library.induction import description

    queries = ["please water the ferns in the lobby", "the plants on floor 3 need watering",
               "can someone water the office plants", "water the cactus on my desk",
               "the palms by reception look dry, please water them", "give the plants some water"]
    texts = ["Water the plants in one room", "Water every plant in the building",
             "Water a plant that looks dry", "Give all the office plants water",
             "Water the plants on one floor", "Water the potted plants at reception",
             "Water one plant on a desk", "Water each plant once a week"]
    vectors = embedder.embed([description.query_text(q) for q in queries] + texts)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    found = []
    for q, qv in zip(queries, vectors):
        sims = [dot(qv, v) for v in vectors[len(queries):]]
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                mutual = dot(vectors[len(queries) + i], vectors[len(queries) + j])
                if mutual < 0.88 and min(sims[i], sims[j]) > 0.4 and abs(sims[i] - sims[j]) < margin:
                    found.append((abs(sims[i] - sims[j]), q, texts[i], texts[j]))
    assert found, "no query and pair of look-alike descriptions within the margin"
    return min(found)[1:]


def _skill(name: str, when: str) -> Skill:
    code = f'def {name}(email: str) -> dict:\n    """{when}"""\n    return {{"email": email}}\n'
    return Skill.from_function(code, when=when)


def test_two_look_alikes_too_close_to_call_are_both_returned_flagged_ambiguous(helpdesk, embedder):
    office = helpdesk
    margin = office.calibration().margin
    assert margin > 0
    query, one, every = _candidates_close_to_call(embedder, margin)
    assert office.add(_skill("water_some_plants", one), verified=True).added
    assert office.add(_skill("water_all_plants", every), verified=True).added
    assert office.calibration().margin > 0  # recalibrated with them (they add no example tasks)
    result = office.fetch(query, k=1)
    assert result.ambiguous and "too close to call" in result.reason
    assert {m.skill.name for m in result[:2]} == {"water_some_plants", "water_all_plants"}  # both, past k=1
    assert all(m.ambiguous for m in result[:2])
    assert not office.fetch(query, k=1, abstain=False).ambiguous


def test_decide_cuts_to_k_and_flags_only_what_is_within_the_margin():
    def match(name: str, score: float):
        skill = _skill(name, f"do {name}")
        from skill_library.ranking import make_match

        return make_match(skill, score, score)

    found = Calibration(floor=0.5, margin=0.02, precision=0.9, recall=0.9, false_accept=0.1, ambiguous=0.03,
                        top1=0.9, queries=20, skills=4, generation=1, method="test")
    clear = abstention.decide([match("a", 0.8), match("b", 0.7), match("c", 0.6)], 1, found)
    assert [m.skill.name for m in clear] == ["a"] and not clear.ambiguous and not clear.abstained
    close = abstention.decide([match("a", 0.8), match("b", 0.79), match("c", 0.6)], 1, found)
    assert [m.skill.name for m in close] == ["a", "b"] and close.ambiguous
    assert [m.ambiguous for m in close] == [True, True]
    low = abstention.decide([match("a", 0.45)], 2, found)
    assert low.abstained and not low.ambiguous and "0.450" in low.reason
    assert abstention.decide([], 2, found).abstained
    uncalibrated = abstention.decide([match("a", 0.3), match("b", 0.3)], 1, None)
    assert [m.skill.name for m in uncalibrated] == ["a"] and not uncalibrated.abstained


def test_cli_stats_and_show_report_the_calibration(helpdesk):
    import json

    from typer.testing import CliRunner

    from skill_library.cli import app

    folder = str(helpdesk.path) if getattr(helpdesk, "path", None) else None
    assert folder is not None
    env = {"SKILLS_DIR": folder}
    found = helpdesk.calibration()
    result = CliRunner().invoke(app, ["stats"], env=env)
    assert result.exit_code == 0, result.output
    assert f"floor {found.floor:.3f}" in result.output and "expected precision" in result.output
    data = json.loads(CliRunner().invoke(app, ["stats", "--json"], env=env).output)
    assert data["abstention"]["floor"] == found.floor and data["abstention"]["recall"] == found.recall
    shown = CliRunner().invoke(app, ["show", helpdesk.list()[0].name], env=env)
    # show reads the records only (no index, no chromadb: a second, not seconds); it points at stats
    assert shown.exit_code == 0 and "# abstention: `skills stats`" in shown.output


def test_a_state_changing_top_the_task_reads_less_like_than_another_workflow_is_flagged(helpdesk):
    """Rule 5: ranking put a state-changing skill first by its other terms (how the task's
    values fit it), while a bindable skill of another workflow reads more like the task by
    more than the calibrated margin: both are returned, flagged ambiguous, neither alone."""
    from skill_library import intent
    from skill_library.ranking import make_match

    found = helpdesk.calibration()
    assert found.calibrated and found.margin > 0
    task = "Please sort out the access for the new colleague."
    reading = intent.reading(helpdesk, task)
    changing = sorted((s for s in helpdesk.list() if reading.changes_state(s) and reading.conflict(s) is None),
                      key=lambda s: s.name)
    top, rival = changing[0], next(s for s in changing[1:] if sorted(s.tools) != sorted(changing[0].tools))
    lead = found.margin + 0.01
    flagged = abstention.decide([make_match(top, 0.70, score=0.80), make_match(rival, 0.70 + lead, score=0.74)],
                                1, found, reading)
    assert flagged.ambiguous and not flagged.abstained
    assert [m.skill.name for m in flagged] == [top.name, rival.name]  # the rival past k=1
    assert all(m.ambiguous for m in flagged)
    assert f"the task reads more like {rival.name}" in flagged.reason
    # within the margin, meaning and fit do not disagree enough: the top alone
    near = abstention.decide([make_match(top, 0.70, score=0.80),
                              make_match(rival, 0.70 + found.margin / 2, score=0.74)], 1, found, reading)
    assert [m.skill.name for m in near] == [top.name] and not near.ambiguous
    # a rival that cannot be bound is no answer either way (the missing-parameter rule's case)
    unbindable = abstention.decide([make_match(top, 0.70, score=0.80),
                                    make_match(rival, 0.70 + lead, score=0.74, missing=["email"])], 1, found, reading)
    assert not unbindable.ambiguous
    # without a calibration (no margin) or without the task's reading, nothing is flagged
    assert not abstention.decide([make_match(top, 0.70, score=0.80), make_match(rival, 0.70 + lead, score=0.74)],
                                 1, None, reading).ambiguous
    # a top that changes nothing may run: a look is harmless
    # (one made here: the first 48 train tickets teach no read-only workflow, so the test does
    # not depend on another test having added one to the module's library)
    reader = _skill("look_up_employee", "Look an employee up by their email")
    assert not reading.changes_state(reader)
    harmless = abstention.decide([make_match(reader, 0.70, score=0.80), make_match(rival, 0.70 + lead, score=0.74)],
                                 1, found, reading)
    assert not harmless.ambiguous


def test_meaning_does_not_override_an_identifier_or_a_state_the_task_names(helpdesk):
    """Rule 5's two exemptions: the task names an identifier value the top takes and the
    rival cannot (the one system to revoke against offboarding's every system), or a state
    the rival's mined precondition excludes ("as a contractor" against granting directly):
    the top's fit is then the task's own words, and it is returned alone."""
    from skill_library import intent
    from skill_library.ranking import make_match

    found = helpdesk.calibration()
    lead = found.margin + 0.01
    skills = helpdesk.list()
    plain = intent.reading(helpdesk, "Please sort out the access for the new colleague.")
    changing = [s for s in skills if plain.changes_state(s) and plain.conflict(s) is None]

    # an identifier value: the top takes it, the rival has no parameter that admits it
    top = next(s for s in changing if plain.choices.get(s.name))
    value = next(iter(plain.choices[top.name].values()))[0]
    rival = next(s for s in changing if sorted(s.tools) != sorted(top.tools)
                 and value not in {v for vs in plain.choices.get(s.name, {}).values() for v in vs})
    named = intent.reading(helpdesk, f"Please sort out the {value} access for the new colleague.")
    assert value in set().union(*named.named_values(top.name).values()) and named.conflict(rival) is None

    def decide(reading: intent.Reading, top: Skill, rival: Skill) -> FetchResult:
        return abstention.decide([make_match(top, 0.70, score=0.80), make_match(rival, 0.70 + lead, score=0.74)],
                                 1, found, reading)

    assert decide(plain, top, rival).ambiguous  # no value named: meaning against fit, flagged
    kept = decide(named, top, rival)
    assert [m.skill.name for m in kept] == [top.name] and not kept.ambiguous

    # a state: the rival's precondition excludes the state the task names, the top's admits it
    def states(skill: Skill) -> dict[tuple[str, tuple[str, ...]], set[str]]:
        return {(c.tool, tuple(c.path)): set(c.value if isinstance(c.value, list) else [c.value])
                for c in skill.provenance.preconditions if c.op in ("eq", "in")}

    pair = next((a, b) for a in changing for b in changing if sorted(a.tools) != sorted(b.tools)
                and any(k in states(b) and not states(a)[k] & states(b)[k] for k in states(a)))
    admits, excludes = pair
    key = next(k for k in states(admits) if k in states(excludes) and not states(admits)[k] & states(excludes)[k])
    state = sorted(states(admits)[key])[0]
    worded = intent.reading(helpdesk, f"As a {state} here, please sort out the access for the new colleague.")
    assert excludes.name in intent.named_states(worded.text, [admits, excludes])
    assert decide(plain, admits, excludes).ambiguous
    alone = decide(worded, admits, excludes)
    assert [m.skill.name for m in alone] == [admits.name] and not alone.ambiguous


def test_the_floor_asks_whether_any_match_too_close_to_call_covers_the_task():
    """Matches too close to call are one answer: the task is covered when the best of them
    clears the floor, even when the one ranked first (by its other terms) does not; both
    stay flagged ambiguous (and fetch with the caller's reads may tell them apart)."""
    from skill_library.ranking import make_match

    def match(name: str, similarity: float, score: float):
        return make_match(_skill(name, f"do {name}"), similarity, score)

    found = Calibration(floor=0.5, margin=0.02, precision=0.9, recall=0.9, false_accept=0.1, ambiguous=0.03,
                        top1=0.9, queries=20, skills=4, generation=1, method="test")
    covered = abstention.decide([match("a", 0.48, 0.80), match("b", 0.55, 0.79)], 1, found)
    assert covered.ambiguous and not covered.abstained and [m.skill.name for m in covered] == ["a", "b"]
    neither = abstention.decide([match("a", 0.48, 0.80), match("b", 0.49, 0.79)], 1, found)
    assert neither.ambiguous and neither.abstained and "0.490 is under" in neither.reason
    # a runner-up that is not too close to call does not count
    apart = abstention.decide([match("a", 0.48, 0.80), match("b", 0.55, 0.70)], 1, found)
    assert apart.abstained and not apart.ambiguous
