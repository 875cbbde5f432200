"""Fetched skills as OpenAI function tools, and ``dispatch``: run the skill a model called.

:func:`as_openai_tools` gives Chat Completions tools (``{"type": "function", "function":
{...}}``) or, with ``api="responses"``, the Responses API form (``{"type": "function",
"name": ...}``). ``strict`` is set when the skill's schema meets OpenAI's strict-mode rules
(every property required and typed, no free-form objects); the schema is then closed with
``additionalProperties: false`` at every level.

:func:`dispatch` answers one tool call with the message to append: a ``tool`` message for
Chat Completions, a ``function_call_output`` item for the Responses API. Arguments the
model got wrong (not JSON, unknown or missing names, wrong JSON types, an unknown skill)
come back as an ``Error: ...`` message and nothing is run or recorded; a run that fails in
the sandbox is recorded as a failure, as :meth:`SkillLibrary.run` always does.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence

from skill_library.errors import SkillLibraryError, SkillNotFoundError
from skill_library.models import Match, Skill, SkillRun
from skill_library.serialize import jsonable

if TYPE_CHECKING:
    from skill_library.protocols import Dispatching

__all__ = [
    "ToolMessage",
    "argument_problem",
    "as_openai_tools",
    "dispatch",
    "skill_tool",
    "strict_parameters",
]

Api = Literal["chat", "responses"]
MAX_TOOL_NAME = 64  # OpenAI: ^[a-zA-Z0-9_-]{1,64}$
#: a tool description is cut to this many characters once a caution is added
MAX_DESCRIPTION = 1024

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


class ToolMessage(dict[str, Any]):
    """The message :func:`dispatch` returns (a plain dict to the ``openai`` client).

    ``run`` is the :class:`SkillRun` behind it, or None when the call was refused before
    running (bad arguments, unknown skill); use ``run.trace.id`` to record feedback later.
    """

    run: SkillRun | None = None


def description_of(skill: Skill) -> str:
    """The tool description: ``when``, then the docstring when it says something more."""
    text = " ".join(skill.when.split())
    extra = " ".join(skill.description.split())
    if extra and extra != text:
        text = f"{text}. {extra}" if not text.endswith(".") else f"{text} {extra}"
    return text


def strict_parameters(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``schema`` closed for OpenAI strict mode, or None when strict mode cannot express it."""
    closed = copy.deepcopy(dict(schema or {"type": "object", "properties": {}}))
    return closed if _close(closed) else None


def _close(schema: dict[str, Any]) -> bool:
    if "default" in schema:
        return False
    if "anyOf" in schema:
        return all(isinstance(s, dict) and _close(s) for s in schema["anyOf"])
    if "enum" in schema:
        return True
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not kinds or not all(k in _JSON_TYPES for k in kinds):
        return False  # an untyped (Any) value
    if "object" in kinds:
        properties = schema.get("properties")
        if not isinstance(properties, dict) or set(schema.get("required", [])) != set(properties):
            return False  # free-form, or with optional properties
        if not all(isinstance(s, dict) and _close(s) for s in properties.values()):
            return False
        schema["additionalProperties"] = False
        schema["required"] = list(properties)
    if "array" in kinds:
        items = schema.get("items")
        if not isinstance(items, dict) or not _close(items):
            return False
    return True


def skill_tool(skill: Skill, *, api: Api = "chat") -> dict[str, Any]:
    """One code skill as a function tool in the ``api`` form."""
    if skill.kind != "code":
        raise ValueError(f"skill {skill.name!r} is an instruction skill: it is no callable tool")
    if len(skill.name) > MAX_TOOL_NAME:
        raise ValueError(f"skill name {skill.name!r} is longer than OpenAI's {MAX_TOOL_NAME} characters")
    strict = strict_parameters(skill.parameters)
    function: dict[str, Any] = {
        "name": skill.name,
        "description": description_of(skill),
        "parameters": strict if strict is not None else copy.deepcopy(skill.parameters),
        "strict": strict is not None,
    }
    if api == "chat":
        return {"type": "function", "function": function}
    if api == "responses":
        return {"type": "function", **function}
    raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")


def as_openai_tools(matches: Sequence[Match | Skill], *, api: Api = "chat") -> list[dict[str, Any]]:
    """Function tools for the code skills among ``matches`` (instruction skills are skipped).

    When fetch was not sure (an abstained or ambiguous result) or flagged a match, its tool's
    description ends with a ``Caution:`` saying so (prompt_block.caution and notes), so a
    model choosing by descriptions is told, not just handed a tool."""
    from skill_library.presentation.prompt_block import caution, notes

    unsure = caution(matches) if all(isinstance(m, Match) for m in matches) else None
    tools = []
    for item in matches:
        skill = item.skill if isinstance(item, Match) else item
        if skill.kind != "code":
            continue
        tool = skill_tool(skill, api=api)
        said = ([f"{unsure}; call it only if it does exactly what the task asks"] if unsure else []) + \
            (notes(item) if isinstance(item, Match) else [])
        if said:
            function = tool["function"] if api == "chat" else tool
            function["description"] = f"{function['description']} Caution: {'; '.join(said)}."[:MAX_DESCRIPTION]
        tools.append(tool)
    return tools


