"""The parts of a dataflow plan and the pure helpers on values, specs and paths.

A :class:`Plan` is what :mod:`.dataflow` builds from a trace and :mod:`.rendering` turns into
code: its :class:`Param` list, its :class:`Step` list (one call, or a loop of calls) and the
:data:`Spec` of what it returns. A spec says how one value is computed:

``("param", name)`` | ``("ref", call, path)`` | ``("item", path)`` | ``("const", json)`` |
``("text", str)`` | ``("dict", ((key, spec), ...))`` | ``("list", (spec, ...))`` |
``("concat", (spec, ...))`` | ``("expr", op, spec, spec)`` | ``("len", spec)`` | ``("num", x)`` |
``("round", spec, digits)`` | ``("items", spec)`` | ``("map", spec, path)``.
"""

from __future__ import annotations

import json
import keyword
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from skill_library.errors import GeneralizationError
from skill_library.models import ToolCall

Path = tuple[Any, ...]
Spec = tuple[Any, ...]  # ("param", name) | ("ref", call, path) | ("item", path) | ("const", json) |
# ("dict", ((key, spec), ...)) | ("list", (spec, ...)) | ("concat", (spec, ...))


def typed_key(value: Any) -> str:
    """A hashable, type-strict identity for a JSON-like value (True is not 1, 2 is 2.0)."""

    def tag(v: Any) -> Any:
        if isinstance(v, bool) or v is None:
            return ["b", v]
        if isinstance(v, int):
            return ["n", str(v)]
        if isinstance(v, float):  # 2.0 is 2; no float rounding of large ints
            return ["n", str(int(v)) if math.isfinite(v) and v.is_integer() else repr(v)]
        if isinstance(v, str):
            return ["s", v]
        if isinstance(v, dict):
            return ["d", sorted((str(k), tag(x)) for k, x in v.items())]
        if isinstance(v, (list, tuple)):
            return ["l", [tag(x) for x in v]]
        return ["o", repr(v)]

    return json.dumps(tag(value), sort_keys=True)


def walk(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Every (path, sub-value) of a JSON-like value, the value itself first."""
    out = [(path, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(walk(item, path + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(walk(item, path + (index,)))
    return out


def identifier(raw: str, fallback: str = "value") -> str:
    """A valid, public, non-keyword Python identifier made from ``raw``."""
    text = unicodedata.normalize("NFKD", str(raw)).encode("ascii", "ignore").decode()
    text = re.sub(r"\W+", "_", text).strip("_")
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}_{text}"
    if keyword.iskeyword(text) or keyword.issoftkeyword(text):
        text += "_value"
    return text


def word_pattern(text: str) -> re.Pattern[str]:
    """A pattern finding ``text`` as whole words."""
    return re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)")


def literal(value: Any) -> str:
    """Python source for a JSON-like constant."""
    if isinstance(value, float) and not math.isfinite(value):
        raise GeneralizationError(f"constant {value!r} cannot be written as a literal")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def annotation(value: Any) -> str:
    """The type annotation (``": int"``) for a parameter with example ``value``, or ""."""
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"),
                       (list, "list"), (dict, "dict")):
        if isinstance(value, kind):
            return f": {name}"
    return ""

def short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=repr, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_text(call: ToolCall) -> str:
    """A short ``tool(arg=value, ...)`` text for one call (for error messages)."""
    args = ", ".join(f"{k}={short(v, 40)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def fresh(taken: set[str], base: str) -> str:
    """``base``, or ``base_2``, ``base_3``... : the first name not in ``taken`` (added to it)."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


@dataclass
class Param:
    """A parameter of the skill: its name, its value in the trace, and whether the trace
    gave it (``explicit``) or it was found in the task text."""

    name: str
    value: Any
    explicit: bool


@dataclass
class Step:
    """One emitted statement: a single call, or a loop of calls over a list."""

    calls: list[int]  # indexes into the successful calls
    tool: str
    args: list[tuple[str, Spec]]
    loop_over: Spec | None = None


@dataclass
class Plan:
    """The skill as steps: its params, its steps and what it returns (None: the last result)."""

    params: list[Param]
    steps: list[Step]
    returns: Spec | None
    loop_call: dict[int, tuple[int, int]] = field(default_factory=dict)  # call -> (step, m)


def param_names(spec: Spec) -> set[str]:
    """The params ``spec`` reads."""
    kind = spec[0]
    if kind == "param":
        return {spec[1]}
    if kind == "dict":
        return set().union(*(param_names(s) for _k, s in spec[1]))
    if kind in ("list", "concat"):
        return set().union(*(param_names(s) for s in spec[1]))
    return set()


def mentions_item(spec: Spec) -> bool:
    """Whether ``spec`` reads the loop item."""
    kind = spec[0]
    if kind == "item":
        return True
    if kind == "dict":
        return any(mentions_item(s) for _k, s in spec[1])
    if kind in ("list", "concat"):
        return any(mentions_item(s) for s in spec[1])
    return False

def finite_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def close_to(a: float | None, b: Any) -> bool:
    """Whether ``a`` equals the number ``b`` (to rounding error, or to the cent)."""
    b = finite_number(b)
    return a is not None and b is not None and (abs(a - b) <= 1e-9 * max(1.0, abs(b))
                                                or round(a, 2) == round(b, 2) and b == round(b, 2))


def path_value(value: Any, path: Path) -> Any:
    """The part of ``value`` at ``path`` (None when it has none)."""
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return None
    return value

def collect_refs(spec: Spec, out: set[int]) -> None:
    """Add the call indexes ``spec`` reads results of to ``out``."""
    kind = spec[0]
    if kind == "ref":
        out.add(spec[1])
    elif kind == "dict":
        for _k, s in spec[1]:
            collect_refs(s, out)
    elif kind in ("list", "concat"):
        for s in spec[1]:
            collect_refs(s, out)
    elif kind == "expr":
        collect_refs(spec[2], out)
        collect_refs(spec[3], out)
    elif kind in ("len", "round", "map", "items"):
        collect_refs(spec[1], out)
