"""How a fetched skill's parameters get their values (the stand-in for an agent that knows
its arguments), and how a learned trace names its parameters.

*Gold binding* (after selection only): the task's gold **write** calls, in call order, give
for each argument name the list of its distinct values (``order_id`` -> ``[#W1, #W2]``).
A parameter ``NAME`` takes the first value, ``NAME_2`` the second, ... (numbered
parameters); a list parameter (JSON Schema ``array``) whose name is the plural of a scalar
argument (``order_ids``) takes all of its values. A learned train trace names its
parameters the same way (:func:`trace_params`), so a skill learned from a task binds on it.

*Text binding*: only values written in the instruction, found by simple patterns (``#W...``
order ids, emails, zip codes, payment method ids, ten-digit item ids, a cancel reason, a
name after "name is"); lookups are the skill's job.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from benchmarks.taubench.data import Call

_NUMBERED = re.compile(r"^(?P<base>[a-z][a-z0-9_]*?)_(?P<n>[2-9]|[1-9][0-9]+)$")


def write_values(calls: Sequence[Call]) -> dict[str, list[Any]]:
    """Argument name -> its distinct values over ``calls``, in first-call order."""
    out: dict[str, list[Any]] = {}
    seen: dict[str, set[str]] = {}
    for call in calls:
        for name, value in call.kwargs.items():
            key = json.dumps(value, sort_keys=True)
            if key in seen.setdefault(name, set()):
                continue
            seen[name].add(key)
            out.setdefault(name, []).append(value)
    return out


def numbered(name: str, index: int) -> str:
    """The parameter name of the ``index``-th (0-based) value of argument ``name``."""
    return name if index == 0 else f"{name}_{index + 1}"


def split_numbered(param: str) -> tuple[str, int]:
    """``order_id_3`` -> ``("order_id", 2)``; ``order_id`` -> ``("order_id", 0)``."""
    match = _NUMBERED.match(param)
    if match:
        return match.group("base"), int(match.group("n")) - 1
    return param, 0


def trace_params(calls: Sequence[Call]) -> dict[str, Any]:
    """The params a learned trace carries: every write argument's values, numbered."""
    return {numbered(name, i): value for name, values in write_values(calls).items() for i, value in enumerate(values)}


def _is_array(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def bind_values(parameters: Mapping[str, Any] | None, values: Mapping[str, list[Any]]) -> dict[str, Any] | None:
    """Arguments for a skill with JSON Schema ``parameters`` from ``values`` (name -> values in
    call order); None when a required parameter has no value."""
    schema = parameters or {}
    props: Mapping[str, Any] = schema.get("properties", {}) or {}
    required = set(schema.get("required", []) or [])
    args: dict[str, Any] = {}
    for param, spec in props.items():
        spec = spec if isinstance(spec, Mapping) else {}
        value, found = _value_for(param, spec, values)
        if found:
            args[param] = value
        elif param in required:
            return None
    return args


def _value_for(param: str, spec: Mapping[str, Any], values: Mapping[str, list[Any]]) -> tuple[Any, bool]:
    if param in values and values[param]:
        have = values[param]
        # a list parameter over scalar values takes them all (a skill looping over them)
        if _is_array(spec) and not any(isinstance(v, list) for v in have):
            return list(have), True
        return have[0], True
    base, index = split_numbered(param)
    if index and base in values:
        return (values[base][index], True) if index < len(values[base]) else (None, False)
    if _is_array(spec) and param.endswith("s") and values.get(param[:-1]):
        return list(values[param[:-1]]), True
    return None, False


def bind_gold(parameters: Mapping[str, Any] | None, writes: Sequence[Call]) -> dict[str, Any] | None:
    """Gold binding of a skill's parameters from the task's gold write calls."""
    return bind_values(parameters, write_values(writes))


# -- text binding ------------------------------------------------------------------------------

_PATTERNS: dict[str, re.Pattern[str]] = {
    "order_id": re.compile(r"#W\d{7}\b"),
    "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
    "zip": re.compile(r"\b\d{5}\b"),
    "payment_method_id": re.compile(r"\b(?:credit_card|paypal|gift_card)_\d+\b"),
    "item_id": re.compile(r"\b\d{10}\b"),
    "user_id": re.compile(r"\b[a-z]+_[a-z]+_\d{4}\b"),
}
_NAME = re.compile(r"\bname is ([A-Z][a-z]+) ([A-Z][a-z]+)")
_REASONS = ("no longer needed", "ordered by mistake")


def text_values(text: str) -> dict[str, list[Any]]:
    """Argument name -> the values written in ``text`` that have that argument's form."""
    out: dict[str, list[Any]] = {}
    for name, pattern in _PATTERNS.items():
        found = list(dict.fromkeys(pattern.findall(text)))
        if found:
            out[name] = found
    if "item_id" in out:
        out["item_ids"] = [list(out["item_id"])]
    person = _NAME.search(text)
    if person:
        out["first_name"], out["last_name"] = [person.group(1)], [person.group(2)]
    reasons = [r for r in _REASONS if r in text.lower()]
    if reasons:
        out["reason"] = reasons
    return out


def bind_text(parameters: Mapping[str, Any] | None, text: str) -> dict[str, Any] | None:
    """Text binding of a skill's parameters from the instruction alone."""
    return bind_values(parameters, text_values(text))


# -- plan steps --------------------------------------------------------------------------------


def bind_plan_steps(steps: Sequence[tuple[Mapping[str, Any] | None, Sequence[str]]],
                    writes: Sequence[Call]) -> list[dict[str, Any] | None]:
    """Gold binding for the steps of a plan, each ``(parameters schema, tools its skill calls)``.

    Each step binds from the gold write calls of the tools its skill calls that no earlier
    step consumed; the calls that gave a bound value are consumed, so values are taken in
    call order across steps. A step that cannot be bound gives None (and consumes nothing).
    """
    used = [False] * len(writes)
    out: list[dict[str, Any] | None] = []
    for parameters, tools in steps:
        pool = [i for i, call in enumerate(writes) if not used[i] and call.name in set(tools)]
        args = bind_values(parameters, write_values([writes[i] for i in pool]))
        out.append(args)
        if args is None:
            continue
        taken = _taken(args, [writes[i] for i in pool])
        for i in pool:
            relevant = [(k, v) for k, v in writes[i].kwargs.items() if k in taken]
            if relevant and all(json.dumps(v, sort_keys=True) in taken[k] for k, v in relevant):
                used[i] = True
    return out


def _taken(args: Mapping[str, Any], calls: Sequence[Call]) -> dict[str, set[str]]:
    """Argument name -> the (JSON) values a step's bound ``args`` took of it from ``calls``."""
    values = write_values(calls)
    taken: dict[str, set[str]] = {}
    for param, value in args.items():
        base = param if param in values else split_numbered(param)[0]
        if base not in values and param.endswith("s"):
            base = param[:-1]
        if base not in values:
            continue
        listed = any(isinstance(v, list) for v in values[base])
        items = value if isinstance(value, list) and not listed else [value]
        taken.setdefault(base, set()).update(json.dumps(v, sort_keys=True) for v in items)
    return taken
