"""What a learned skill does, in words: its ``when`` and its docstring, from its steps.

A description is built offline from what the skill's code does, never from one requester's
message: the acting steps in order, each named by its tool's declared description (the
first sentence of a :class:`~skill_library.governance.ToolSpec`'s ``description``; else the
tool's name in words), the loop of a step that acts on every element of a list, the
lookups that come first, and the inputs in prose ("Needs the order id and the item ids").
Two look-alike workflows are told apart by what their tools say (``Return some items of a
delivered order`` vs ``Modify some items of a pending order``), by one-vs-every, and by the
lookups that come first.

No value of a trace reaches a description: parameters are named, constants are named only
when they are object words (``iron pickaxe``), never ids, numbers or addresses.
:func:`description_problems` checks a description someone else wrote (an LLM's reply).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.phrases import NEEDS

if TYPE_CHECKING:
    from skill_library.governance.tools import ToolSpec

#: Longest ``when`` accepted from a generalizer (characters).
MAX_WHEN_CHARS = 400
#: Shortest ``when`` accepted from a generalizer (characters).
MIN_WHEN_CHARS = 12
#: Longest tool summary taken from a declared description (characters).
MAX_SUMMARY_CHARS = 120

_PLACEHOLDER_RE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)\]'\"])[.!?](?=\s|$)")
#: The words a loop's phrase uses (``for every one that ...``, ``for each of ...``, ``all of
#: them at once``); fetch's one-vs-every rule reads a task that holds one as asking for
#: every item (skill_library.one_vs_every).
LOOP_WORDS = ("every", "each", "all")
EVERY, EACH, ALL = LOOP_WORDS
#: Words of parameter names read better spelled out.
_SPELLED = {"id": "id", "ids": "ids", "num": "number", "qty": "quantity", "addr": "address",
            "msg": "message", "amt": "amount", "desc": "description"}


@dataclass(frozen=True)
class ToolDoc:
    """What one tool does, as a description uses it."""

    name: str
    summary: str
    read_only: bool = False


@dataclass(frozen=True)
class Step:
    """One step of a skill, as a description reads it.

    ``loop_over`` says what a looped step runs over: ``"param:<name>"`` (each element of a
    list parameter) or ``"lookup:<tool>"`` (each element a lookup returned); ``constants``
    are the arguments that stay fixed (only object words of them are ever shown).
    """

    tool: str
    loop_over: str | None = None
    constants: Mapping[str, Any] = field(default_factory=dict)
    whole: bool = False  # passed every element of a looked-up list at once


def words_of(name: str) -> list[str]:
    """``cancel_pending_order`` -> ``["cancel", "pending", "order"]`` (camelCase too)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", name) if w]


def first_sentence(text: str) -> str:
    """The first sentence of ``text``, without its end mark, on one line."""
    text = " ".join(text.split())
    if not text:
        return ""
    match = _SENTENCE_END_RE.search(text)
    sentence = text[: match.start()] if match else text
    sentence = re.split(r";|:\s|\s[-–—]\s", sentence, maxsplit=1)[0]  # its first clause
    if len(sentence) > MAX_SUMMARY_CHARS:
        sentence = sentence[:MAX_SUMMARY_CHARS].rsplit(" ", 1)[0]
    return sentence.strip().rstrip(".:;,").strip()


def tool_docs(
    specs: Mapping[str, "ToolSpec"], docstrings: Mapping[str, str] | None = None
) -> dict[str, ToolDoc]:
    """The tools' docs from their declarations (``ToolSpec.description``, else the schema's
    ``description``, else a docstring from ``docstrings``)."""
    docs: dict[str, ToolDoc] = {}
    for name, spec in specs.items():
        text = spec.description or str((spec.schema_ or {}).get("description") or "")
        text = text or (docstrings or {}).get(name, "")
        docs[name] = ToolDoc(name=name, summary=first_sentence(text), read_only=not spec.side_effects)
    for name, text in (docstrings or {}).items():
        docs.setdefault(name, ToolDoc(name=name, summary=first_sentence(text)))
    return docs


def summary(tool: str, docs: Mapping[str, ToolDoc]) -> str:
    """What ``tool`` does, as a clause starting with a capital letter, no end mark."""
    doc = docs.get(tool)
    text = doc.summary if doc and doc.summary else " ".join(words_of(tool))
    return text[:1].upper() + text[1:]


def prose(param: str) -> str:
    """A parameter name read as words: ``payment_method_id`` -> ``the payment method id``."""
    words = [_SPELLED.get(w, w) for w in words_of(param)]
    if words and words[-1].isdigit():  # order_id_2 -> the second order id
        n = int(words.pop())
        ordinal = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}th")
        words.insert(0, ordinal)
    return "the " + " ".join(words) if words else "a value"


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[1].isupper():  # an acronym stays
        return text
    return text[:1].lower() + text[1:]


def object_words(value: Any) -> str:
    """The words of a constant that names an object (``"iron_pickaxe"``), else ``""``."""
    if not isinstance(value, str) or not value or len(value) > 40:
        return ""
    if "@" in value or any(ch.isdigit() for ch in value):
        return ""
    words = words_of(value)
    return " ".join(words) if 0 < len(words) <= 4 else ""


#: Argument names whose constant value names the object a call acts on.
OBJECT_ARGUMENTS = frozenset(
    "item block object target product type kind resource category material recipe goal "
    "system role status state action".split()
)


