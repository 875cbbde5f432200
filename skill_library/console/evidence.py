"""What the console shows about one skill version besides its code: the tools it calls with
their side effects, its preconditions in words, and each parameter's description.

A tool is *read-only* when the tenant declares it without side effects (or the library was
opened with it in ``read_only_tools=``); a declared tool with side effects changes state; an
undeclared one is counted as having side effects, as governance counts it
(``needs_human``). Preconditions are the mined :class:`~skill_library.models.Condition`\\ s
of the version's provenance, rendered as the description's ``Applies when`` sentence
renders them. Parameter descriptions come from the JSON Schema's ``description`` when it
has one, else from the function's docstring (a Google-style ``Args:`` section, as learned
skills are written, or Sphinx ``:param name:`` lines).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from skill_library.induction.preconditions import render

__all__ = ["docstring_parameters", "parameter_rows", "precondition_lines", "tool_rows"]

#: what each kind of tool is called on a page
READ_ONLY, SIDE_EFFECTS, UNDECLARED = "read-only", "side effects", "undeclared: counted as side effects"

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:?\s*$", re.I)
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*:\s*(.*)$")
_SPHINX_ITEM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def tool_rows(skill: Any, specs: Mapping[str, Any], active: Any | None = None) -> list[dict[str, Any]]:
    """One row per tool ``skill`` declares: ``name``, ``effect`` (:data:`READ_ONLY`,
    :data:`SIDE_EFFECTS` or :data:`UNDECLARED`), ``changes`` (whether it changes state, as
    governance counts it), ``new`` (not among the ``active`` version's tools) and the
    declared ``description``."""
    before = set(active.tools) if active is not None else None
    rows = []
    for name in skill.tools:
        spec = specs.get(name)
        effect = UNDECLARED if spec is None else (SIDE_EFFECTS if spec.side_effects else READ_ONLY)
        rows.append({"name": name, "effect": effect, "changes": effect != READ_ONLY,
                     "new": before is not None and name not in before,
                     "description": getattr(spec, "description", "") if spec is not None else ""})
    return rows


def precondition_lines(skill: Any) -> list[str]:
    """The version's preconditions in words, each naming the look-alike it tells apart."""
    lines = []
    for condition in skill.provenance.preconditions:
        text = render(condition)
        lines.append(f"{text} (tells it apart from {condition.against})" if condition.against else text)
    return lines


def docstring_parameters(doc: str) -> dict[str, str]:
    """Each parameter's description in a docstring: a Google-style ``Args:`` section (or a
    numpy ``Parameters`` one), or Sphinx ``:param name:`` lines; continuation lines joined."""
    found: dict[str, str] = {}
    lines = doc.expandtabs().splitlines()
    current: str | None = None
    for line in lines:
        match = _SPHINX_ITEM.match(line.strip())
        if match:
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif current is not None and line.strip() and not line.strip().startswith(":") and line[:1].isspace():
            found[current] = f"{found[current]} {line.strip()}".strip()
        else:
            current = None
    if found:
        return found
    return _section_parameters(lines)


def _section_parameters(lines: list[str]) -> dict[str, str]:
    """The items of an ``Args:`` (Google: ``name (type): text``) or ``Parameters`` + rule
    (numpy: ``name : type`` then the text indented below) section."""
    found: dict[str, str] = {}
    for at, line in enumerate(lines):
        if not _SECTION.match(line.strip()):
            continue
        numpy = at + 1 < len(lines) and bool(_NUMPY_RULE.match(lines[at + 1].strip()))
        body = lines[at + (2 if numpy else 1):]
        items = [ln for ln in body if ln.strip()]
        if not items:
            return found
        indent = _depth(items[0])
        current: str | None = None
        for item in body:
            text = item.strip()
            if not text:
                continue
            depth = _depth(item)
            if depth < indent or (numpy and _NUMPY_RULE.match(text)):
                break
            match = (_NUMPY_ITEM if numpy else _GOOGLE_ITEM).match(text) if depth == indent else None
            if match:
                current = match.group(1).lstrip("*")
                found[current] = "" if numpy else match.group(3).strip()
            elif current is not None and depth > indent:
                found[current] = f"{found[current]} {text}".strip()
            else:
                break
        return found
    return found


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip())


def parameter_rows(skill: Any) -> list[dict[str, Any]]:
    """One row per parameter of ``skill``: ``name``, ``type``, ``required``, ``default``
    (``None``: none) and ``description`` (the schema's, else the docstring's)."""
    schema = skill.parameters or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    documented = docstring_parameters(skill.description or "") if skill.kind == "code" else {}
    rows = []
    for name, spec in properties.items():
        kind = spec.get("type", "")
        rows.append({
            "name": name, "type": " or ".join(kind) if isinstance(kind, list) else kind,
            "required": name in required, "default": spec.get("default"),
            "has_default": "default" in spec,
            "description": spec.get("description") or documented.get(name, ""),
        })
    return rows
