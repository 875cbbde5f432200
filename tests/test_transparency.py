"""explain, forget and opt-out (issue 11): what was inferred about a subject, deleted everywhere."""

from __future__ import annotations

import sqlalchemy as sa
from chat_server import ScriptedChatServer, json_reply
from typer.testing import CliRunner

from skill_library.cli import app

RULE = {"title": "Quantify the worst case", "trigger": "When the user asks about an investment",
        "description": "State the worst plausible loss in money first.", "confidence": 0.85}


def extracted(library, subject: str) -> str:
    import openai

    from skill_library.governance import Actor

    library.actors.add(Actor(id="optimizer", kind="service", permissions=frozenset({"skill.propose"})))
    with ScriptedChatServer([json_reply({"procedures": [RULE]})]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0, timeout=5)
        result = library.extract_procedures([{"role": "user", "content": "worst case first, please"}],
                                            actor="optimizer", subject=subject, client=client)
    [draft] = result.drafts
    return draft.name


def rows_mentioning(library, text: str) -> list[str]:
    """Every table row (in the records file) with ``text`` in any column."""
    found = []
    with library.context.store.engine.connect() as conn:
        for table in sa.inspect(conn).get_table_names():
            for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')):
                if any(text in str(v) for v in row):
                    found.append(table)
    return found


def test_explain_then_forget_leaves_no_row_or_index_entry(library):
    for n in range(6):
        library.patterns.record_transition("carol", "browsing", "checkout", session=f"s{n}")
    name = extracted(library, "carol")
    # the admin approves the draft as a new active version for carol (no governance yet)
    library.procedures.add(RULE["title"], RULE["trigger"], RULE["description"], name=name, subject="carol")
    library.patterns.record_transition("dave", "browsing", "support", session="d1")
    explained = library.explain("carol")
    assert explained["patterns"][0]["from_state"] == "browsing"
    assert explained["patterns"][0]["distribution"] == {"checkout": {"probability": 1.0, "count": 6}}
    assert explained["patterns"][0]["influences"] == "nothing"  # checkout is a state, not a skill
    assert [(p["name"], p["influences"]) for p in explained["procedures"]] == [(name, "prompt")]
    assert name in library.index.entries()
    assert "Quantify the worst case" in library.build_system_prompt("Base.")

    forgotten = library.forget("carol")
    assert forgotten["found"] and forgotten["subject"] == "carol"
    assert (forgotten["transitions"], forgotten["procedures"], forgotten["traces"]) == (6, [name], 0)
    assert rows_mentioning(library, "carol") == []
    assert rows_mentioning(library, name) == []
    assert name not in library.index.entries()
    assert library.explain("carol") == {"subject": "carol", "opted_out": False, "patterns": [], "procedures": []}
    assert library.patterns.distribution("dave", "browsing") == {"support": (1.0, 1)}  # others are kept
    assert library.build_system_prompt("Base.") == "Base."
    library.close()
    from skill_library.library import SkillLibrary

    with SkillLibrary(library.path, embedder=library.embedder) as reopened:  # no rebuild needed
        assert name not in reopened.index.entries()


def test_opt_out_holds(library):
    library.patterns.record_transition("erin", "browsing", "checkout", session="s0")
    library.add_procedure("Greet by name", "When a conversation starts", "Greet the user by name.")
    name = extracted(library, "erin")
    library.procedures.add(RULE["title"], RULE["trigger"], RULE["description"], name=name, subject="erin")
    library.opt_out("erin")
    result = library.patterns.record_transition("erin", "browsing", "checkout", session="s1")
    assert not result.recorded and "opted out" in result.reason
    assert library.patterns.distribution("erin", "browsing") == {}
    assert library.patterns.predict("erin", "browsing", min_n=1) is None
    prompt = library.build_system_prompt("Base.")
    assert "Greet by name" in prompt and "Quantify the worst case" not in prompt
    explained = library.explain("erin")
    assert explained["opted_out"] and all(p["influences"] == "nothing" for p in explained["procedures"])
    library.forget("erin")
    assert not library.patterns.record_transition("erin", "browsing", "checkout", session="s2").recorded


def test_cli_explain_forget_opt_out_and_patterns(tmp_path, embedder):
    folder = tmp_path / "lib"
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env={"SKILLS_DIR": str(folder)})
        return result.exit_code, result.output

    assert invoke("init")[0] == 0
    from skill_library.library import SkillLibrary

    with SkillLibrary(folder, embedder=embedder) as lib:
        for n in range(3):
            lib.patterns.record_transition("fay", "browsing", "checkout", session=f"s{n}")
    code, out = invoke("patterns", "fay")
    assert code == 0 and "browsing -> checkout 1.00 (3)" in out
    code, out = invoke("explain", "fay", "--json")
    assert code == 0 and '"opted_out": false' in out
    code, out = invoke("opt-out", "fay")
    assert code == 0 and "fay opted out" in out
    code, out = invoke("forget", "fay")
    assert code == 0 and "forgot fay: 0 trace(s), 0 example(s), 0 outcome link(s), 3 transition(s)" in out
    code, out = invoke("patterns", "fay")
    assert code == 0 and "no patterns recorded for fay" in out
