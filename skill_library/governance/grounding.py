"""Side effects grounded in trusted input: a learned skill's state-changing calls do only
what the trusted side (the task text and the params) asked for, never what a tool result
chose. A tool result is data, not an actor: whatever its length, form or encoding, a value
or a choice that only a result supplies for a state-changing call holds the version for a
human, whatever the tenant's policy (skill_library.governance.rules).

A call *changes state* when its tool is declared with side effects, or is undeclared and
its name does not start with a reading verb (:data:`READ_VERBS`: ``get_order``,
``list_orders`` and ``find_user`` are lookups; ``refund`` and ``purge_customers`` are not).

For each state-changing call of a trace:

* **the tool is asked for**: a word of the task or of the params names its action (its
  verb, or a verb of the same class in :data:`VERB_CLASSES`: "wipe" names ``purge_*``), or
  a person approved a version of the same workflow that calls it. A tool the trusted side
  does not ask for is held when an earlier result suggests it (its name, or a verb of its
  class, in a result's text, keys or error); one nothing suggested is the agent's own
  step (as ``gather`` before ``craft``);
* **each argument is grounded** (every scalar inside it, compared in the normal form of
  skill_library.governance.text_forms: NFKC, no zero-width characters, numbers read with
  their separators): it is a param, or a constant the task or params state; or no earlier
  result holds it at all (the agent's own constant, as ``reason="no longer needed"``); or
  it is a field of the result of an earlier *grounded* call (one whose own arguments are
  grounded: a chain of lookups rooted in the params) that
  - is an item of a list in that result (the trusted side's entities, selected), or
  - sits under a key that names the same thing as the argument (``user_id`` for
    ``user_id``, ``id`` for ``order_id``), and not a field that designates something else
    (``related`` for ``order_id``, ``total`` for ``amount``);
* **the target is the one named**: when the trusted side names a value for the argument's
  kind (``order_id='W1001'`` in the params names an order), a state-changing call's
  argument of that kind that only a single result field supplies must be one of the named
  values (a result cannot move the refund to another order).

A value found only in a result's free text, in a dict key, or in a failed call's error is
never grounded. The one exception is declared: the results and errors of a tool named in
``SkillLibrary(trusted_output_tools=...)`` come from a system the operator controls and
carry no third-party text (a game engine's rules), so they state values as the task does.
:func:`ungrounded_calls` lists why, one line per problem, naming the call,
the argument (or the tool) and the result that supplied it.

Work is near-linear in the size of the trace: every result is indexed once by value, by
word and by number (skill_library.induction.dataflow caps the number of calls).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from skill_library.governance.text_forms import (
    as_number,
    as_text,
    contains,
    format_number,
    key_tokens,
    normalize,
    numbers,
    words,
)
from skill_library.models import ToolCall, Trace

#: a tool whose name starts with one of these (and that is not declared with side
#: effects) only reads state
READ_VERBS = frozenset({
    "get", "find", "list", "search", "lookup", "look", "read", "fetch", "query", "check",
    "show", "view", "count", "calculate", "compute", "describe", "summarize", "summarise",
    "validate", "verify", "inspect", "browse", "load", "retrieve", "think", "estimate",
    "preview", "quote", "is", "has", "can",
})
#: verbs that name the same kind of action: a task word of one class asks for a tool whose
#: name holds another; a result word of one class suggests it
VERB_CLASSES: tuple[frozenset[str], ...] = (
    frozenset({"delete", "remove", "purge", "wipe", "erase", "clear", "drop", "destroy",
               "truncate", "reset", "scrub", "expunge"}),
    frozenset({"cancel", "void", "revoke", "abort", "terminate", "annul"}),
    frozenset({"refund", "reimburse", "repay", "compensate", "credit"}),
    frozenset({"pay", "transfer", "wire", "remit", "charge", "withdraw", "deposit"}),
    frozenset({"update", "modify", "change", "edit", "alter", "amend", "rename", "replace"}),
    frozenset({"create", "add", "insert", "book", "reserve", "place", "register", "enroll"}),
    frozenset({"exchange", "swap", "trade"}),
    frozenset({"grant", "promote", "elevate", "authorize", "approve"}),
    frozenset({"email", "mail", "send", "forward", "share", "post", "publish", "notify"}),
)
#: key words that only say "an identifier" (``id`` in ``order_id``): they do not name a kind
GENERIC_KEY_WORDS = frozenset({"id", "ids", "key", "no", "num", "number", "code", "ref", "uid",
                               "uuid", "value", "name"})
#: a reason shows at most this many characters of a value
QUOTE_CHARS = 60


def changes_state(name: str, specs: Mapping[str, Any] | None = None) -> bool:
    """Whether a call of tool ``name`` changes state (see the module docstring); a spec
    is anything with a ``side_effects`` attribute."""
    spec = (specs or {}).get(name)
    if spec is not None:
        return bool(getattr(spec, "side_effects", True))
    tokens = key_tokens(name)
    return not tokens or tokens[0] not in READ_VERBS


def _stem(word: str) -> str:
    """A verb's stem for prefix matching ("delete" -> "delet": deleted, deleting)."""
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def _verbs_of(name: str) -> set[str]:
    """The action words of a tool name with their class: its words found in a verb class
    (else its first word), plus the class's other verbs."""
    tokens = key_tokens(name)
    verbs = {t for t in tokens if any(t in c for c in VERB_CLASSES)} or set(tokens[:1])
    for cls in VERB_CLASSES:
        if verbs & cls:
            verbs |= cls
    return verbs


