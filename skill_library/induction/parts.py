"""Compound traces split into the workflows they combine.

A task such as "exchange the boots of one order, and cancel another order because it is no
longer needed" is two workflows run one after the other. Learned whole, it becomes a one-off
concatenation (``exchange_..._and_cancel_...`` with numbered parameters) that no later
task fits; learned as parts, each part adds evidence to its own workflow's skill, and
:func:`skill_library.planning.plan` composes the skills again for the next compound task.

The method (:func:`split`):

1. the acting calls (not read-only) are grouped by tool, in the order they first run; a
   trace with one group is not compound;
2. each group's *own* values (argument values no other group uses: order ids, reasons) are
   looked for in the task's clauses (sentences, cut at ``;``, ``, and``, `` and then``,
   `` also``, `` then``...), so the splitter does not rely on sentence boundaries alone;
3. the trace splits only when every group has a clause holding its own values and no other
   group's: a task that names one employee for a revoke-and-disable (offboarding) is one
   workflow and stays whole;
4. each part's text is its anchored clauses, the clauses after them up to the next group's
   anchor, and the clauses before the first anchor (who is asking: redacted later like any
   task text); its calls are the group's calls plus the lookups whose results or arguments
   feed them; its params are the group's, numbered names (``order_id_2``) back to plain ones.

Each part is a verified trace of its own (id ``<trace id>/<n>``): the whole run was
verified, and the part's calls are a subset of it whose results are the recorded ones; the
learner replays each part against its own calls before it is kept.

Limits: a task whose parts share every value (one order exchanged and then cancelled) is
not split; a part whose clause names none of its values (items described only by name) is
anchored by the group's other values or not at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from skill_library.models import ToolCall, Trace
from skill_library.privacy import sentences

#: Most parts one trace is split into (more: learned whole).
MAX_PARTS = 8
#: Words that start a new clause inside a sentence.
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|,\s+(?=(?:and|also|then|plus|but|after that|afterwards|additionally|finally|"
    r"lastly|next|for)\b)|(?<!\band)\s+(?=(?:and then|and also|also|then|after that|additionally|"
    r"afterwards|finally|lastly|plus)\s)", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^(.+?)_(\d+)$")


_WORDS_RE = re.compile(r"[a-z]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORDS_RE.findall(text.lower()))


def _tool_words(tool: str, groups: Iterable[str]) -> set[str]:
    """The words of ``tool``'s name that no other group's tool name has."""
    mine = set(re.split(r"[^a-z]+", tool.lower()))
    for other in groups:
        if other != tool:
            mine -= set(re.split(r"[^a-z]+", other.lower()))
    return {w for w in mine if len(w) >= 3}


def _units(text: str, own: dict[str, set[str]]) -> list[str]:
    """The task's sentences; a sentence naming the own values of two or more groups is cut
    into its clauses (so the splitter does not rely on sentence boundaries alone)."""
    out: list[str] = []
    for sentence in sentences(text):
        named = [t for t, vals in own.items() if any(_mentions(sentence, v) for v in vals)]
        out.extend(clauses(sentence) if len(named) > 1 else [sentence])
    return out


def clauses(text: str) -> list[str]:
    """The clauses of ``text``, in order: sentences, cut where a new request starts."""
    out: list[str] = []
    for sentence in sentences(text):
        for clause in _CLAUSE_SPLIT_RE.split(sentence):
            if clause and clause.strip(" ,.;"):
                out.append(clause.strip())
    return out


def _scalars(value: Any, shortest: int = 3) -> Iterable[str]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (str, int, float)):
        text = str(value).strip()
        if len(text) >= shortest:
            yield text
    elif isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item, shortest)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _scalars(item, shortest)


def _result_values(result: Any) -> set[str]:
    found = set(_scalars(result))
    if isinstance(result, str):
        try:
            found |= set(_scalars(json.loads(result)))
        except (ValueError, TypeError):
            pass
    return found


def _is_lookup(call: ToolCall, read_only: frozenset[str]) -> bool:
    from skill_library.induction.description import is_lookup

    return call.kind == "tool" and is_lookup(call.name, read_only)


def _mentions(clause: str, value: str) -> bool:
    return re.search(r"(?<![\w#])" + re.escape(value) + r"(?!\w)", clause, re.IGNORECASE) is not None


def _plain_names(params: dict[str, Any]) -> dict[str, Any]:
    """``order_id_2`` -> ``order_id`` when the plain name is free in the part."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        match = _NUMBERED_RE.match(name)
        plain = match.group(1) if match else name
        if plain in out or plain in params and plain != name:
            plain = name
        out[plain] = value
    return out


