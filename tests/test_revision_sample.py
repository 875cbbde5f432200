"""Revision replays a bounded, diverse sample of a workflow's example traces; the full check
(``SkillLibrary.verify_all``) replays them all and finds what the sample missed.

Real sandbox workers, the real embedding model and a real Chroma index (the ``library``
fixture); the generalizer is a small one written here, so the candidates are known.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from skill_library import settings
from skill_library.induction import revision
from skill_library.induction.candidate import Candidate
from skill_library.models import Outcome, Skill, ToolCall, Trace

VERIFIED = Outcome(success=True, verifier="db-check")


def flag_trace(order: str, flag: str, *, looked_up: bool = True) -> Trace:
    """Look an order's flag up, then set it. ``looked_up=False``: the lookup answers in
    another shape (no ``flag`` field), so a skill reading ``r['flag']`` cannot reproduce it."""
    lookup = {"flag": flag} if looked_up else {"level": 2}
    return Trace(
        task=f"tag order {order} as the customer's records say",
        params={"order_id": order},
        calls=[
            ToolCall(name="get_flag", arguments={"order_id": order}, result=lookup),
            ToolCall(name="set_flag", arguments={"order_id": order, "flag": flag}, result="ok"),
        ],
        outcome=VERIFIED,
    )


class FlagGeneralizer:
    """The flag from the lookup when the lookup has it, else the trace's constant."""

    name = "flag-test"

    def generalize(self, trace: Trace, *, related: Sequence[Skill] = (), **_options: object) -> Candidate:
        lookup = trace.calls[0].result
        flag = next(c for c in trace.calls if c.name == "set_flag").arguments["flag"]
        value = "r['flag']" if isinstance(lookup, dict) and "flag" in lookup else repr(flag)
        code = ("def tag_order(order_id):\n"
                "    r = get_flag(order_id=order_id)\n"
                f"    return set_flag(order_id=order_id, flag={value})\n")
        return Candidate(
            name="tag_order", when="tag order {order_id}", code=code,
            parameters={"type": "object", "properties": {"order_id": {"type": "string"}},
                        "required": ["order_id"]},
            tools=["get_flag", "set_flag"], example_args={"order_id": trace.params["order_id"]},
            generalizer=self.name,
        )


@pytest.fixture
def sample_of_three(monkeypatch):
    monkeypatch.setattr(settings, "REVISION_SAMPLE", 3)


@pytest.fixture
def replays(monkeypatch):
    """Counts the sandbox replays revision makes (each one still runs in the sandbox)."""
    counted: list[str] = []
    real = revision.replay_verify

    def counting(candidate, trace, sandbox, **options):
        counted.append(trace.task)
        return real(candidate, trace, sandbox, **options)

    monkeypatch.setattr(revision, "replay_verify", counting)
    return counted


def learn_workflow(library) -> list:
    """Three traces the lookup skill reproduces (one flagged urgent, the oldest), then one it
    cannot (the lookup's other shape)."""
    generalizer = FlagGeneralizer()
    first = [library.learn(flag_trace(o, f), generalizer=generalizer)
             for o, f in [("A1", "urgent"), ("B1", "normal"), ("C1", "normal")]]
    assert [r.status for r in first] == ["saved", "merged", "merged"], [r.reasons for r in first]
    return [*first, library.learn(flag_trace("D1", "normal", looked_up=False), generalizer=generalizer)]


def test_a_revision_replays_only_its_sample_and_keeps_every_trace_as_evidence(library, sample_of_three, replays):
    results = learn_workflow(library)
    revised = results[-1]
    assert revised.status == "revised", revised.reasons
    assert "flag='normal'" in revised.skill.code  # the newest trace's constant
    # bounded: the revision replayed 3 of the 4 example traces, the oldest (urgent) not
    assert len(replays) == 3 and not any("A1" in t for t in replays), replays
    assert "replayed 3 of the workflow's 4 example traces" in revised.report.message
    # every trace is still the new version's evidence
    assert len(revised.skill.provenance.trace_ids) == 4
    assert len(library.examples("tag_order")) == 4


def test_the_full_check_finds_the_unsampled_trace_the_revision_broke(library, sample_of_three):
    results = learn_workflow(library)
    assert results[-1].status == "revised"
    checks = library.verify_all()
    assert [(c.name, c.version, c.traces, c.ok) for c in checks] == [("tag_order", 2, 4, False)]
    [(trace_id, why)] = checks[0].broken
    assert trace_id == results[0].skill.provenance.trace_ids[0]  # the urgent one, never replayed
    assert "urgent" in why and "normal" in why, why
    assert library.verify_all(["tag_order"]) == checks
    with pytest.raises(KeyError):
        library.verify_all(["no_such_skill"])


def test_with_the_whole_workflow_sampled_the_breaking_revision_is_refused(library):
    assert settings.REVISION_SAMPLE >= 4
    results = learn_workflow(library)
    assert results[-1].status != "revised"  # the urgent trace was replayed and refused it
    assert library.get("tag_order").version == 1
    checks = library.verify_all()
    assert checks and all(c.ok for c in checks), checks


def test_the_sample_takes_other_paths_lengths_and_shapes_first():
    same = [flag_trace(f"S{n}", "normal") for n in range(6)]
    longer = same[0].model_copy(update={"calls": [*same[0].calls, ToolCall(name="notify", arguments={}, result="ok")],
                                        "task": "longer"})
    listed = same[1].model_copy(update={"params": {"order_id": ["S1", "S9"]}, "task": "listed"})
    traces = [longer, listed, *same]  # the two odd ones are the oldest
    chosen = revision.sample(traces, 3)
    assert chosen == [longer, listed, same[-1]]  # the newest, then the other path, the other shape
    assert revision.sample(traces, 100) == traces
    assert revision.sample(same, 2) == same[-2:]  # among equals, the newest
    with pytest.raises(ValueError, match="REVISION_SAMPLE"):
        revision.sample(traces, 0)