def _kind(key: str) -> frozenset[str]:
    return frozenset(key_tokens(key)) - GENERIC_KEY_WORDS


def compatible_key(field_key: str | None, arg_key: str) -> bool:
    """Whether a result field under ``field_key`` may name an argument ``arg_key``."""
    if field_key is None:
        return False
    field, arg = _kind(field_key), _kind(arg_key)
    if not field:  # "id": the record's own identifier
        return True
    return bool(field & arg) or not arg


@dataclass(frozen=True)
class _Seen:
    call: int
    where: str  # "field" | "text" | "key" | "error"
    key: str | None = None  # the dict key a field sits under
    in_list: bool = False  # a field inside a list of the result (an item)


class _Index:
    """Every earlier result's scalars, words and numbers, by value (built call by call)."""

    def __init__(self) -> None:
        self.fields: dict[str, list[_Seen]] = defaultdict(list)
        self.field_numbers: dict[float, list[_Seen]] = defaultdict(list)
        self.texts: dict[str, list[tuple[_Seen, str]]] = defaultdict(list)  # first word -> texts
        self.text_numbers: dict[float, list[_Seen]] = defaultdict(list)
        self.first_word: dict[str, int] = {}  # every word of a result -> the first call with it

    def add(self, n: int, call: ToolCall) -> None:
        if call.error is not None:
            self._text(_Seen(n, "error"), normalize(str(call.error)))
        for key, value, in_list, is_key in result_leaves(call.result):
            if is_key:
                self._text(_Seen(n, "key"), normalize(value))
                continue
            text = as_text(value)
            if text is None:
                continue
            seen = _Seen(n, "field", key, in_list)
            self.fields[text].append(seen)
            number = as_number(value)
            if number is not None:
                self.field_numbers[number].append(seen)
            if isinstance(value, str):
                self._text(_Seen(n, "text", key, in_list), text)

    def _text(self, seen: _Seen, text: str) -> None:
        found = words(text)
        for word in set(found):
            self.texts[word].append((seen, text))
            self.first_word.setdefault(word, seen.call)
        for number in numbers(text):
            self.text_numbers[number].append(seen)

    def find(self, text: str, number: float | None, before: int) -> list[_Seen]:
        """Where an argument value (normalized text, its number) occurs in results of calls
        before ``before``: as a whole field, or inside a text, key or error."""
        out = [s for s in self.fields.get(text, ()) if s.call < before]
        if number is not None:
            out += [s for s in self.field_numbers.get(number, ()) if s.call < before and s not in out]
            out += [s for s in self.text_numbers.get(number, ()) if s.call < before]
        found = words(text)
        if found:  # the texts holding its rarest word
            for seen, body in min((self.texts.get(w, []) for w in found), key=len):
                if seen.call < before and body != text and contains(body, text):
                    out.append(seen)
        return out


