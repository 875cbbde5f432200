"""The forms fetch and the index embed: a task or a ``when`` with its values as shapes.

:func:`value_shape` turns value-shaped tokens into words (``email``, ``date``, ``time``, ``id``,
``number``);
:func:`query_text` is the form of a task that fetch embeds, :func:`index_text` the form of a
``when`` or masked example that the index embeds, :func:`shared_sentences` the filter of
the chatter that varies between a skill's examples. They sit below the record store and the
vector index (which embed with them), so those layers need not import induction;
:mod:`skill_library.induction.description` re-exports them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from skill_library.privacy import sentences

#: an email address
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: an id: ``#W123``, ``user_42``
ID_RE = re.compile(r"(?<![\w@{])(#[A-Za-z]*\d+|[A-Za-z]+_[A-Za-z_]*\d+)(?![\w@}])")
#: a calendar date: ISO ``2026-05-21`` (with an optional ``T13:00`` time), ``21/05/2026``,
#: ``5/21/26``, ``21.05.2026``
DATE_RE = re.compile(
    r"(?<![\w./:-])(?:\d{4}-\d{1,2}-\d{1,2}(?:T\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})(?![\w/:-]|\.\d)"
)
#: a clock time: ``9:30``, ``13:00:15``, ``4:15 pm``
TIME_RE = re.compile(r"(?<![\w.:-])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\b\.?)?(?!\w|:\d)",
                     re.IGNORECASE)
#: a long number (five digits or more)
NUMBER_RE = re.compile(r"(?<![\w{])\d{5,}(?![\w}])")
#: a ``{name}`` placeholder of a ``when``
PLACEHOLDER_RE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORD_RE = re.compile(r"[a-z0-9]+")
#: A sentence that binds no argument stays in a multi-example ``when`` when at least this
#: share of the examples has it.
SHARED_SENTENCE_SHARE = 0.5


def value_shape(text: str) -> str:
    """``text`` with value-shaped tokens as words: emails ``email``, calendar dates ``date``,
    clock times ``time``, ids ``id``, long numbers ``number``. Applied alike to queries and
    to the texts they are compared with, so an order id in a task meets the id an example
    had, whoever the customer was, and "on 2026-05-21 at 13:00" reads as "on date at time"
    (digits are noise to the embedder: a date's tokens drew a query towards any skill whose
    example held numbers)."""
    text = EMAIL_RE.sub("email", text)
    text = DATE_RE.sub("date", text)
    text = TIME_RE.sub("time", text)
    text = ID_RE.sub("id", text)
    return NUMBER_RE.sub("number", text)


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
    return PLACEHOLDER_RE.sub(
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
        kept = [s for s in sentences(text) if PLACEHOLDER_RE.search(s)
                or counts.get(_norm(s), 0) >= SHARED_SENTENCE_SHARE * len(texts)]
        out.append(" ".join(kept) or text)
    return out


def _norm(sentence: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", sentence).encode("ascii", "ignore").decode().lower()
    return " ".join(_WORD_RE.findall(ascii_text))
