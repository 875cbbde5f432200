"""Traces that look instructed by untrusted content: content from a tool result is never
an actor, so a learned version whose trace obeyed one is held for a human, whatever the
policy. This is the second signal; the main rule is that state-changing calls are
grounded in the task and its params (skill_library.governance.grounding).

Rule, for each call of a trace: collect the *free text* of the results of the calls
before it (every string, dict key or failed call's error text, at any depth, of at least
:data:`FREE_TEXT_MIN_WORDS` words), in the normal form of
skill_library.governance.text_forms (NFKC, zero-width characters removed, case folded).
The call looks instructed when

* its tool name (or the name with its underscores read as spaces) appears in that free
  text, or
* one of its argument values (every scalar inside it) appears in that free text as a whole
  word or phrase, or as a number (``amount=5000`` in "refund 5,000 dollars"); values of a
  single character and numbers below :data:`MIN_NUMBER` are not matched (they recur by
  chance),

and the name or value does not appear in the task or the trace's params (what the user
asked for is not an instruction of the tool). A value copied from an earlier result's field
that is an item of a list or sits under a key naming the same thing as the argument (an id
looked up and then used) is dataflow, not instruction, and so is a value equal to a whole
free-text string (the text itself passed on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from skill_library.governance.grounding import argument_scalars, compatible_key, result_leaves
from skill_library.governance.text_forms import (
    as_number,
    as_text,
    contains,
    normalize,
    numbers,
    words,
)
from skill_library.models import Trace

#: a string of a tool result is free text when it has at least this many words
FREE_TEXT_MIN_WORDS = 3
#: argument values shorter than this are not matched (single characters recur by chance)
MIN_VALUE_CHARS = 2
#: numbers below this are not matched in free text (small counts recur by chance)
MIN_NUMBER = 10


class _FreeText:
    """The free text of the results seen so far, indexed by word and by number."""

    def __init__(self) -> None:
        self.by_word: dict[str, list[tuple[int, str]]] = {}
        self.by_number: dict[float, list[int]] = {}
        self.count = 0

    def add(self, n: int, text: str) -> None:
        self.count += 1
        for word in set(words(text)):
            self.by_word.setdefault(word, []).append((n, text))
        for number in numbers(text):
            self.by_number.setdefault(number, []).append(n)

    def holding(self, phrase: str, *, unless: str | None = None) -> list[int]:
        """The calls whose free text holds ``phrase`` as a whole word or phrase (not as
        the whole text ``unless``), in order."""
        found = words(phrase)
        if not found:
            return []
        rarest = min((self.by_word.get(w, []) for w in found), key=len)
        return [n for n, text in rarest if text != unless and contains(text, phrase)]


def instructed_calls(trace: Trace, trusted_tools: Iterable[str] = ()) -> list[str]:
    """Why calls of ``trace`` look instructed by an earlier tool result (empty: none do);
    the results of ``trusted_tools`` (declared with trusted output) are not read."""
    trusted_output = frozenset(trusted_tools)
    asked = normalize(" ".join([trace.task, *map(str, trace.params),
                                *(str(v) for _, v in argument_scalars(trace.params))]))
    asked_numbers = numbers(asked)
    free = _FreeText()
    fields: dict[str, list[tuple[str | None, bool]]] = {}  # field text -> (key, in a list)
    reasons: list[str] = []
    for n, call in enumerate(trace.calls):
        if call.kind == "tool":
            reasons += _call_reasons(trace, n, asked, asked_numbers, free, fields)
        if call.name in trusted_output and call.kind == "tool":
            continue
        texts = [normalize(str(call.error))] if call.error is not None else []
        for key, value, in_list, is_key in result_leaves(call.result):
            text = as_text(value)
            if text is None:
                continue
            if is_key or isinstance(value, str):
                texts.append(text)
            if not is_key:
                fields.setdefault(text, []).append((key, in_list))
        for text in texts:
            if len(text.split()) >= FREE_TEXT_MIN_WORDS:
                free.add(n, text)
    return reasons


def _call_reasons(trace: Trace, n: int, asked: str, asked_numbers: set[float], free: _FreeText,
                  fields: dict[str, list[tuple[str | None, bool]]]) -> list[str]:
    call = trace.calls[n]
    reasons: list[str] = []
    names = {normalize(call.name), normalize(call.name.replace("_", " "))}
    if free.count and not any(contains(asked, name) for name in names):
        found = sorted(i for name in names for i in free.holding(name))
        if found:
            reasons.append(f"call {n} ({call.name}) is named in the free text of the result "
                           f"of call {found[0]} ({trace.calls[found[0]].name})")
    for key, raw in argument_scalars(call.arguments):
        value = as_text(raw)
        if value is None or len(value) < MIN_VALUE_CHARS:
            continue
        number = as_number(raw)
        if contains(asked, value) or (number is not None and number in asked_numbers):
            continue
        if any(in_list or compatible_key(field_key, key) for field_key, in_list in fields.get(value, ())):
            continue  # dataflow: an item, or the field that names this argument
        hits = free.holding(value, unless=value)
        if number is not None and abs(number) >= MIN_NUMBER:
            hits = sorted(set(hits) | set(free.by_number.get(number, [])))
        if hits:
            reasons.append(f"argument {key}={_quote(raw)} of call {n} ({call.name}) comes "
                           f"from the free text of the result of call {hits[0]} "
                           f"({trace.calls[hits[0]].name})")
    return reasons


def _quote(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else str(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")
