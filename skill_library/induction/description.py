"""What a skill is called and how it is described: from its behaviour, never its person.

A skill's *name* comes from what it does: the last acting tool call, the constant objects
it acts on, and how its target is looked up (``cancel_pending_order_by_email``,
``craft_iron_pickaxe``, ``reset_passwords`` when the action runs in a loop). It never
equals the name of a tool (a skill called like a tool would shadow it).

A skill's ``when`` and its *example tasks* are the task texts with the parameter values
masked (``Return {order_id} via {payment_method_id}``). Sentences that bind no argument and
look like persona, mood or chatter are dropped; across several examples, a sentence that
binds no argument is kept only when most examples share it. Personal data left in a kept
sentence (emails, phone and card numbers, long digit runs) is replaced by a neutral word,
so values from a trace that are not part of the workflow reach neither the name nor the
texts that are embedded and shown.
"""

from __future__ import annotations

import json
import keyword
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

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
_LONG_DIGITS_RE = re.compile(r"(?<![\w{])\+?\d[\d \-().]{3,}\d(?![\w}])")
_DIGITS_RE = re.compile(r"(?<![\w{])\d{4,}(?![\w}])")
_PERSONA_RE = re.compile(
    r"\b(i am|i'm|im|my name is|this is|name's|call me|i live|i'm from|i am from|you can reach me"
    r"|my email|my phone|my zip|my address)\b",
    re.IGNORECASE,
)
_CHATTER_WORDS = frozenset(
    """hi hello hey thanks thank cheers patient busy frustrated annoyed happy sorry hope hoping
    appreciate appreciated quick quickly asap rush rushed calm kind kindly polite please""".split()
)
# a sentence ends at . ! ? followed by a space or the end (so "a.b@x.org" stays whole)
_SENTENCE_RE = re.compile(r".+?(?:[.!?]+(?=\s|$)|\n|$)", re.DOTALL)
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

def _value_forms(value: Any) -> list[str]:
    """The ways ``value`` may be written in a task text, longest first."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (int, float)):
        return [str(value)] + ([str(int(value))] if isinstance(value, float) and value.is_integer() else [])
    if isinstance(value, list) and value and all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
    ):
        texts = [str(v) for v in value]
        forms = [", ".join(texts), " and ".join(texts), " ".join(texts)]
        if len(texts) > 2:
            forms.insert(1, ", ".join(texts[:-1]) + " and " + texts[-1])
            forms.insert(2, ", ".join(texts[:-1]) + ", and " + texts[-1])
        return forms
    return []


def mask_values(text: str, bindings: Mapping[str, Any]) -> str:
    """``text`` with each bound value (as whole words) replaced by ``{name}``."""
    spots: dict[str, str] = {}
    for name, value in bindings.items():
        for form in _value_forms(value):
            if form and form not in spots and len(form) >= 1:
                spots[form] = name
        if isinstance(value, list):  # items written apart ("1 and then 2") still mask
            for item in value:
                for form in _value_forms(item):
                    spots.setdefault(form, name)
    if not spots:
        return text
    ordered = sorted(spots, key=len, reverse=True)
    pattern = re.compile("|".join(r"(?<![\w{])" + re.escape(v) + r"(?![\w}])" for v in ordered))
    masked = pattern.sub(lambda m: "{" + spots[m.group(0)] + "}", text)
    # a list written item by item masks to "{x}, {x} and {x}": one placeholder is enough
    return re.sub(r"(\{\w+\})(?:(?:,\s*|\s+and\s+|,\s*and\s+|\s+)\1)+", r"\1", masked)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def scrub(text: str) -> str:
    """Personal data (emails, phone/card numbers, long digit runs) replaced by neutral words."""
    text = _EMAIL_RE.sub("an email address", text)
    text = _LONG_DIGITS_RE.sub(lambda m: "a number" if sum(c.isdigit() for c in m.group(0)) >= 4
                               else m.group(0), text)
    return _DIGITS_RE.sub("a number", text)


def _looks_like_chatter(sentence: str, topic: set[str]) -> bool:
    if _PERSONA_RE.search(sentence) or _EMAIL_RE.search(sentence):
        return True
    words = _words(sentence)
    if not words:
        return True
    content = [w for w in words if w not in _CHATTER_WORDS and len(w) > 2]
    if not content:
        return True
    return not (set(words) & topic) and len(set(words) & _CHATTER_WORDS) > 0


def topic_words(tools: Iterable[str], objects: Iterable[Any] = ()) -> set[str]:
    """Words that say what a skill is about: its tool names' words and constant objects."""
    found: set[str] = set()
    for tool in tools:
        found.update(w for w in _words(tool) if len(w) > 2)
    for value in objects:
        found.update(_object_words(value))
    return found


def _keep(sentence: str, topic: set[str]) -> bool:
    """A sentence that binds an argument stays; one that binds none stays only when it is
    about what the skill does (shares a word with its tools or objects) and is no persona
    or chatter: "Still Ines here." or "My cat knocked the box over." say nothing a skill
    needs, and may name a person."""
    if _PLACEHOLDER_RE.search(sentence):
        return True
    return bool(set(_words(sentence)) & topic) and not _looks_like_chatter(sentence, topic)


def _depersonalize(sentence: str) -> str:
    """A persona sentence that binds arguments, reduced to them: ``Customer: {email}.``"""
    if not _PERSONA_RE.search(sentence):
        return sentence
    holes = list(dict.fromkeys(_PLACEHOLDER_RE.findall(sentence)))
    return "Customer: " + ", ".join(holes) + "." if holes else ""


def masked_example(task: str, bindings: Mapping[str, Any], topic: set[str]) -> str:
    """One example task for the index: values masked, persona and chatter dropped."""
    masked = mask_values(task.strip(), bindings)
    parts = sentences(masked) or [masked]
    kept = [d for d in (_depersonalize(s) for s in parts if _keep(s, topic)) if d]
    if not kept:  # nothing looked like the request: keep the sentence nearest the topic
        kept = [max(parts, key=lambda s: len(set(_words(s)) & topic))]
    return " ".join(scrub(s) for s in kept).strip()


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


def when_from_examples(examples: Sequence[str]) -> str:
    """A ``when`` from masked examples: the first, minus sentences that vary between them.

    A sentence with a placeholder binds an argument and stays; one without stays only when
    at least :data:`SHARED_SENTENCE_SHARE` of the examples have it too.
    """
    if not examples:
        raise ValueError("a when needs at least one example")
    if len(examples) == 1:
        return examples[0]
    counts: dict[str, int] = {}
    for example in examples:
        for key in {_norm(s) for s in sentences(example)}:
            counts[key] = counts.get(key, 0) + 1
    base = max(examples, key=lambda e: len(_PLACEHOLDER_RE.findall(e)))
    kept = [
        s for s in sentences(base)
        if _PLACEHOLDER_RE.search(s) or counts.get(_norm(s), 0) >= SHARED_SENTENCE_SHARE * len(examples)
    ]
    return " ".join(kept) if kept else base


def leaked_values(texts: Iterable[str], values: Iterable[Any]) -> list[str]:
    """Which of ``values`` (strings of 3+ characters, as whole words) occur in ``texts``."""
    joined = "\n".join(texts).casefold()
    leaks = []
    for value in values:
        text = value if isinstance(value, str) else json.dumps(value)
        if len(text) >= 3 and re.search(r"(?<!\w)" + re.escape(text.casefold()) + r"(?!\w)", joined):
            leaks.append(text)
    return leaks
