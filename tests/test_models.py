"""The data model: validation errors name the field; traces from OpenAI transcripts."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from skill_library.errors import TraceError
from skill_library.models import Outcome, Skill, Trace, laplace_reliability

CODE = '''def lookup_user(email: str, include_orders: bool = False) -> dict:
    """Find a user by e-mail."""
    return find_user(email=email)
'''


def test_skill_from_function_derives_name_schema_and_description():
    skill = Skill.from_function(CODE, when="find a customer by e-mail")
    assert skill.name == "lookup_user"
    assert skill.parameters == {
        "type": "object",
        "properties": {
            "email": {"type": "string"},
            "include_orders": {"type": "boolean", "default": False},
        },
        "required": ["email"],
    }
    assert skill.description == "Find a user by e-mail."
    assert skill.version == 1 and skill.status == "active"
    assert skill.reliability == 0.5


@pytest.mark.parametrize(
    "annotation, schema",
    [
        ("list[str]", {"type": "array", "items": {"type": "string"}}),
        ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
        ("int | None", {"type": ["integer", "null"]}),
        ("Optional[float]", {"type": ["number", "null"]}),
        ("Literal['a', 'b']", {"enum": ["a", "b"]}),
        ("'str'", {"type": "string"}),
        ("SomethingElse", {}),
    ],
)
def test_annotations_map_to_json_schema(annotation, schema):
    skill = Skill.from_function(f"def f(x: {annotation}):\n    return x\n", when="w")
    assert skill.parameters["properties"]["x"] == schema


@pytest.mark.parametrize(
    "fields, field_name, fragment",
    [
        ({"name": "Bad-Name"}, "name", "snake_case"),
        ({"name": "class"}, "name", "snake_case"),
        ({"name": "other"}, "code", "no top-level function named 'other'"),
        ({"code": "def lookup_user(:\n"}, "code", "syntax error at line 1"),
        ({"parameters": {"type": "array"}}, "parameters", '"type": "object"'),
        (
            {"parameters": {"type": "object", "properties": {"x": {}}}},
            "parameters",
            "do not match the arguments",
        ),
        ({"when": "   "}, "when", "blank"),
        ({"version": 0}, "version", "greater than or equal to 1"),
        ({"code": None}, "code", "needs the source"),
        ({"tools": ["not a name"]}, "tools", "not a valid identifier"),
    ],
)
def test_bad_skill_values_name_the_field(fields, field_name, fragment):
    data = {"name": "lookup_user", "code": CODE, "when": "find a user"}
    data.update(fields)
    with pytest.raises(ValidationError) as info:
        Skill(**data)
    text = str(info.value)
    assert field_name in text and fragment in text


def test_star_args_are_refused():
    with pytest.raises(ValidationError, match="may not take \\*args"):
        Skill.from_function("def f(*a):\n    return a\n", when="w")


def test_instruction_skill_has_no_code_and_needs_text():
    skill = Skill(name="refund_policy", kind="instruction", when="refunds", description="1. Check. 2. Refund.")
    assert skill.code is None and skill.parameters == {"type": "object", "properties": {}}
    with pytest.raises(ValidationError, match="instruction skills carry no code"):
        Skill(name="f", kind="instruction", when="w", description="x", code="def f():\n    pass\n")


def test_skills_are_immutable():
    skill = Skill.from_function(CODE, when="w")
    with pytest.raises(ValidationError):
        skill.when = "changed"


@pytest.mark.parametrize(
    "successes, failures, expected",
    [(0, 0, 0.5), (1, 0, 2 / 3), (3, 1, 4 / 6), (0, 3, 1 / 5), (10, 0, 11 / 12)],
)
def test_laplace_reliability(successes, failures, expected):
    assert laplace_reliability(successes, failures) == pytest.approx(expected)


def _transcript():
    return [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Cancel order W1 for a@b.com"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "find_user", "arguments": json.dumps({"email": "a@b.com"})}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"user_id": "u1"})},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "cancel", "arguments": '{"order_id": "W1"}'}},
                {"id": "c3", "type": "function", "function": {"name": "notify", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "Error: order W1 is not pending"},
        {"role": "tool", "tool_call_id": "c3", "content": "sent"},
        {"role": "assistant", "content": "Done."},
    ]


def test_trace_from_openai_messages():
    trace = Trace.from_openai_messages(
        _transcript(), task="Cancel order W1 for a@b.com", outcome={"success": True, "verifier": "human"}
    )
    assert [c.name for c in trace.calls] == ["find_user", "cancel", "notify"]
    assert trace.calls[0].arguments == {"email": "a@b.com"}
    assert trace.calls[0].result == {"user_id": "u1"}
    assert trace.calls[1].error == "order W1 is not pending" and not trace.calls[1].ok
    assert trace.calls[2].result == "sent"
    assert trace.verified_success
    assert isinstance(trace.outcome, Outcome)


def test_dangling_tool_call_names_the_message():
    messages = _transcript()
    del messages[6]  # the answer to c3
    with pytest.raises(TraceError, match="message 4: tool_call id 'c3' has no tool message"):
        Trace.from_openai_messages(messages, task="t", outcome=None)


def test_unknown_tool_call_id_names_the_message():
    messages = _transcript()
    messages[3]["tool_call_id"] = "zz"
    with pytest.raises(TraceError, match="message 3: tool message answers unknown tool_call id 'zz'"):
        Trace.from_openai_messages(messages, task="t", outcome=None)


def test_non_json_arguments_name_the_message():
    messages = _transcript()
    messages[2]["tool_calls"][0]["function"]["arguments"] = "{email: a@b.com"
    with pytest.raises(TraceError, match="message 2: arguments of tool call 'c1' \\(find_user\\) are not JSON"):
        Trace.from_openai_messages(messages, task="t", outcome=None)


def test_trace_needs_a_task():
    with pytest.raises(ValidationError, match="task"):
        Trace(task="  ")
