"""Traces that look instructed by untrusted content: content from a tool result is never
an actor, so a learned version whose trace obeyed one is held for a human, whatever the
policy.

Rule, for each call of a trace: collect the *free text* of the results of the calls
before it (every string, at any depth, of at least :data:`FREE_TEXT_MIN_WORDS` words). The
call looks instructed when

* its tool name appears as a word in that free text, or
* one of its argument values (a string, or a number, of at least
  :data:`MIN_VALUE_CHARS` characters) appears in that free text as a whole word or phrase,

and the name or value does not appear in the task or the trace's params (what the user
asked for is not an instruction of the tool). A value copied whole from a field of an
earlier result (an id looked up and then used) is dataflow, not instruction, and so is a
value equal to a whole free-text string (the text itself passed on).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from skill_library.models import Trace

#: a string of a tool result is free text when it has at least this many words
FREE_TEXT_MIN_WORDS = 3
#: argument values shorter than this are not matched (digits and letters recur by chance)
MIN_VALUE_CHARS = 3


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _leaves(value: Any) -> Iterator[Any]:
    """Every scalar field of a result, at any depth."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _as_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    return None


def _contains(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as a whole word or phrase (case-insensitive)."""
    pattern = r"(?<![A-Za-z0-9_])" + re.escape(phrase) + r"(?![A-Za-z0-9_])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def instructed_calls(trace: Trace) -> list[str]:
    """Why calls of ``trace`` look instructed by an earlier tool result (empty: none do)."""
    asked = " ".join([trace.task, json.dumps(trace.params, default=str)])
    free: list[tuple[int, str]] = []  # (index of the call whose result holds it, the text)
    fields: set[str] = set()  # scalar result fields, as text
    reasons: list[str] = []
    for n, call in enumerate(trace.calls):
        if call.kind == "tool":
            found = []
            if free and not _contains(asked, call.name):
                found = [i for i, text in free if _contains(text, call.name)]
            if found:
                reasons.append(f"call {n} ({call.name}) is named in the free text of the result "
                               f"of call {found[0]} ({trace.calls[found[0]].name})")
            for key, raw in call.arguments.items():
                value = _as_text(raw)
                if value is None or len(value.strip()) < MIN_VALUE_CHARS or value in fields:
                    continue
                if _contains(asked, value):
                    continue
                hits = [i for i, text in free if text != value and _contains(text, value)]
                if hits:
                    reasons.append(f"argument {key}={_quote(value)} of call {n} ({call.name}) comes "
                                   f"from the free text of the result of call {hits[0]} "
                                   f"({trace.calls[hits[0]].name})")
        for text in _strings(call.result):
            if len(text.split()) >= FREE_TEXT_MIN_WORDS:
                free.append((n, text))
        for leaf in _leaves(call.result):
            field = _as_text(leaf)
            if field is not None:
                fields.add(field)
    return reasons


def _quote(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")
