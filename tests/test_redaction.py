"""redact_stored (issue 21 item 2): versions stored before the masking pass with personal data
get a redacted new version, their old texts erased (audited without the content), and a
skill whose name held personal data is renamed, its old name an alias for a release. The
library is built by writing old-style rows directly."""

from __future__ import annotations

import json
import warnings

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from skill_library.models import Outcome, ToolCall, Trace, utc_now
from skill_library.storage.tables import examples_table, skills_table, traces_table, versions_table

EMAIL = "zoe.quill@example.org"
NAME = "Zoe Quill"
OLD = "send_note_to_zoe_quill"
CODE = f'''def {OLD}(email: str, body: str):
    """Send a note to {NAME} ({EMAIL}) about the delivery.

    Learned from 1 verified trace."""
    r1 = find_user(email=email)
    return send_message(user_id=r1['user_id'], body=body, signature='{NAME}')
'''
WHEN = f"{NAME} ({EMAIL}) wants a note about the delivery: send {{body}} to {{email}}."
TASK = f"Hi, I'm {NAME}, {EMAIL}. Send a note about my delivery saying it is late"
CLEAN = '''def count_orders(email: str):
    """Count the orders of a user (looks the user up by email)."""
    r1 = find_user(email=email)
    return len(list_orders(user_id=r1['user_id']))
'''
PARAMS = {"type": "object", "properties": {"email": {"type": "string"}, "body": {"type": "string"}},
          "required": ["email", "body"]}


def old_trace() -> Trace:
    return Trace(
        id="t-old-1", task=TASK, params={"email": EMAIL, "body": "it is late"},
        calls=[ToolCall(name="find_user", arguments={"email": EMAIL}, result={"user_id": "u77", "name": NAME}),
               ToolCall(name="send_message", arguments={"user_id": "u77", "body": "it is late", "signature": NAME},
                        result="sent")],
        outcome=Outcome(success=True, verifier="outbox"),
    )


def write_old_rows(library) -> None:
    """Rows as a version of the library before the masking pass wrote them."""
    now = utc_now()
    trace = old_trace()
    with library.context.store.transaction(write=True) as conn:
        for name, when, code, params, tools, ids in (
            (OLD, WHEN, CODE, PARAMS, ["find_user", "send_message"], [trace.id]),
            ("count_orders", "Count the orders of a user (looks the user up by email).", CLEAN,
             {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
             ["find_user", "list_orders"], []),
        ):
            conn.execute(skills_table.insert().values(tenant="default", name=name, active_version=1,
                                                      created_at=now, updated_at=now))
            conn.execute(versions_table.insert().values(
                tenant="default", name=name, version=1, kind="code", when_text=when,
                description=when if name == OLD else when, code=code, parameters=params, tools=tools,
                depends_on=[], status="active", successes=7, failures=1, created_at=now,
                provenance={"trace_ids": ids, "generalizer": "dataflow", "model": None,
                            "created_by": "generalizer", "created_at": now.isoformat(), "usage": {}}))
        conn.execute(traces_table.insert().values(tenant="default", id=trace.id, task=trace.task, source="agent",
                                                  body=json.loads(trace.model_dump_json()), created_at=now))
        conn.execute(examples_table.insert().values(tenant="default", name=OLD, trace_id=trace.id, text=TASK,
                                                    params={"email": EMAIL, "body": "it is late"}, indexed=True,
                                                    created_at=now))
    library.reindex(force=True)


def rows_with(engine, value: str) -> dict[str, int]:
    found: dict[str, int] = {}
    with engine.connect() as conn:
        for table in sa.inspect(conn).get_table_names():
            n = sum(1 for row in conn.execute(sa.text(f'SELECT * FROM "{table}"'))
                    if any(value.lower() in str(v).lower() for v in row))
            if n:
                found[table] = n
    return found


@pytest.fixture
def library(deployment, embedder):
    """On a folder and on PostgreSQL + a Chroma server (conftest's ``deployment``)."""
    lib = deployment.open(embedder)
    yield lib
    lib.close()


def test_redact_stored_writes_a_redacted_version_erases_the_old_and_keeps_an_alias(library):
    write_old_rows(library)
    assert rows_with(library.context.store.engine, EMAIL)["skill_versions"] == 1
    docs = library.index.documents(list(library.index.entries()))
    assert any(NAME in d for d in docs.values())

    report = library.redact_stored()

    [done] = report.skills
    assert (done.name, done.new_name, done.new_version, done.erased_versions) == (OLD, "send_note", 1, [1])
    assert {"name", "when_text", "description", "code"} <= set(done.fields)
    assert report.examples == 1 and done.constants == 1  # signature='Zoe Quill' (the docstring is not counted)
    # the values stay only in the trace (the subject's own record, erased by forget)
    for value in (EMAIL, NAME, "u77"):
        assert rows_with(library.context.store.engine, value) == {"traces": 1}, value
    docs = library.index.documents(list(library.index.entries()))
    assert not any(NAME.lower() in d.lower() or EMAIL in d for d in docs.values())
    new = library.context.store.get("send_note")
    assert new.status == "active" and (new.successes, new.failures) == (7, 1)  # the aggregate stays
    assert new.code.startswith("def send_note(email: str, body: str):") and "signature='(a name)'" in new.code
    [old] = library.context.store.history(OLD)
    assert old.status == "retired" and old.when.startswith("(erased: this version held personal data")
    [event] = [e for e in library.audit("send_note") if e.to_status == "redacted"]
    assert event.evidence["erased_versions"] == [1] and event.evidence["renamed"] is True
    assert library.get("count_orders").version == 1  # a clean skill is left alone

    with pytest.warns(DeprecationWarning, match="renamed to 'send_note'"):
        assert library.get(OLD).name == "send_note"
    sent = []
    tools = {"find_user": lambda email: {"user_id": "u1"},
             "send_message": lambda user_id, body, signature: sent.append((user_id, body, signature)) or "sent"}
    with pytest.warns(DeprecationWarning, match="renamed"):
        run = library.run(OLD, {"email": "bob@example.com", "body": "hello"}, tools)
    assert run.ok and run.name == "send_note" and sent == [("u1", "hello", "(a name)")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert library.get("send_note").name == "send_note"  # the new name never warns
    assert library.redact_stored().skills == []  # idempotent


def test_cli_show_by_an_old_name_and_redact_stored(tmp_path, embedder):
    from skill_library.cli import app
    from skill_library.governance import Policy
    from skill_library.library import SkillLibrary

    folder = tmp_path / "lib"
    with SkillLibrary(folder, embedder=embedder, policy=Policy(auto_approve="all")) as lib:
        write_old_rows(lib)
    runner = CliRunner()
    done = runner.invoke(app, ["redact-stored"], env={"SKILLS_DIR": str(folder)})
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())  # the console wraps long lines
    assert "redacted 1 skill(s) (1 version(s) erased), 1 example(s)" in said
    assert f"{OLD} -> send_note" in said
    assert "review (their code used a personal value as a constant): send_note" in said
    shown = runner.invoke(app, ["show", OLD], env={"SKILLS_DIR": str(folder)})
    assert shown.exit_code == 0, shown.output
    assert "renamed to 'send_note'" in shown.output and "def send_note(" in shown.output
    again = runner.invoke(app, ["redact-stored"], env={"SKILLS_DIR": str(folder)})
    assert "nothing was redacted" in again.output
