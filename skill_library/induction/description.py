"""What a skill is called and how it is described: from its behaviour, never its person.

A skill's *name* comes from what it does: the last acting tool call, the constant objects
it acts on, and how its target is looked up (``cancel_pending_order_by_email``,
``craft_iron_pickaxe``, ``reset_passwords`` when the action runs in a loop). It never
equals the name of a tool (a skill called like a tool would shadow it).

A skill's ``when`` is written from its steps (:mod:`.describe`) and its example tasks go
through the one masking pass (:func:`skill_library.privacy.redact`). This module keeps the
forms fetch and the index embed (:func:`value_shape`, :func:`query_text`,
:func:`index_text`) and the sentence filter of multi-example index texts
(:func:`shared_sentences`).
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skill_library.privacy import sentences

#: Tool names starting with one of these words only read state (a heuristic used for
#: naming; tool declarations, when given, say so explicitly).
LOOKUP_VERBS = frozenset(
    """get find list search lookup look read fetch query check show describe view count
    inventory inspect peek status""".split()
)
#: Longest name a generated skill gets.
MAX_NAME_CHARS = 64
#: At most this many words of constant object text go into a name.
MAX_OBJECT_WORDS = 4
#: Argument names whose constant value names the object a call acts on.
OBJECT_ARGUMENTS = frozenset(
    "item block object target product type kind resource category material recipe goal".split()
)
#: A sentence that binds no argument stays in a multi-example ``when`` when at least this
#: share of the examples has it.
SHARED_SENTENCE_SHARE = 0.5

_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ID_RE = re.compile(r"(?<![\w@{])(#[A-Za-z]*\d+|[A-Za-z]+_[A-Za-z_]*\d+)(?![\w@}])")
_NUMBER_RE = re.compile(r"(?<![\w{])\d{5,}(?![\w}])")
_PLACEHOLDER_RE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORD_RE = re.compile(r"[a-z0-9]+")


# -- names ---------------------------------------------------------------------------------

def is_lookup(tool: str, read_only: Iterable[str] = ()) -> bool:
    """Whether ``tool`` only reads state (declared read-only, or named like a lookup)."""
    if tool in set(read_only):
        return True
    first = tool.lower().split("_", 1)[0]
    return first in LOOKUP_VERBS


def _words(text: str) -> list[str]:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return _WORD_RE.findall(ascii_text)


def _object_words(value: Any) -> list[str]:
    """Words of a constant argument that names an object (``"iron_pickaxe"``), else []."""
    if not isinstance(value, str) or not value or len(value) > 40:
        return []
    if _EMAIL_RE.search(value) or sum(ch.isdigit() for ch in value) >= 2:
        return []  # ids, numbers and addresses are data, not what the skill is about
    words = _words(value)
    if not words or len(words) > MAX_OBJECT_WORDS:
        return []
    return words


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word if word.endswith("s") else word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def behaviour_name(
    calls: Sequence[tuple[str, Mapping[str, Any], bool]],
    *,
    constants: Mapping[int, Mapping[str, Any]] | None = None,
    read_only: Iterable[str] = (),
    taken: Iterable[str] = (),
    whole: Iterable[int] = (),
) -> str:
    """A snake_case name for a skill from its calls: ``(tool, arguments, in_loop)`` each.

    ``constants`` maps a call's position to the arguments that stay constant in the skill
    (only those can name an object: a parameter varies by definition). ``whole`` holds the
    positions of calls passed every element of a looked-up list (all of an order's items,
    not the ones asked for): such an acting call's name says ``all``
    (``return_all_delivered_order_items``). The name is never one of the tool names nor in
    ``taken``.
    """
    if not calls:
        raise ValueError("a skill name needs at least one call")
    read_only = set(read_only)
    tools = [c[0] for c in calls]
    acting = [i for i, c in enumerate(calls) if not is_lookup(c[0], read_only)]
    main = acting[-1] if acting else len(calls) - 1
    shown: list[int] = []
    for i in acting or [main]:
        if shown and calls[shown[-1]][0] == calls[i][0]:
            shown[-1] = i  # the same tool twice in a row: the last says what it is for
            continue
        shown.append(i)
    if len({calls[i][0] for i in shown}) < len(shown):
        shown = shown[-1:]  # a tool comes back: a recipe, named by what its last step makes
    words: list[str] = []
    for i in shown:
        tool, _arguments, looped = calls[i]
        part = _words(tool)
        if i in set(whole) and len(part) > 1 and "all" not in part:
            part.insert(1, "all")
        elif looped and len(part) > 1:
            part.insert(1, "every")
        elif looped:
            part[-1] = _plural(part[-1])
        for key, value in (constants or {}).get(i, {}).items():
            if key.lower() not in OBJECT_ARGUMENTS:
                continue
            obj = _object_words(value)
            if obj and "_".join(obj) not in "_".join(part):
                part += obj
                break
        words += (["and"] if words else []) + part
    first = shown[0] if acting else main
    lookups = [c[0] for i, c in enumerate(calls) if i < first and is_lookup(c[0], read_only)]
    by = next((t for t in lookups if "_by_" in t), None)
    if by is not None and "by" not in words:
        words += ["by"] + _words(by.split("_by_", 1)[1])
    name = _join(words) or "skill"
    forbidden = set(tools) | set(taken) | set(keyword.kwlist) | set(keyword.softkwlist)
    if name in forbidden and lookups:
        name = _join(words + ["after"] + _words(lookups[0]))
    if name in forbidden:
        name = _join(words + ["workflow"])
    base, n = name, 2
    while name in forbidden:
        name, n = f"{base}_{n}", n + 1
    return name


def _join(words: Sequence[str]) -> str:
    name = ""
    for word in words:
        if name and len(name) + 1 + len(word) > MAX_NAME_CHARS:
            break
        name = f"{name}_{word}" if name else word
    name = name[:MAX_NAME_CHARS].strip("_")
    if name and name[0].isdigit():
        name = "do_" + name
    return name


# -- texts ---------------------------------------------------------------------------------

def topic_words(tools: Iterable[str], objects: Iterable[Any] = ()) -> set[str]:
    """Words that say what a skill is about: its tool names' words and constant objects."""
    found: set[str] = set()
    for tool in tools:
        found.update(w for w in _words(tool) if len(w) > 2)
    for value in objects:
        found.update(_object_words(value))
    return found


