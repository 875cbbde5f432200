"""A skill's *phrase*: what it does and what it needs, in plain words, as one more index entry.

A learned skill's ``when`` is a description built from its steps
(:mod:`skill_library.induction.describe`): the acting steps' declared descriptions, the
lookups that come first (``(after: find colleague)``), conditions, and its inputs (``Needs
the body, the name and the subject.``). That text tells look-alikes apart, but its scaffolding
(tool names of lookups, condition sentences) is noise to the embedder when a request is worded
unlike the skill's one trace. The phrase keeps only the action and the inputs:

    "Send a message to a colleague's email: the body, the name and the subject"

It is read from the ``when`` alone (a pure function of the text), so every place that must find
the embedded forms of a skill's texts (delete, forget, redaction:
:func:`skill_library.text_vectors.embedded_forms`) computes it from the stored ``when``, and no
phrase is ever stored as a record. A ``when`` that is not such a description (written by a
person, with no inputs sentence and no lookups) has no phrase: its own entry says it already.

The entry's id is ``<name>~phrase`` (:func:`key`); fetch reads it as the kind ``phrase``.
"""

from __future__ import annotations

import re

#: the id suffix of a skill's phrase entry in the vector index
KEY_SUFFIX = "~phrase"
#: the sentence of a description that names the inputs (induction.describe)
NEEDS = "Needs "
#: a description's lookups, in parentheses after its action (induction.describe)
_AFTER_RE = re.compile(r"\s*\(after:[^)]*\)")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
#: the shortest action a phrase keeps (characters): shorter says nothing of its own
MIN_ACTION_CHARS = 8


def key(name: str) -> str:
    """The index id of ``name``'s phrase entry."""
    return name + KEY_SUFFIX


def is_phrase_key(entry_id: str) -> bool:
    """Whether an index id is a phrase entry's."""
    return entry_id.endswith(KEY_SUFFIX)


def phrase_text(when: str) -> str | None:
    """The phrase of a description ``when`` (see the module doc), or None when it has none.

    >>> phrase_text("Invite one more colleague (email) to an event (after: list events, "
    ...             "find colleague). Needs the date, the name and the title.")
    'Invite one more colleague (email) to an event: the date, the name and the title'
    >>> phrase_text("cancel a pending order") is None
    True
    """
    text = " ".join(when.split())
    if not text:
        return None
    parts = _SENTENCE_RE.split(text)
    needs = next((p for p in parts if p.startswith(NEEDS)), None)
    action = _AFTER_RE.sub("", parts[0]).strip().rstrip(".").strip()
    if needs is None and action == parts[0].strip().rstrip(".").strip():
        return None  # not a description: no inputs sentence, no lookups to leave out
    if len(action) < MIN_ACTION_CHARS or action.startswith(NEEDS):
        return None
    inputs = needs[len(NEEDS):].strip().rstrip(".").strip() if needs else ""
    phrase = f"{action}: {inputs}" if inputs else action
    return phrase if phrase != text else None
