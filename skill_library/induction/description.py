"""What a skill is called and how it is described: from its behaviour, never its person.

A skill's *name* comes from what it does: the last acting tool call, the constant objects
it acts on, and how its target is looked up (``cancel_pending_order_by_email``,
``craft_iron_pickaxe``, ``reset_passwords`` when the action runs in a loop). It never
equals the name of a tool (a skill called like a tool would shadow it).

A skill's ``when`` is written from its steps (:mod:`.describe`) and its example tasks go
through the one masking pass (:func:`skill_library.privacy.redact`). This module re-exports the forms
fetch and the index embed and the sentence filter of multi-example index texts
(:mod:`skill_library.shapes`).
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skill_library.shapes import EMAIL_RE

# the forms fetch and the index embed live in skill_library.shapes (the index layer uses
# them); re-exported here for the callers that import them from this module
from skill_library.shapes import SHARED_SENTENCE_SHARE as SHARED_SENTENCE_SHARE
from skill_library.shapes import index_text as index_text
from skill_library.shapes import query_text as query_text
from skill_library.shapes import shared_sentences as shared_sentences
from skill_library.shapes import value_shape as value_shape

#: Tool names starting with one of these words only read state (a heuristic used for
#: naming; tool declarations, when given, say so explicitly).
LOOKUP_VERBS = frozenset(
    """get find list search lookup look read fetch query check show describe view count
    inventory inspect peek status""".split()
)
#: Longest name a generated skill gets before a look-alike's ``_NN``: OpenAI's tool names (and
#: MCP clients') allow 64 characters, so the counter must fit too.
MAX_NAME_CHARS = 56
#: At most this many words of constant object text go into a name.
MAX_OBJECT_WORDS = 4
#: Argument names whose constant value names the object a call acts on.
OBJECT_ARGUMENTS = frozenset(
    "item block object target product type kind resource category material recipe goal".split()
)

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
    if EMAIL_RE.search(value) or sum(ch.isdigit() for ch in value) >= 2:
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


def _and(phrases: Sequence[Sequence[str]]) -> list[str]:
    """The phrases' words joined by ``and``."""
    words: list[str] = []
    for part in phrases:
        words += (["and"] if words else []) + list(part)
    return words


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
    phrases: list[list[str]] = []
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
        phrases.append(part)
    while len(phrases) > 2 and len("_".join(_and(phrases))) > MAX_NAME_CHARS:
        del phrases[-2]  # a long recipe keeps its first step and what its last one makes
    words = _and(phrases)
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
