"""forget(subject) (issue 21 item 2, issue 23 item 7): the subject's value is in no row, no
index document and no raw file afterwards; what was derived is re-derived; a forgotten trace
is never learned again; an unknown subject removes nothing."""

from __future__ import annotations

import sqlalchemy as sa
from typer.testing import CliRunner

from skill_library import Outcome, ToolCall, Trace
from skill_library.erasure import files_holding

EMAIL = "Zoe.Quill@example.org"
PHRASES = ["cancel every order of", "please cancel all orders for", "cancel all the orders of",
           "I want every order cancelled, I am"]


def trace(email: str, uid: str, orders: list[str], phrase: str) -> Trace:
    return Trace(
        task=f"{phrase} {email}", params={"email": email},
        calls=[ToolCall(name="find_user", arguments={"email": email}, result={"user_id": uid, "email": email}),
               ToolCall(name="list_orders", arguments={"user_id": uid},
                        result=[{"order_id": o} for o in orders]),
               *[ToolCall(name="cancel_order", arguments={"order_id": o}, result="ok") for o in orders]],
        outcome=Outcome(success=True, verifier="orders-db"),
    )


def zoe_traces() -> list[Trace]:
    return [trace(EMAIL, f"u{n}", [f"W{n}1", f"W{n}2"], phrase) for n, phrase in enumerate(PHRASES)]


def others() -> list[Trace]:
    return [trace(f"other{n}@example.com", f"v{n}", [f"X{n}1"], "cancel every order of") for n in range(5)]


def rows_mentioning(engine: sa.Engine, value: str) -> dict[str, int]:
    """Per table, the rows with ``value`` (case-insensitive) in any column, every tenant."""
    found: dict[str, int] = {}
    with engine.connect() as conn:
        for table in sa.inspect(conn).get_table_names():
            n = sum(1 for row in conn.execute(sa.text(f'SELECT * FROM "{table}"'))
                    if any(value.lower() in str(v).lower() for v in row))
            if n:
                found[table] = n
    return found


def row_counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: conn.execute(sa.text(f'SELECT COUNT(*) FROM "{t}"')).scalar_one()
                for t in sa.inspect(conn).get_table_names()}


def vacuumed(engine: sa.Engine, tables: list[str], since) -> bool:
    """PostgreSQL's statistics say each table was vacuumed after ``since`` (polled for a few
    seconds: the statistics are flushed shortly after)."""
    import time

    deadline = time.monotonic() + 10
    while True:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT relname, last_vacuum FROM pg_stat_user_tables WHERE relname = ANY(:names)"),
                {"names": tables}).all()
        if len(rows) == len(tables) and all(at is not None and at >= since for _, at in rows):
            return True
        if time.monotonic() > deadline:
            raise AssertionError(f"not vacuumed since {since}: {rows}")
        time.sleep(0.5)


def documents(library) -> dict[str, str]:
    index = library.index
    return index.documents(list(index.entries()))


def build(library):
    for t in [*zoe_traces(), *others()]:
        assert library.learn(t).status in {"saved", "merged"}
    for n in range(6):
        library.patterns.record_transition(EMAIL, "browsing", "checkout", session=f"s{n}")
    library.patterns.record_transition("dave", "browsing", "support", session="d1")
    library.procedures.add("Offer express shipping", f"When {EMAIL} asks about delivery",
                           "Offer express shipping first.", subject=EMAIL)
    [name] = [n for n in library.context.store.names() if n != "offer_express_shipping"]
    # a run for the subject: its trace and outcome are recorded, the invocation in patterns
    tools = {"find_user": lambda email: {"user_id": "u9", "email": email},
             "list_orders": lambda user_id: [{"order_id": "W91"}],
             "cancel_order": lambda order_id: "ok"}
    ran = library.run(name, {"email": EMAIL}, tools, subject=EMAIL, session="run-1", verifier=lambda run: True)
    assert ran.ok
    return name