def result_leaves(value: Any, key: str | None = None, in_list: bool = False,
            depth: int = 0) -> Iterator[tuple[str | None, Any, bool, bool]]:
    """(key, scalar, inside a list, is a dict key) for every scalar and key of a result."""
    if depth > 64:
        return
    if isinstance(value, Mapping):
        for k, item in value.items():
            name = str(k)
            yield name, name, in_list, True
            yield from result_leaves(item, name, in_list, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from result_leaves(item, key, True, depth + 1)
    else:
        yield key, value, in_list, False


def argument_scalars(arguments: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key, scalar) for every scalar of a call's arguments (the innermost dict key)."""
    def walk(key: str, value: Any, depth: int) -> Iterator[tuple[str, Any]]:
        if depth > 64:
            return
        if isinstance(value, Mapping):
            for k, item in value.items():
                yield from walk(str(k), item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from walk(key, item, depth + 1)
        elif as_text(value) is not None:
            yield key, value
    for key, value in arguments.items():
        yield from walk(key, value, 0)


class _Trusted:
    """What the trusted side states: the task text, the params' keys and values, and the
    results of tools declared to have trusted output; indexed by word."""

    def __init__(self, trace: Trace) -> None:
        self.values: set[str] = set()
        self.numbers: set[float] = set()
        self.words: set[str] = set()
        self.by_word: dict[str, list[str]] = defaultdict(list)
        self.named: dict[frozenset[str], set[str]] = defaultdict(set)
        self._asked: dict[str, tuple[int, bool]] = {}
        for key, value in argument_scalars(trace.params):
            text = as_text(value)
            if text is None:
                continue
            self.add_value(value)
            if _kind(key):
                self.named[_kind(key)].add(text)
        self.add_text(normalize(" ".join([trace.task, *trace.params,
                                          *(str(v) for _, v in argument_scalars(trace.params))])))
        for call in trace.calls:  # what the task names by an argument ("refund order W1001")
            for key, value in argument_scalars(call.arguments):
                text = as_text(value)
                if text is not None and _kind(key) and self.states(text, as_number(value)):
                    self.named[_kind(key)].add(text)

    def add_value(self, value: Any) -> None:
        text = as_text(value)
        if text is not None:
            self.values.add(text)
            number = as_number(value)
            if number is not None:
                self.numbers.add(number)

    def add_text(self, text: str) -> None:
        found = set(words(text))
        self.words |= found
        for word in found:
            self.by_word[word].append(text)
        self.numbers |= numbers(text)

    def add_result(self, call: ToolCall) -> None:
        """A result of a tool with trusted output: its text and fields state values."""
        if call.error is not None:
            self.add_text(normalize(str(call.error)))
        for _key, value, _in_list, _is_key in result_leaves(call.result):
            self.add_value(value)
            text = as_text(value)
            if isinstance(value, str) and text:
                self.add_text(text)

    def states(self, text: str, number: float | None) -> bool:
        if text in self.values or (number is not None and number in self.numbers):
            return True
        found = words(text)
        if not found:
            return False
        last = found[-1]
        tails = [t for w in (last, last + "s", last + "es") for t in self.by_word.get(w, ())]
        pools = [self.by_word.get(w, []) for w in found[:-1]] + [tails]
        return any(contains(body, text, plural=True) for body in min(pools, key=len))

    def asks_for(self, tool: str) -> bool:
        known = self._asked.get(tool)
        if known is not None and (known[1] or known[0] == len(self.words)):
            return known[1]
        stems = {_stem(v) for v in _verbs_of(tool)}
        asked = any(w.startswith(s) for w in self.words for s in stems)
        self._asked[tool] = (len(self.words), asked)
        return asked


def ungrounded_calls(trace: Trace, specs: Mapping[str, Any] | None = None,
                     approved_tools: Iterable[str] = (),
                     trusted_tools: Iterable[str] = ()) -> list[str]:
    """Why state-changing calls of ``trace`` are not grounded in the trusted side (empty:
    all are); ``specs`` are the tenant's tool specs, ``approved_tools`` the tools of
    versions of this workflow that a person approved, ``trusted_tools`` the tools whose
    output is declared trusted (their results and errors state values as the task does:
    ``SkillLibrary(trusted_output_tools=...)``)."""
    trusted = _Trusted(trace)
    approved = set(approved_tools)
    trusted_output = frozenset(trusted_tools)
    index = _Index()
    grounded: dict[int, bool] = {}
    suggested: dict[str, int | None] = {}
    reasons: list[str] = []
    for n, call in enumerate(trace.calls):
        if call.kind == "tool" and changes_state(call.name, specs):
            if call.name not in approved and not trusted.asks_for(call.name):
                if call.name not in suggested:
                    suggested[call.name] = _suggestion(call.name, index)
                j = suggested[call.name]
                if j is not None and j < n:
                    reasons.append(f"call {n} ({call.name}) changes state and neither the task nor "
                                   f"its params ask for it; only the result of call {j} "
                                   f"({trace.calls[j].name}) suggests it")
            problems = _argument_problems(trace, n, call, trusted, index, grounded, strict=True)
            reasons += problems
            grounded[n] = not problems and call.ok
        else:
            grounded[n] = call.ok and not _argument_problems(trace, n, call, trusted, index,
                                                             grounded, strict=False)
        if call.name in trusted_output and call.kind == "tool":
            trusted.add_result(call)
        else:
            index.add(n, call)
    return reasons


def _personal_constant(raw: Any) -> bool:
    """Whether a string the agent chose looks like personal data (a full name, an account
    number, an email, a long id): as a constant of a state-changing call it would become the
    target of every future run, and a person's data in the skill's code."""
    from skill_library.privacy import mask_names, scrub_shapes

    return isinstance(raw, str) and (mask_names(raw) != raw or scrub_shapes(raw) != raw)


def _suggestion(tool: str, index: _Index) -> int | None:
    """The first call whose result (text, keys or error) names ``tool`` or its action."""
    verbs = {_stem(v) for v in _verbs_of(tool)}
    whole = normalize(tool.replace("_", " "))
    calls = [c for w, c in index.first_word.items() if any(w.startswith(s) for s in verbs)]
    first = words(whole)
    if first:
        calls += [seen.call for seen, body in index.texts.get(first[0], ())
                  if contains(body, whole) or contains(body, normalize(tool))]
    return min(calls) if calls else None


def _argument_problems(trace: Trace, n: int, call: ToolCall, trusted: _Trusted, index: _Index,
                       grounded: dict[int, bool], *, strict: bool) -> list[str]:
    problems: list[str] = []
    for key, raw in argument_scalars(call.arguments):
        text = as_text(raw)
        if text is None:
            continue
        number = as_number(raw)
        if trusted.states(text, number):
            continue
        seen = index.find(text, number, n)
        if not seen:
            if strict and _personal_constant(raw):
                problems.append(f"argument {key}={_quote(raw)} of call {n} ({call.name}) is a value "
                                "that may identify someone (a name, an account, an email) and neither "
                                "the task nor its params state it: the skill would send it on every run")
            continue  # no result holds it: the agent's own constant
        fields = [s for s in seen if s.where == "field" and grounded.get(s.call, False)]
        if not strict:
            if not fields:
                problems.append("ungrounded")
            continue
        said = f"argument {key}={_quote(raw)} of call {n} ({call.name})"
        fitting = [s for s in fields if s.in_list or compatible_key(s.key, key)]
        if not fitting:
            if fields:
                s = fields[0]
                problems.append(f"{said} takes the field {s.key!r} of the result of call {s.call} "
                                f"({trace.calls[s.call].name}), which designates something other "
                                f"than its {key}; the task and its params do not state it")
            else:
                s = seen[0]
                where = {"field": "a result", "text": "the free text", "key": "a dict key",
                         "error": "the error text"}[s.where]
                whose = " (a call whose own arguments are not grounded)" if s.where == "field" else ""
                problems.append(f"{said} is supplied only by {where} of the result of call "
                                f"{s.call} ({trace.calls[s.call].name}){whose}; the task and its "
                                "params do not state it")
            continue
        named = trusted.named.get(_kind(key)) if _kind(key) else None
        if named and text not in named and not any(s.in_list for s in fitting):
            s = fitting[0]
            problems.append(f"{said} is not the {key} the task names "
                            f"({', '.join(sorted(_quote(v) for v in named))}); only the result of "
                            f"call {s.call} ({trace.calls[s.call].name}) supplies it")
    return problems


def _quote(value: Any) -> str:
    if isinstance(value, float):
        value = format_number(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return repr(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "...")
