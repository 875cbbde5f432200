"""SkillLibrary.learn with an LLM endpoint from the environment (real openai client,
scripted local server), and the `skills learn --llm` command."""

from __future__ import annotations

import json

import pytest
from chat_server import ScriptedChatServer, json_reply
from typer.testing import CliRunner

from skill_library.cli import app
from skill_library.errors import LLMError
from skill_library.governance import Policy
from skill_library.induction import DataflowGeneralizer, LLMGeneralizer
from skill_library.models import Outcome, ToolCall, Trace

#: these tests learn skills that activate: they opt in to auto-approval
ALL = Policy(auto_approve="all")

TRACE = Trace(
    task="archive the invoices of acme",
    params={"customer": "acme"},
    calls=[
        ToolCall(name="find_invoices", arguments={"customer": "acme"}, result=[{"id": "i-1"}, {"id": "i-2"}]),
        ToolCall(name="archive", arguments={"invoice_id": "i-1"}, result="ok"),
        ToolCall(name="archive", arguments={"invoice_id": "i-2"}, result="ok"),
    ],
    outcome=Outcome(success=True, verifier="ledger"),
)

REPLY = {
    "name": "archive_customer_invoices",
    "when": "Archive the invoices of the customer",
    "description": "Archive every invoice of one customer.",
    "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
    "code": (
        "def archive_customer_invoices(customer: str) -> list:\n"
        "    done = []\n"
        "    for invoice in find_invoices(customer=customer):\n"
        "        done.append(archive(invoice_id=invoice['id']))\n"
        "    return done\n"
    ),
}


@pytest.fixture
def llm_env(monkeypatch):
    with ScriptedChatServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("SKILL_LIBRARY_MODEL", "scripted-model")
        yield server


def test_learn_uses_the_llm_when_asked_and_records_usage(library, llm_env):
    llm_env.add(json_reply(REPLY))
    result = library.learn(TRACE, generalizer="llm")
    assert result.status == "saved", result.reasons
    skill = library.get("archive_customer_invoices")
    assert skill.provenance.generalizer == "llm" and skill.provenance.model == "scripted-model"
    assert skill.provenance.usage["total_tokens"] > 0
    assert skill.provenance.trace_ids == [TRACE.id]
    assert library.context.store.get_trace(TRACE.id).task == TRACE.task
    assert len(llm_env.requests) == 1


def test_an_endpoint_in_the_environment_alone_does_not_turn_the_llm_on(library, llm_env):
    """Issue 14 item 9: OPENAI_* in the shell, plain learn(): offline, no request sent."""
    assert isinstance(library.default_generalizer(), DataflowGeneralizer)
    result = library.learn(TRACE)
    assert result.status == "saved" and result.skill.provenance.generalizer != "llm"
    assert llm_env.requests == []


def test_the_llm_as_a_library_setting(tmp_path, embedder, llm_env):
    from skill_library.library import SkillLibrary

    llm_env.add(json_reply(REPLY))
    with SkillLibrary(tmp_path / "lib", embedder=embedder, generalizer="llm", policy=ALL) as lib:
        assert isinstance(lib.default_generalizer(), LLMGeneralizer)
        assert lib.learn(TRACE).skill.provenance.generalizer == "llm"
    assert len(llm_env.requests) == 1
    with pytest.raises(ValueError, match="generalizer must be 'dataflow' or 'llm'"):
        SkillLibrary(tmp_path / "lib", embedder=embedder, generalizer="gpt")  # type: ignore[arg-type]


def test_asking_for_the_llm_without_an_endpoint_is_a_clear_error(library, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(LLMError, match="needs an endpoint"):
        library.learn(TRACE, generalizer="llm")


def test_cli_learn_without_llm_flag_stays_offline(tmp_path, llm_env, embedder):
    path = tmp_path / "trace.json"
    path.write_text(TRACE.model_dump_json())
    result = CliRunner().invoke(app, ["learn", str(path), "--json", "--create"],
                                env={"SKILLS_DIR": str(tmp_path / "lib")})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["skill"]["provenance"]["generalizer"] != "llm"
    assert llm_env.requests == []


def test_without_an_endpoint_learn_is_offline(library, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(library.default_generalizer(), DataflowGeneralizer)
    assert library.learn(TRACE).status == "saved"


def test_a_configured_but_unreachable_llm_is_a_clear_error(library, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with pytest.raises(LLMError, match="127.0.0.1:9"):
        library.learn(TRACE, generalizer="llm")
    assert library.list() == []


def test_cli_learn_with_llm(tmp_path, llm_env, embedder):
    llm_env.add(json_reply(REPLY))
    path = tmp_path / "trace.json"
    path.write_text(TRACE.model_dump_json())
    env = {"SKILLS_DIR": str(tmp_path / "lib")}
    # the learned skill must activate: the library opts in to auto-approval
    assert CliRunner().invoke(app, ["init", "--auto-approve", "all"], env=env).exit_code == 0
    result = CliRunner().invoke(app, ["learn", str(path), "--llm", "--json", "--create"], env=env)
    assert result.exit_code == 0, result.output
    learned = json.loads(result.output)
    assert learned["status"] == "saved" and learned["skill"]["provenance"]["generalizer"] == "llm"