def test_forget_an_email_in_4_traces_and_6_pattern_cells_leaves_it_nowhere(deployment, embedder):
    library = deployment.open(embedder)
    try:
        name = build(library)
        engine = library.context.store.engine
        before = rows_mentioning(engine, EMAIL)
        # issue 23 item 7's case: 4 learned traces (and one run) and 6 pattern cells
        assert before["traces"] == 5 and before["pattern_transitions"] == 6
        assert any(EMAIL.lower() in d.lower() for d in documents(library).values())
        successes = library.get(name).successes
        erased_ids = {t.id for t in zoe_traces()}
        assert erased_ids <= {e.trace_id for e in library.examples(name)}
        if deployment.kind == "folder":
            assert any(f.startswith("records.db") for f in files_holding(library.path, EMAIL))  # or its WAL

        with engine.connect() as conn:  # the database's clock
            started = conn.execute(sa.text("SELECT now()" if deployment.kind == "shared" else "SELECT 1")).scalar()
        report = library.forget(EMAIL)

        assert report["found"] and report["traces"] == 5 and report["transitions"] == 6
        assert report["examples"] == 4 and report["outcome_links"] == 5  # 4 learned, 1 run
        assert report["procedures"] == ["offer_express_shipping"] and report["skills"] == [name]
        assert report["tombstones"] >= 4
        assert rows_mentioning(engine, EMAIL) == {}
        assert not any(EMAIL.lower() in d.lower() for d in documents(library).values())
        assert not any(i in entry for entry in library.index.entries() for i in erased_ids)
        # re-derived: the examples and the prototype stand for the other five traces only;
        # the aggregate count stays
        assert {e.trace_id for e in library.examples(name)} == {t.id for t in others()}
        assert set(library.prototype_traces(name)) == {t.id for t in others()}
        assert library.get(name).successes == successes
        assert library.patterns.distribution("dave", "browsing") == {"support": (1.0, 1)}
        if deployment.kind == "folder":
            assert files_holding(library.path, EMAIL) == []  # records.db, its WAL, Chroma's files
        else:  # forget ran VACUUM on the tables it deleted from
            assert vacuumed(engine, ["traces", "skill_examples", "pattern_transitions", "task_vectors"], started)
        assert library.fetch("cancel every order of bob@example.com", k=1)[0].skill.name == name
        # never learned again, by its content (whatever id it is given)
        again = library.learn(zoe_traces()[1])
        assert again.status == "forgotten" and "forget" in again.reasons[0]
        renamed = library.learn(zoe_traces()[2].model_copy(update={"id": "given-id-7"}))
        assert renamed.status == "forgotten"
        assert rows_mentioning(engine, EMAIL) == {}
        assert library.learn(trace("new@example.com", "n1", ["N1"], "cancel every order of")).status == "merged"
    finally:
        library.close()
    if deployment.kind == "folder":
        assert files_holding(library.path, EMAIL) == []
        reopened = deployment.open(embedder)
        try:
            assert not any(EMAIL.lower() in d.lower() for d in documents(reopened).values())
        finally:
            reopened.close()


def test_forget_of_an_unknown_subject_says_so_and_removes_nothing(library):
    build(library)
    counts = row_counts(library.context.store.engine)
    entries = library.index.entries()
    report = library.forget("nobody@example.com")
    assert report["found"] is False and report["traces"] == 0 and report["procedures"] == []
    assert row_counts(library.context.store.engine) == counts
    assert library.index.entries() == entries


def test_forget_refuses_an_empty_subject(library):
    import pytest

    from skill_library.erasure import ForgetError

    with pytest.raises(ForgetError, match="at least 2 characters"):
        library.forget("  ")


def test_an_opt_out_outlives_forget_without_the_value(library):
    library.patterns.record_transition(EMAIL, "browsing", "checkout", session="s0")
    library.opt_out(EMAIL)
    report = library.forget(EMAIL)
    assert report["found"] and report["opt_out_kept"] and report["transitions"] == 1
    assert rows_mentioning(library.context.store.engine, EMAIL) == {}
    assert library.patterns.opted_out(EMAIL)
    assert not library.patterns.record_transition(EMAIL, "browsing", "checkout", session="s1").recorded


def test_cli_forget_prints_what_it_removed(tmp_path, embedder):
    from skill_library.cli import app
    from skill_library.governance import Policy
    from skill_library.library import SkillLibrary

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        for t in zoe_traces()[:2]:
            lib.learn(t)
    runner = CliRunner()
    done = runner.invoke(app, ["forget", EMAIL], env={"SKILLS_DIR": str(folder)})
    assert done.exit_code == 0, done.output
    assert f"forgot {EMAIL}: 2 trace(s), 2 example(s), 2 outcome link(s)" in done.output
    unknown = runner.invoke(app, ["forget", "nobody@example.com"], env={"SKILLS_DIR": str(folder)})
    assert unknown.exit_code == 0 and "nothing is known about nobody@example.com" in unknown.output
    assert files_holding(folder, EMAIL) == []
    again = tmp_path / "again.json"
    again.write_text(zoe_traces()[0].model_dump_json())
    learned = runner.invoke(app, ["learn", str(again)], env={"SKILLS_DIR": str(folder)})
    assert "forgotten: this trace was erased by forget(subject)" in " ".join(learned.output.split())
    assert files_holding(folder, EMAIL) == []


def test_forget_stays_in_its_tenant(library):
    acme = library.for_tenant("acme")
    for lib in (library, acme):
        for t in zoe_traces()[:2]:
            assert lib.learn(t).status in {"saved", "merged"}
    report = acme.forget(EMAIL)
    assert report["traces"] == 2 and report["examples"] == 2
    with library.context.store.engine.connect() as conn:
        left = conn.execute(sa.text("SELECT tenant, COUNT(*) FROM traces GROUP BY tenant")).all()
    assert left == [("default", 2)]  # the other tenant's records are its own to forget
    assert acme.learn(zoe_traces()[0]).status == "forgotten"
    assert library.learn(zoe_traces()[0]).status == "duplicate"  # tombstones are per tenant
    assert len(library.examples(library.context.store.names()[0])) == 2


def test_an_actor_with_the_subject_s_id_is_a_governance_record_and_stays(library):
    from skill_library.governance import Actor

    library.actors.add(Actor(id="carol", kind="user", permissions=frozenset({"skill.propose"})))
    library.patterns.record_transition("carol", "browsing", "checkout", session="s0")
    report = library.forget("carol")
    assert report["transitions"] == 1 and "actors" not in report["scrubbed"]
    assert "carol" in {a.id for a in library.actors.list()}