def value_shape(text: str) -> str:
    """``text`` with value-shaped tokens as words: emails ``email``, ids ``id``, long
    numbers ``number``. Applied alike to queries and to the texts they are compared with, so
    an order id in a task meets the id an example had, whoever the customer was."""
    text = _EMAIL_RE.sub("email", text)
    text = _ID_RE.sub("id", text)
    return _NUMBER_RE.sub("number", text)


def query_text(task: str) -> str:
    """The form of a task that fetch embeds (see :func:`value_shape`)."""
    return value_shape(task)


def _shape_of(name: str, value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    if value is None or isinstance(value, (dict, bool)):
        return name.replace("_", " ")
    raw = str(value)
    shaped = value_shape(raw)
    return shaped if shaped != raw else name.replace("_", " ")


def index_text(text: str, params: Mapping[str, Any] | None = None) -> str:
    """The form of a ``when`` or masked example that is embedded: each ``{name}`` becomes
    what its value looks like to :func:`value_shape` (``id``, ``email``, ``number``) or,
    for other values, the parameter's name in words (never the value itself)."""
    params = params or {}
    return _PLACEHOLDER_RE.sub(
        lambda m: _shape_of(m.group(0)[1:-1], params.get(m.group(0)[1:-1])), text
    )


def shared_sentences(texts: Sequence[str]) -> list[str]:
    """Each text less the sentences that bind no argument and that fewer than
    :data:`SHARED_SENTENCE_SHARE` of the texts have (chatter that varies between examples)."""
    if len(texts) < 2:
        return list(texts)
    counts: dict[str, int] = {}
    for text in texts:
        for key in {_norm(s) for s in sentences(text)}:
            counts[key] = counts.get(key, 0) + 1
    out = []
    for text in texts:
        kept = [s for s in sentences(text) if _PLACEHOLDER_RE.search(s)
                or counts.get(_norm(s), 0) >= SHARED_SENTENCE_SHARE * len(texts)]
        out.append(" ".join(kept) or text)
    return out


def _norm(sentence: str) -> str:
    return " ".join(_words(sentence))
