"""A tenant view keeps its own session memo and canary cache (issue 24, defects 4 and 5).

``for_tenant`` used to copy the root's attributes, so a view shared the root's memo of
which version each (session, skill) was given, keyed without the tenant, and the root's
canary cache, keyed by an index generation that each tenant counts on its own.
"""

from __future__ import annotations

import pytest

from skill_library.governance import Policy
from skill_library.library import SkillLibrary
from skill_library.models import Skill
from tests.governance_world import V1, V3, WHEN, actors, factory
from tests.test_canary import RELAXED

GREET_WHEN = "greet the visitor at the front desk"
WAVE_WHEN = "wave goodbye to the departing guest"


def skill(name: str, when: str, value: str) -> Skill:
    code = f'def {name}(target: str) -> dict:\n    """{when}"""\n    return {{"target": target, "by": "{value}"}}\n'
    return Skill.from_function(code, when=when)


def test_a_tenant_views_session_memo_is_its_own(library):
    # the root: greet v1, v2 and wave v1, v2; a session fetches both (memo: s1 -> v2, v2)
    for value in ("home-1", "home-2"):
        library.add(skill("greet", GREET_WHEN, value), verified=True)
        library.add(skill("wave", WAVE_WHEN, value), verified=True)
    assert {m.skill.name: m.skill.version for m in library.fetch(GREET_WHEN, k=1, session="s1")} == {"greet": 2}
    assert {m.skill.name: m.skill.version for m in library.fetch(WAVE_WHEN, k=1, session="s1")} == {"wave": 2}
    # acme: greet v1, v2, v3 (v2 superseded) and wave v1 only
    acme = library.for_tenant("acme")
    for value in ("acme-1", "acme-2", "acme-3"):
        acme.add(skill("greet", GREET_WHEN, value), verified=True)
    acme.add(skill("wave", WAVE_WHEN, "acme-1"), verified=True)
    before = {v: acme.get("greet", v).successes for v in (2, 3)}

    acme.feedback("greet", True, session="s1")  # acme's session s1 fetched nothing: the active v3
    after = {v: acme.get("greet", v).successes for v in (2, 3)}
    assert after == {2: before[2], 3: before[3] + 1}
    run = acme.run("wave", {"target": "guest"}, session="s1")  # was: SkillNotFoundError ... no version 2
    assert run.ok and run.version == 1 and run.value == {"target": "guest", "by": "acme-1"}
    # and the root's own memo is untouched
    assert library.run("wave", {"target": "guest"}, session="s1").version == 2


def test_a_tenant_view_does_not_inherit_the_roots_canary_cache(tmp_path, embedder):
    root = SkillLibrary(tmp_path / "lib", embedder=embedder)  # the default, governed policy
    try:
        proposer, approver = actors(root)
        root.add(Skill.from_function(V1, when=WHEN, tools=["restock"]), verified=True)
        draft = root.propose(Skill.from_function(V3, when=WHEN, tools=["restock"]), actor=proposer)
        assert root.evaluate("stock_item", draft.version, RELAXED, factory, actor=proposer).passed
        root.approve("stock_item", draft.version, actor=approver)
        root.start_canary("stock_item", draft.version, actor=approver, share=0.5)
        generation = root.context.store.index_generation()
        assert [c.name for c in root.canaries()] == ["stock_item"]  # the root's cache is filled
        acme = root.for_tenant("acme")
        acme.add(Skill.from_function(V1, when=WHEN, tools=["restock"]), verified=True)
        filler = 0
        while acme.context.store.index_generation() < generation:  # the same generation number as the root's
            acme.add(skill(f"filler_{filler}", f"filler task number {filler}", "acme"), verified=True)
            filler += 1
        assert acme.context.store.index_generation() == generation
        before = acme.get("stock_item").successes
        acme.feedback("stock_item", True)  # was: recorded, then SkillNotFoundError (root's canary v2)
        assert acme.get("stock_item").successes == before + 1
        assert acme.canaries() == []
    finally:
        root.close()


@pytest.fixture
def library(tmp_path, embedder):
    lib = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"))
    yield lib
    lib.close()


def test_library_store_is_deprecated_and_the_package_does_not_use_it(tmp_path, embedder):
    import warnings

    with SkillLibrary(tmp_path / "lib", embedder=embedder) as lib:
        with pytest.warns(DeprecationWarning, match=r"SkillLibrary.store is deprecated") as seen:
            store = lib.store
        assert seen[0].filename == __file__ and store is lib.context.store
        with warnings.catch_warnings():
            # no internal caller reads lib.store
            warnings.filterwarnings("error", message=r"SkillLibrary\.store", category=DeprecationWarning)
            acme = lib.for_tenant("acme")
            acme.add(Skill.from_function("def hello(name: str) -> str:\n    return 'hi ' + name\n",
                                         when="say hello to someone"))
            assert [m.skill.name for m in acme.fetch("say hello to Ada", k=1, abstain=False, min_reliability=0)] == ["hello"]
            assert acme.feedback("hello", True).successes == 1
            assert lib.list() == [] and acme.context.store.tenant == "acme"