def split(trace: Trace, read_only: Iterable[str] = ()) -> list[Trace] | None:
    """The parts of a compound ``trace`` (see the module docstring), or None when it is
    one workflow (or cannot be split safely)."""
    read_only = frozenset(read_only)
    calls = [c for c in trace.calls if c.ok]
    acting = [n for n, c in enumerate(calls) if not _is_lookup(c, read_only)]
    if any(c.kind == "skill" for c in calls):
        return None  # a trace that ran a skill is already composed
    groups: dict[str, list[int]] = {}
    for n in acting:
        groups.setdefault(calls[n].name, []).append(n)
    if not 2 <= len(groups) <= MAX_PARTS:
        return None
    values = {tool: {v for n in ns for v in _scalars(calls[n].arguments)} for tool, ns in groups.items()}
    own = {tool: vals - set().union(*(v for t, v in values.items() if t != tool))
           for tool, vals in values.items()}
    units = _units(trace.task, own)
    owner: dict[int, str] = {}
    for i, unit in enumerate(units):
        found = [t for t in groups if any(_mentions(unit, v) for v in own[t])]
        if len(found) == 1:
            owner[i] = found[0]
    if set(owner.values()) != set(groups):
        return None  # some workflow is not named apart in the task: one workflow
    for i, unit in enumerate(units):  # units naming no own value: by the tools' words
        if i in owner:
            continue
        scores = {t: len(_words(unit) & _tool_words(t, groups)) for t in groups}
        best = max(scores.values())
        if best and list(scores.values()).count(best) == 1:
            owner[i] = max(scores, key=lambda t: scores[t])
    first_anchor = min(owner)
    texts: dict[str, list[int]] = {tool: [] for tool in groups}
    current: str | None = None
    for i in range(len(units)):
        current = owner.get(i, current)
        if current is not None and i >= first_anchor:
            texts[current].append(i)
    header = list(range(first_anchor))
    parts_text = units
    out: list[Trace] = []
    for number, (tool, members) in enumerate(groups.items(), start=1):
        used = {v for n in members for v in _scalars(calls[n].arguments)}
        chosen = set(members)
        # the lookups feeding the group: their results give its arguments, transitively
        for n in range(max(members), -1, -1):
            call = calls[n]
            if n in chosen or not _is_lookup(call, read_only):
                continue
            if _result_values(call.result) & used:
                chosen.add(n)
                used |= set(_scalars(call.arguments))
        part_calls = [calls[n] for n in sorted(chosen)]
        part_values = {v for c in part_calls for v in _scalars(c.arguments, 1)}
        params = {k: v for k, v in trace.params.items() if set(_scalars(v, 1)) & part_values}
        text = " ".join(parts_text[i] for i in [*header, *texts[tool]])
        last = next((c.result for c in reversed(part_calls) if c.kind == "tool"), None)
        out.append(Trace(
            id=f"{trace.id}/{number}", task=text, params=_plain_names(params), calls=part_calls,
            result=last, outcome=trace.outcome, source=trace.source,
        ))
    return out


def whole_id(trace_id: str) -> str:
    """The id of the trace a part came from (the id itself for a whole trace)."""
    head, _, tail = trace_id.rpartition("/")
    return head if head and tail.isdigit() else trace_id
