"""Tool calls from a run's child: arguments bound and checked, the tool run, the call
recorded, a reply frame built. Tools run in the host, in the thread that runs the skill.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from . import protocol
from .models import CallRecord, Limits
from .pool import _Protocol
from .results import _LimitHit, _short
from .schema import schema_errors


class _BadArguments(Exception):
    pass


def _bind(
    name: str, schema: dict | None, args: list, kwargs: dict
) -> dict[str, Any]:
    """The keyword arguments of a call: exactly what the tool receives and the record holds.

    Positional arguments are named by the schema's ``properties`` order, and refused when
    there is no schema: a tool's own signature can take ``*args`` or positional-only
    parameters, whose values would then reach it differently from the record.
    """
    if not args:
        return dict(kwargs)
    props = schema.get("properties") if schema is not None else None
    order = list(props) if isinstance(props, dict) else []
    if not order:
        raise _BadArguments(
            f"{name}() got {len(args)} positional argument(s) and has no schema naming its "
            "parameters: pass keyword arguments, or give the tool a schema"
        )
    if len(args) > len(order):
        raise _BadArguments(
            f"{name}() takes at most {len(order)} positional argument(s) ({len(args)} given)"
        )
    arguments = dict(zip(order, args))
    for key, value in kwargs.items():
        if key in arguments:
            raise _BadArguments(f"{name}() got multiple values for argument {key!r}")
        arguments[key] = value
    return arguments


def dispatch(
    msg: dict[str, Any],
    tools: dict[str, Callable[..., Any]],
    schemas: dict[str, dict],
    calls: list[CallRecord],
    limits: Limits,
) -> bytes:
    """Run the tool a ``call`` frame names and record the call; the reply frame. Tool
    failures and bad arguments are replies; a malformed frame or one call too many
    raises."""
    name, args, kwargs = msg.get("name"), msg.get("args"), msg.get("kwargs")
    invalid = msg.get("invalid")
    if (
        not isinstance(name, str)
        or not isinstance(args, list)
        or not isinstance(kwargs, dict)
        or (invalid is not None and not isinstance(invalid, str))
    ):
        raise _Protocol("malformed tool call from worker")
    name = _short(name)
    t0 = time.perf_counter()
    # Records hold keyword arguments only; positional ones are named below or refused.
    arguments: dict[str, Any] = dict(kwargs)
    if len(calls) >= limits.max_tool_calls:
        calls.append(CallRecord(
            name, arguments, None,
            f"tool call limit of {limits.max_tool_calls} exceeded", 0.0,
        ))
        raise _LimitHit("tool_calls", f"tool call limit of {limits.max_tool_calls} exceeded")
    result: Any = None
    text: str | None = None
    error: str | None = None
    if invalid is not None:
        error = f"invalid arguments for tool {name!r}: {_short(invalid)}"
    elif name not in tools:
        available = ", ".join(sorted(tools)) or "none"
        error = f"tool {name!r} is not available (available: {available})"
    else:
        fn, schema = tools[name], schemas.get(name)
        try:
            arguments = _bind(name, schema, args, kwargs)
        except _BadArguments as exc:
            error = str(exc)
        else:
            problems = schema_errors(arguments, schema) if schema is not None else []
            if problems:
                error = f"invalid arguments for tool {name!r}: " + "; ".join(problems)
            else:
                try:
                    raw = fn(**arguments)
                except Exception as exc:  # noqa: BLE001 - the tool's failure, reported
                    error = _short(str(exc) or type(exc).__name__)
                else:
                    try:
                        text = protocol.dumps(raw)
                        result = json.loads(text)
                    except (TypeError, ValueError, RecursionError) as exc:
                        text = None
                        error = f"tool {name!r} returned a value that is not JSON: {exc}"
    duration = (time.perf_counter() - t0) * 1000.0
    calls.append(CallRecord(name, arguments, result, error, duration))
    if error is None and text is not None:
        return protocol.frame('{"op":"tool_result","ok":true,"result":' + text + "}")
    return protocol.encode({"op": "tool_result", "ok": False, "error": error})