def _step_phrase(step: Step, docs: Mapping[str, ToolDoc]) -> str:
    phrase = summary(step.tool, docs)
    objects = [w for k, v in step.constants.items()
               if k.lower() in OBJECT_ARGUMENTS and (w := object_words(v))]
    if objects:
        phrase += f" ({', '.join(dict.fromkeys(objects))})"
    if step.whole:
        phrase += f", {ALL} of them at once"
    if step.loop_over:
        kind, _, source = step.loop_over.partition(":")
        if kind == "param":
            phrase += f", for {EACH} of {prose(source)}"
        else:
            phrase += f", for {EVERY} one that {' '.join(words_of(source))} returns"
    return phrase


def describe_steps(
    steps: Sequence[Step],
    params: Sequence[str],
    docs: Mapping[str, ToolDoc],
    *,
    read_only: Iterable[str] = (),
    guard: str | None = None,
) -> str:
    """The ``when`` of a skill with ``steps`` (in order) and required ``params``.

    >>> describe_steps([Step("find_user"), Step("reset_password")], ["email"],
    ...     {"find_user": ToolDoc("find_user", "Find a user by email", True),
    ...      "reset_password": ToolDoc("reset_password", "Reset a user's password")})
    "Reset a user's password (after: find user). Needs the email."
    """
    if not steps:
        raise ValueError("a description needs at least one step")
    from skill_library.induction.description import is_lookup

    declared = set(read_only)

    def looks(tool: str) -> bool:  # declared read-only; undeclared: named like a lookup
        if tool in declared:
            return True
        return docs[tool].read_only if tool in docs else is_lookup(tool)

    lookups = {s.tool for s in steps if looks(s.tool)}
    acting = [s for s in steps if s.tool not in lookups]
    shown: list[Step] = []
    for step in acting or list(steps):
        if shown and shown[-1].tool == step.tool and shown[-1].loop_over == step.loop_over:
            shown[-1] = step  # the same tool twice in a row: the last says what it is for
            continue
        shown.append(step)
    means: list[str] = []
    if len({s.tool for s in shown}) < len(shown):  # a tool comes back: a recipe, named by
        means = list(dict.fromkeys(s.tool for s in shown[:-1]))  # what its last step makes
        shown = shown[-1:]
    phrases = [_step_phrase(s, docs) for s in shown]
    text = phrases[0] + "".join(f"; then {_lower_first(p)}" for p in phrases[1:])
    if acting:
        first = steps.index(acting[0])
        before = list(dict.fromkeys(s.tool for s in steps[:first] if s.tool in lookups))
        before += [t for t in means if t not in before]
        if before:  # lookups (and a recipe's means) by their names: short, and what tells
            text += " (after: " + ", ".join(" ".join(words_of(t)) for t in before) + ")"  # look-alikes apart
    text += "."
    if guard:
        text += f" {guard}"
    if params:
        named = [prose(p) for p in params]
        listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        text += f" {NEEDS}{listed}."
    return text


def with_conditions(when: str, condition_sentence: str) -> str:
    """``when`` with its precondition sentence (``Applies when the order's status is
    delivered.``, from :func:`skill_library.induction.preconditions.sentence`) replaced by
    ``condition_sentence``: put before ``Needs ...``, or at the end; ``""`` removes it."""
    from skill_library.induction.preconditions import SENTENCE_START

    text = re.sub(re.escape(SENTENCE_START) + r"[^.]*\.\s*", "", when).strip()
    if not condition_sentence:
        return text
    at = text.rfind(" " + NEEDS)
    if at < 0:
        return f"{text} {condition_sentence}"
    return f"{text[:at]} {condition_sentence}{text[at:]}"


def docstring(when: str, params: Sequence[tuple[str, str]], tools: Sequence[str]) -> str:
    """A docstring body: the ``when``, each parameter in prose with its type, the tools
    called. No evidence counts: those live in the counters, shown where they are read."""
    lines = [when]
    if params:
        lines += ["", "Args:"]
        for name, kind in params:
            kind = kind.strip().lstrip(":").strip()
            lines.append(f"    {name} ({kind}): {prose(name)}" if kind else f"    {name}: {prose(name)}")
    if tools:
        lines += ["", f"Calls {', '.join(tools)}."]
    return "\n".join(lines)


def description_problems(
    when: str, required: Sequence[str], personal: Iterable[str] = ()
) -> list[str]:
    """Why ``when`` (written by someone else, such as an LLM) cannot describe a skill that
    needs ``required``; ``personal`` are values of the trace it was learned from. Empty:
    it can."""
    problems: list[str] = []
    text = " ".join(when.split())
    if len(text) < MIN_WHEN_CHARS:
        problems.append(f"the description is shorter than {MIN_WHEN_CHARS} characters")
    if len(text) > MAX_WHEN_CHARS:
        problems.append(f"the description is longer than {MAX_WHEN_CHARS} characters")
    if _PLACEHOLDER_RE.search(text):
        problems.append("the description has {placeholders}: name each input in words")
    folded = text.casefold()
    for value in personal:
        value = str(value).strip()
        if len(value) >= 3 and re.search(r"(?<!\w)" + re.escape(value.casefold()) + r"(?!\w)", folded):
            problems.append(f"the description holds a value of the trace ({len(value)} characters)")
            break
    from skill_library.privacy import shape_problems

    problems += shape_problems(text)
    said = set(words_of(text))
    for name in required:
        if not set(words_of(name)) - {"id", "ids"} <= said and not set(words_of(name)) <= said:
            problems.append(f"the description does not mention the input {name!r} ({prose(name)})")
    return problems