def argument_problem(skill: Skill, args: Any) -> str | None:
    """What is wrong with ``args`` for ``skill`` (names and top-level JSON types), or None."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    schema = skill.parameters or {}
    properties: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(args) - set(properties))
    if unknown:
        return f"{skill.name} has no parameter(s) {', '.join(unknown)}; it takes {', '.join(properties) or 'none'}"
    missing = [p for p in schema.get("required", []) if p not in args]
    if missing:
        return f"{skill.name} needs argument(s) {', '.join(missing)}"
    for name, value in args.items():
        expected = properties[name]
        if "enum" in expected and value not in expected["enum"]:
            return f"argument {name} must be one of {expected['enum']!r}, got {value!r}"
        kinds = expected.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds or []
        checks = [_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES]
        if checks and not any(check(value) for check in checks):
            return f"argument {name} must be {' or '.join(kinds)}, got {type(value).__name__} {value!r}"
    return None


def dispatch(
    library: "Dispatching",
    tool_call: Any,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    **run_options: Any,
) -> ToolMessage:
    """Run the skill ``tool_call`` names and return the message answering it.

    ``tool_call`` is a Chat Completions tool call (the ``openai`` object or its dict) or a
    Responses API ``function_call`` item. ``run_options`` go to :meth:`SkillLibrary.run`
    (``tool_schemas``, ``limits``, ``verifier``, ``version``, ``session``: with a session
    and no version, the version fetch gave that session, as ``run`` does).
    """
    call_id, name, raw, api = _parse_call(tool_call)
    run: SkillRun | None = None
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        text = f"Error: arguments of {name} are not JSON ({exc.msg}); send a JSON object"
    else:
        text, run = _run(library, name, args if args is not None else {}, tools, run_options)
    message = ToolMessage(
        {"role": "tool", "tool_call_id": call_id, "content": text}
        if api == "chat"
        else {"type": "function_call_output", "call_id": call_id, "output": text}
    )
    message.run = run
    return message


def _run(
    library: "Dispatching",
    name: str,
    args: Any,
    tools: Mapping[str, Callable[..., Any]] | None,
    run_options: Mapping[str, Any],
) -> tuple[str, SkillRun | None]:
    version = run_options.get("version")
    if version is None and (run_options.get("session") is not None or run_options.get("cohort") is not None):
        # the version fetch gave this session (a canary's or the active one)
        from skill_library.governance import canary

        version = canary.session_version(library, name, session=run_options.get("session"),
                                         cohort=run_options.get("cohort"))
    try:
        skill = library.get(name, version)
    except SkillNotFoundError:
        return f"Error: there is no skill named {name!r}; call one of the tools you were given", None
    if skill.status not in ("active", "canary") and run_options.get("version") is None:
        skill = library.get(name)  # the session's canary ended: the active version
    if skill.status not in ("active", "canary") or skill.kind != "code":
        return f"Error: skill {name!r} cannot be called (it is {skill.status}, {skill.kind})", None
    problem = argument_problem(skill, args)
    if problem is not None:
        return f"Error: {problem}", None
    try:
        run = library.run(name, args, tools, **run_options)
    except (SkillLibraryError, ValueError) as exc:  # nothing ran
        return f"Error: {exc}", None
    if not run.ok:
        return f"Error: skill {name} v{run.version} failed: {run.error or run.limit}", run
    return json.dumps(jsonable(run.value)), run


def _parse_call(tool_call: Any) -> tuple[str, str, Any, Api]:
    """(call id, function name, raw arguments, api form) of either API's tool call."""
    get = (lambda key: tool_call.get(key)) if isinstance(tool_call, Mapping) else (
        lambda key: getattr(tool_call, key, None)
    )
    function = get("function")
    if function is not None:
        fget = function.get if isinstance(function, Mapping) else lambda k: getattr(function, k, None)
        call_id, name, raw, api = get("id"), fget("name"), fget("arguments"), "chat"
    elif get("type") == "function_call" or get("call_id") is not None:
        call_id, name, raw, api = get("call_id"), get("name"), get("arguments"), "responses"
    else:
        raise ValueError("tool_call is neither a Chat Completions tool call nor a Responses function_call")
    if not isinstance(name, str) or not name:
        raise ValueError("tool_call has no function name")
    return str(call_id), name, raw, api  # type: ignore[return-value]
