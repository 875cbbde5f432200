"""Tenants: one library's stores, several tenants, no call ever crossing from one to another.

Each test sets up two tenants of one library folder, ``default`` (``home``) and ``acme``
(``acme = home.for_tenant("acme")``), holding different skills under the same name, and
checks one call on both sides. Real parts: the real model, Chroma, the sandbox, and
PostgreSQL + a Chroma server for the shared deployment.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings

import anyio
import pytest
import sqlalchemy as sa
from schema_v3 import make_v3_store  # tests/schema_v3.py

from skill_library.errors import EvidenceError, SkillNotFoundError, TraceNotFoundError
from skill_library.governance import Policy
from skill_library.index_sync import IndexRebuiltWarning
from skill_library.library import SkillLibrary
from skill_library.models import Outcome, Provenance, Skill, ToolCall, Trace
from skill_library.tenancy import DEFAULT_TENANT, InvalidTenantError, collection_name

HOME_WHEN = "water the plants in the garden"
ACME_WHEN = "book a flight ticket to another city"


def skill(name: str, when: str, value: str) -> Skill:
    code = f'def {name}(target: str) -> dict:\n    """{when}"""\n    return {{"target": target, "by": "{value}"}}\n'
    return Skill.from_function(code, when=when)


@pytest.fixture
def tenants(library):
    """(home, acme): ``water_plants`` in both, a different workflow in each; ``secret_report``
    only in acme. Each skill has one verified success."""
    acme = library.for_tenant("acme")
    library.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
    acme.add(skill("water_plants", ACME_WHEN, "acme"), verified=True)
    acme.add(skill("secret_report", "write the quarterly secret revenue report", "acme"), verified=True)
    return library, acme


def names(skills) -> list[str]:
    return sorted(s.name for s in skills)


# -- names and views -----------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "Acme", "a b", "-acme", "acme-", "a.b", "x" * 64, "ä"])
def test_a_bad_tenant_name_is_one_clear_line(tmp_path, embedder, bad):
    with pytest.raises(InvalidTenantError) as caught:
        SkillLibrary(tmp_path / "lib", embedder=embedder, tenant=bad)
    assert "tenant name" in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "lib").exists()  # refused before anything was created


def test_for_tenant_is_a_cached_view_on_the_same_stores(library):
    acme = library.for_tenant("acme")
    assert acme.tenant == "acme" and library.tenant == DEFAULT_TENANT
    assert library.for_tenant("acme") is acme and acme.for_tenant("default") is library
    assert acme.context.store.engine is library.context.store.engine and acme.embedder is library.embedder
    assert acme.sandbox is not library.sandbox  # each tenant runs in its own sandbox (issue 23)
    with pytest.raises(InvalidTenantError):
        library.for_tenant("Not Valid")
    acme.close()  # a view's close leaves the library open
    assert library.list() == []


def test_collection_names_keep_the_default_and_derive_valid_others():
    assert collection_name("skills", DEFAULT_TENANT) == "skills"
    assert collection_name("skills", "acme-1") == "skills.tenant.acme-1"


# -- isolation, one call at a time ---------------------------------------------------------
def test_list_and_get_see_one_tenant(tenants):
    home, acme = tenants
    assert names(home.list()) == ["water_plants"]
    assert names(acme.list()) == ["secret_report", "water_plants"]
    assert home.get("water_plants").when == HOME_WHEN and acme.get("water_plants").when == ACME_WHEN
    with pytest.raises(SkillNotFoundError):
        home.get("secret_report")


def test_fetch_never_returns_another_tenants_skill(tenants):
    home, acme = tenants
    assert [m.skill.when for m in acme.fetch("book a flight to Paris", k=3)] == [ACME_WHEN]
    assert [m.skill.when for m in home.fetch("book a flight to Paris", k=3, min_similarity=-1)] == [HOME_WHEN]
    assert home.fetch("write the quarterly secret revenue report", k=3, min_similarity=0.5) == []
    assert acme.fetch("write the quarterly secret revenue report")[0].skill.name == "secret_report"


def test_history_add_and_add_many_stay_in_their_tenant(tenants):
    home, acme = tenants
    acme.add(skill("water_plants", "book a plane ticket to another city", "acme2"))
    [result] = acme.add_many([skill("order_pizza", "order a pizza for dinner", "acme")])
    assert result.status == "added"
    assert [s.version for s in acme.history("water_plants")] == [1, 2]
    assert [s.version for s in home.history("water_plants")] == [1]
    assert names(home.list()) == ["water_plants"]
    with pytest.raises(SkillNotFoundError):
        home.history("order_pizza")


def test_duplicates_are_judged_within_a_tenant(tenants):
    home, acme = tenants
    # acme's when, nearly word for word: a duplicate in acme, a new skill at home
    twin = skill("fly_somewhere", "book a flight ticket to another city", "home")
    assert acme.add(twin).status == "duplicate"
    assert home.add(twin).status == "added"
    [many] = acme.for_tenant("other").add_many([twin])
    assert many.status == "added"


def test_feedback_and_outcomes_stay_in_their_tenant(tenants):
    home, acme = tenants
    acme.feedback("water_plants", False)
    acme.feedback("water_plants", False)
    assert (acme.get("water_plants").successes, acme.get("water_plants").failures) == (1, 2)
    assert (home.get("water_plants").successes, home.get("water_plants").failures) == (1, 0)
    assert [o["success"] for o in home.outcomes("water_plants")] == [True]
    assert [o["success"] for o in acme.outcomes("water_plants")] == [True, False, False]
    with pytest.raises(SkillNotFoundError):
        home.feedback("secret_report", True)


def test_run_traces_and_trace_stay_in_their_tenant(tenants):
    home, acme = tenants
    ran = acme.run("water_plants", {"target": "roses"}, verifier=lambda r: True)
    assert ran.value == {"target": "roses", "by": "acme"}
    assert home.run("water_plants", {"target": "roses"}).value == {"target": "roses", "by": "home"}
    assert acme.trace(ran.trace.id).id == ran.trace.id
    with pytest.raises(TraceNotFoundError):
        home.trace(ran.trace.id)
    assert ran.trace.id in {t.id for t in acme.traces("water_plants")}
    assert ran.trace.id not in {t.id for t in home.traces("water_plants")}
    with pytest.raises(SkillNotFoundError):
        home.run("secret_report", {"target": "x"})


def test_quarantine_and_its_events_stay_in_their_tenant(tenants):
    from skill_library.patterns.reliability import QUARANTINE_MIN_OUTCOMES, events

    home, acme = tenants
    for _ in range(QUARANTINE_MIN_OUTCOMES):
        acme.feedback("water_plants", False)
    assert acme.get("water_plants").status == "quarantined"
    assert home.get("water_plants").status == "active"
    assert [e["event"] for e in events(acme.context.store, "water_plants")] == ["quarantined"]
    assert events(home.context.store, "water_plants") == []
    assert home.fetch(HOME_WHEN)[0].skill.name == "water_plants"


def test_retire_in_one_tenant_leaves_the_other(tenants):
    home, acme = tenants
    acme.retire("water_plants")
    assert acme.get("water_plants").status == "retired" and home.get("water_plants").status == "active"
    assert home.fetch(HOME_WHEN)[0].skill.name == "water_plants"
    assert acme.fetch(ACME_WHEN, min_similarity=0.5) == []


def test_reindex_of_one_tenant_leaves_the_other_intact(tenants):
    home, acme = tenants
    before = home.index.entries()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)  # home is never found out of step
        assert acme.reindex() == 2
        assert home.index.entries() == before
        assert home.fetch(HOME_WHEN)[0].skill.when == HOME_WHEN
        assert acme.fetch(ACME_WHEN)[0].skill.when == ACME_WHEN
        assert home.reindex() == 1
        assert names(acme.list()) == ["secret_report", "water_plants"]
        assert set(acme.index.entries()) == {"water_plants", "secret_report"}


def test_a_reopened_library_opens_its_tenant(tenants, embedder):
    home, _ = tenants
    path = home.path
    home.close()
    with SkillLibrary(path, embedder=embedder, tenant="acme") as acme:
        assert names(acme.list()) == ["secret_report", "water_plants"]
        assert acme.fetch(ACME_WHEN)[0].skill.when == ACME_WHEN
    with SkillLibrary(path, embedder=embedder) as again:
        assert names(again.list()) == ["water_plants"]


def restock(count: int) -> Trace:
    return Trace(
        task=f"restock {count} apples in the fruit aisle",
        params={"count": count},
        calls=[ToolCall(name="restock", arguments={"item": "apple", "count": count},
                        result={"item": "apple", "stock": count})],
        outcome=Outcome(success=True, verifier="stock-audit"),
    )


RESTOCK = restock(3)


def test_learn_learn_many_and_examples_stay_in_their_tenant(tenants):
    home, acme = tenants
    learned = acme.learn(RESTOCK)
    assert learned.status == "saved"
    name = learned.skill.name
    with pytest.raises(SkillNotFoundError):
        home.get(name)
    with pytest.raises(SkillNotFoundError):
        home.examples(name)
    assert acme.examples(name) and acme.trace(RESTOCK.id).id == RESTOCK.id
    with pytest.raises(TraceNotFoundError):
        home.trace(RESTOCK.id)
    # the same trace at home is learned afresh there (not merged into acme's skill)
    [again] = home.learn_many([RESTOCK])
    assert again.status == "saved" and again.skill.name == name
    assert acme.get(name).successes == 1 and home.get(name).successes == 1
    merged = acme.learn(restock(5))
    assert merged.status == "merged"
    assert len(acme.examples(name)) == 2 and len(home.examples(name)) == 1


def test_import_draft_stays_in_its_tenant(tenants):
    home, acme = tenants
    acme.import_draft(skill("draft_only", "translate a contract into french", "acme"))
    assert acme.history("draft_only")[0].status == "draft"
    with pytest.raises(SkillNotFoundError):
        home.history("draft_only")


def test_procedures_stay_in_their_tenant(tenants):
    home, acme = tenants
    acme.add_procedure("Quote the worst case", "estimating a delivery date", "Always give the worst case.")
    assert [p.name for p in acme.procedures.list()] == ["quote_the_worst_case"]
    assert home.procedures.list() == []
    assert "worst case" in acme.build_system_prompt("base")
    assert home.build_system_prompt("base") == "base"
    acme.record_procedure_outcome("quote_the_worst_case", True)
    assert acme.procedures.get("quote_the_worst_case").confidence == pytest.approx(0.68)
    with pytest.raises(SkillNotFoundError):
        home.record_procedure_outcome("quote_the_worst_case", True)


def test_patterns_stay_in_their_tenant(tenants):
    home, acme = tenants
    acme.patterns.define_states(["browsing", "checkout"])
    for n in range(3):
        acme.patterns.record_transition("ann", "browsing", "checkout", session=f"s{n}")
    assert acme.patterns.distribution("ann", "browsing") == {"checkout": (1.0, 3)}
    assert home.patterns.distribution("ann", "browsing") == {}
    assert home.patterns.states() == []
    home.patterns.record_transition("ann", "browsing", "water_plants", session="h")
    assert acme.patterns.distribution("ann", "browsing") == {"checkout": (1.0, 3)}


def test_run_with_a_session_records_patterns_in_its_tenant(tenants):
    home, acme = tenants
    for _ in range(2):
        acme.run("water_plants", {"target": "x"}, subject="ann", session="s1")
    assert acme.patterns.distribution("ann", "water_plants") == {"water_plants": (1.0, 1)}
    assert home.patterns.distribution("ann", "water_plants") == {}


def test_explain_forget_and_opt_out_stay_in_their_tenant(tenants):
    home, acme = tenants
    for lib in (home, acme):
        lib.patterns.record_transition("ann", "browsing", "water_plants", session="s")
    acme.add_procedure("Greet ann warmly", "greeting ann", "Say hello.")
    acme.procedures.add("Ann likes tea", "serving ann", "Offer tea.", subject="ann", source="extracted")
    assert [p["name"] for p in acme.explain("ann")["procedures"]] == ["ann_likes_tea"]
    assert home.explain("ann")["procedures"] == []
    forgotten = home.forget("ann")
    assert forgotten["transitions"] == 1 and forgotten["procedures"] == []
    assert home.explain("ann")["patterns"] == []
    assert [p["from_state"] for p in acme.explain("ann")["patterns"]] == ["browsing"]
    assert acme.get("ann_likes_tea").kind == "instruction"
    acme.opt_out("bob")
    assert acme.patterns.record_transition("bob", "a", "b", session="s").recorded is False
    assert home.patterns.record_transition("bob", "a", "b", session="s").recorded is True
    assert acme.explain("bob")["opted_out"] and not home.explain("bob")["opted_out"]
    # the procedure added for ann, and the one whose text names her (it holds her data)
    assert acme.forget("ann")["procedures"] == ["ann_likes_tea", "greet_ann_warmly"]
    with pytest.raises(SkillNotFoundError):
        acme.get("ann_likes_tea")


def test_render_as_openai_tools_and_dispatch_stay_in_their_tenant(tenants):
    home, acme = tenants
    learned = acme.learn(RESTOCK).skill
    # home's copy names acme's trace as its evidence: render must not read it from acme
    code = f'def {learned.name}(count: int) -> dict:\n    """restock apples"""\n    return {{"count": count}}\n'
    copy = Skill.from_function(code, when=learned.when, provenance=Provenance(trace_ids=[RESTOCK.id]))
    with pytest.raises(EvidenceError, match="no stored trace"):  # acme's trace is no evidence here
        home.add(copy, verified=True)
    home.add(copy)
    task = "restock 4 apples in the fruit aisle"
    # acme's recorded example gives a typed stand-in (0, never its 3); home cannot read
    # acme's trace, so nothing of it reaches home's block
    assert "count=0" in acme.render(acme.fetch(task, k=1)) and "count=3" not in acme.render(acme.fetch(task, k=1))
    assert "count=0" not in home.render(home.fetch(task, k=1))
    [tool] = home.as_openai_tools(home.fetch(HOME_WHEN, k=1))
    assert HOME_WHEN in json.dumps(tool) and ACME_WHEN not in json.dumps(tool)
    call = {"id": "c1", "type": "function",
            "function": {"name": "water_plants", "arguments": json.dumps({"target": "tulips"})}}
    assert json.loads(home.dispatch(call)["content"])["by"] == "home"
    assert json.loads(acme.dispatch(call)["content"])["by"] == "acme"
    secret = {**call, "function": {**call["function"], "name": "secret_report"}}
    assert "no skill named" in home.dispatch(secret)["content"]


def test_mcp_server_serves_one_tenant(tenants):
    pytest.importorskip("mcp")
    from mcp import Client

    from skill_library.integrations.mcp_server import FIXED_TOOLS, SkillServer

    home, acme = tenants

    async def listed(lib):
        async with Client(SkillServer(lib, {}).server) as client:
            tools = {t.name for t in (await client.list_tools()).tools} - set(FIXED_TOOLS)
            shown = await client.call_tool("show_skill", {"name": "water_plants"})
            return tools, shown.structured_content["when"]

    assert anyio.run(listed, home) == ({"water_plants"}, HOME_WHEN)
    assert anyio.run(listed, acme) == ({"water_plants", "secret_report"}, ACME_WHEN)


def test_agent_skills_export_and_import_stay_in_their_tenant(tenants, tmp_path):
    from skill_library.integrations.agent_skills import export_library, import_folders

    home, acme = tenants
    written = export_library(acme, tmp_path / "out").written
    assert sorted(p.name for p in written) == ["secret-report", "water-plants"]
    results = import_folders(home.for_tenant("beta"), tmp_path / "out")
    assert [r.status for r in results] == ["draft", "draft"]
    beta = home.for_tenant("beta")
    assert names(beta.list()) == ["secret_report", "water_plants"]
    assert names(home.list()) == ["water_plants"] and home.get("water_plants").when == HOME_WHEN
    assert len(acme.history("water_plants")) == 1


def test_text_vectors_are_each_tenants_own(tenants):
    home, acme = tenants

    def stored() -> int:
        with home.context.store.transaction(write=False) as conn:
            return int(conn.execute(sa.text("SELECT COUNT(*) FROM text_vectors")).scalar())

    before = stored()
    # the same text in a third tenant is embedded for it: a row of its own (issue 23: a shared
    # row let one tenant confirm another's exact text)
    assert acme.for_tenant("beta").add(skill("water_plants", HOME_WHEN, "beta")).status == "added"
    assert stored() == before + 1


# -- the CLI -------------------------------------------------------------------------------
def test_cli_takes_tenant_from_the_option_and_the_environment(tenants, monkeypatch):
    from typer.testing import CliRunner

    from skill_library.cli import app

    home, _ = tenants
    folder = str(home.path)
    home.close()
    runner = CliRunner()
    listed = runner.invoke(app, ["--tenant", "acme", "list", "--dir", folder, "--json"])
    assert listed.exit_code == 0, listed.output
    assert sorted(s["name"] for s in json.loads(listed.output)) == ["secret_report", "water_plants"]
    shown = runner.invoke(app, ["history", "water_plants", "--tenant", "acme", "--dir", folder, "--json"])
    assert shown.exit_code == 0, shown.output
    assert [v["when"] for v in json.loads(shown.output)] == [ACME_WHEN]
    fed = runner.invoke(app, ["feedback", "water_plants", "--failure", "--tenant", "acme", "--dir", folder])
    assert fed.exit_code == 0, fed.output
    monkeypatch.setenv("SKILLS_TENANT", "acme")
    shown = runner.invoke(app, ["show", "secret_report", "--dir", folder, "--json"])
    assert shown.exit_code == 0, shown.output
    monkeypatch.delenv("SKILLS_TENANT")
    missing = runner.invoke(app, ["show", "secret_report", "--dir", folder])
    assert missing.exit_code == 1 and "no skill named 'secret_report'" in missing.output
    bad = runner.invoke(app, ["--tenant", "Bad Name", "list", "--dir", folder])
    assert bad.exit_code == 2 and "tenant name 'Bad Name' is invalid" in bad.output
    with SkillLibrary(folder, create=False) as lib:  # the failure went to acme's skill only
        assert lib.get("water_plants").failures == 0
        assert lib.for_tenant("acme").get("water_plants").failures == 1


# -- the shared deployment -----------------------------------------------------------------
def test_tenants_are_isolated_on_both_deployments(deployment, embedder):
    with deployment.open(embedder) as home:
        acme = home.for_tenant("acme")
        home.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        acme.add(skill("water_plants", ACME_WHEN, "acme"), verified=True)
        acme.feedback("water_plants", True)
        assert [m.skill.when for m in home.fetch("book a flight", min_similarity=-1)] == [HOME_WHEN]
        assert [m.skill.when for m in acme.fetch("book a flight")] == [ACME_WHEN]
        assert len(home.outcomes("water_plants")) == 1 and len(acme.outcomes("water_plants")) == 2
        with warnings.catch_warnings():
            warnings.simplefilter("error", IndexRebuiltWarning)
            assert acme.reindex() == 1
            assert home.fetch(HOME_WHEN)[0].skill.when == HOME_WHEN
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)  # each tenant's index was kept
        with deployment.open(embedder, tenant="acme") as acme:
            assert acme.fetch(ACME_WHEN)[0].skill.when == ACME_WHEN
            assert acme.get("water_plants").successes == 2


@pytest.mark.slow
def test_skills_migrate_copies_every_tenant_into_the_shared_deployment(tmp_path, shared, embedder):
    from skill_library.deploy import copy_folder_library

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all")) as home:
        home.add(skill("water_plants", HOME_WHEN, "home"), verified=True)
        home.for_tenant("acme").add(skill("water_plants", ACME_WHEN, "acme"), verified=True)
    report = copy_folder_library(folder, shared.spec["records"], shared.spec["index"])
    assert report.indexed == 2 and report.rows["skills"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)  # both tenants' collections were built
        with shared.open(embedder) as home:
            assert [m.skill.when for m in home.fetch("book a flight", min_similarity=-1)] == [HOME_WHEN]
            acme = home.for_tenant("acme")
            assert [m.skill.when for m in acme.fetch("book a flight")] == [ACME_WHEN]
            assert acme.get("water_plants").successes == 1


# -- migration from schema 3 ---------------------------------------------------------------
def _check_migrated(lib: SkillLibrary) -> None:
    current = lib.get("water_plants")
    assert (current.version, current.successes, current.failures, current.when) == (2, 3, 1, HOME_WHEN)
    assert [s.status for s in lib.history("water_plants")] == ["superseded", "active"]
    assert [o["success"] for o in lib.outcomes("water_plants")] == [True, True, False, True]
    assert lib.trace("t1").task == "water the roses"
    assert [e.text for e in lib.examples("water_plants")] == ["water the roses"]
    assert lib.fetch("water my garden plants")[0].skill.name == "water_plants"
    assert lib.patterns.distribution("ann", "water_plants") == {"water_plants": (1.0, 3)}
    assert lib.patterns.opted_out("bob")
    lib.feedback("water_plants", True)  # new rows get ids after the copied ones
    lib.patterns.record_transition("ann", "water_plants", "water_plants", session="new")
    assert [o["success"] for o in lib.outcomes("water_plants")][-1] is True
    acme = lib.for_tenant("acme")
    assert acme.list() == [] and acme.patterns.distribution("ann", "water_plants") == {}
    acme.add(skill("water_plants", ACME_WHEN, "acme"))
    assert lib.get("water_plants").when == HOME_WHEN


def test_a_schema_3_folder_upgrades_in_place_into_the_default_tenant(tmp_path, embedder):
    from skill_library.record_store import SCHEMA_VERSION

    folder = tmp_path / "old"
    folder.mkdir()
    make_v3_store(f"sqlite:///{folder / 'records.db'}")
    with pytest.warns(IndexRebuiltWarning):  # the v3 store had no index folder here
        with SkillLibrary(folder, embedder=embedder, create=False) as lib:
            _check_migrated(lib)
    with sqlite3.connect(folder / "records.db") as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not any(t.endswith("_before_tenants") for t in tables)
        for table in ("skills", "skill_versions", "outcomes", "traces", "skill_examples", "library_meta",
                      "pattern_transitions", "pattern_opt_outs"):
            assert {r[0] for r in conn.execute(f"SELECT DISTINCT tenant FROM {table}")} <= {"default", "acme"}
        key = [r[1] for r in conn.execute("PRAGMA table_info(skills)") if r[5]]
        assert key == ["tenant", "name"]
        version = conn.execute("SELECT value FROM library_meta WHERE key = 'schema_version'").fetchone()[0]
        applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert version == str(SCHEMA_VERSION) and applied == list(range(1, SCHEMA_VERSION + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)
        with SkillLibrary(folder, embedder=embedder) as lib:  # opens again with nothing to do
            assert lib.get("water_plants").successes == 4


def test_a_schema_3_folder_keeps_its_index_through_the_upgrade(tmp_path, embedder):
    """The default tenant's index is the folder's ``skills`` collection and ``generation``
    file, as schema 3 wrote them: the upgraded folder adopts them, no rebuild."""
    from skill_library.record_store import SQLRecordStore
    from skill_library.vector_index import VectorIndex, entries_for

    folder = tmp_path / "old"
    folder.mkdir()
    make_v3_store(f"sqlite:///{folder / 'records.db'}")
    with SkillLibrary(folder, embedder=embedder, create=False) as lib:  # what the index holds
        wanted = entries_for(lib.list(status="active"), lib.context.store.examples(["water_plants"]))
    shutil.rmtree(folder)
    folder.mkdir()
    make_v3_store(f"sqlite:///{folder / 'records.db'}")  # schema 3 again, with its index beside it
    index = VectorIndex(folder / "chroma", embedder)
    index.rebuild(wanted)
    index.close()
    (folder / "chroma" / "generation").write_text("7")  # the v3 store's index generation
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexRebuiltWarning)
        with SkillLibrary(folder, embedder=embedder, create=False) as lib:
            assert lib.index.entries() == {"water_plants": 2, "water_plants#t1": 2}
            assert lib.fetch("water my garden plants")[0].skill.name == "water_plants"
    store = SQLRecordStore.in_folder(folder, create=False)
    try:
        assert store.index_generation() == 7
    finally:
        store.close()


def test_a_schema_3_postgresql_database_upgrades_in_place(shared, embedder):
    make_v3_store(shared.spec["records"])
    with pytest.warns(IndexRebuiltWarning):
        with shared.open(embedder) as lib:
            _check_migrated(lib)
    engine = sa.create_engine(shared.spec["records"])
    try:
        key = sa.inspect(engine).get_pk_constraint("skill_versions")["constrained_columns"]
        assert key == ["tenant", "name", "version"]
        assert not any(t.endswith("_before_tenants") for t in sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
