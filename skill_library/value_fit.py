"""Value fit: does a task carry values of the shapes a skill's parameters take?

Two skills of one domain often read alike ("cancel my order" looked up by email or by
name and zip; "ship my order to {address}" or "cancel my order"), and what tells them
apart is which *values* the task holds. Each index entry keeps the shapes of the values its
example trace bound (``#W1234567`` -> ``#a``, ``dana.w@example.org`` -> ``a@a``, a zip ->
``99999``, ``credit_card_123`` -> ``a_a_9``; see :func:`shape`), and fetch adjusts the
cosine similarity of the few candidates the index returned:

    score = similarity - FIT_WEIGHT * (1 - fit) - UNEXPLAINED_WEIGHT * unexplained

* ``fit``: the share of the skill's parameters with a distinctive shape (one with a digit or
  a symbol such as ``@ # _``) whose shape occurs in the task;
* ``unexplained``: the share of the task's distinctive value tokens that no parameter shape
  of the skill covers (a task with an email and an order id is no task for a skill that
  takes an order id and a payment method).

Only penalties: a task that fits perfectly keeps its similarity, and so does an entry with
no shapes (one indexed before shapes were kept: ``reindex()`` adds them). Only
the candidates the index returned are scored (fetch's over-fetch: ``max(4k, k + 8)``
texts, more when they do not hold ``k`` skills), never the library, so fetch stays one
index query; the similarity floor and ``Match.similarity``
stay the plain cosine similarity.

Measured on the users suite (``python -m benchmarks users``): see docs/benchmarks.md#benchmarks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

#: Weight of the share of the skill's distinctive parameters whose shape the task holds.
FIT_WEIGHT = 0.2
#: Weight of the share of the task's distinctive values no parameter of the skill takes.
UNEXPLAINED_WEIGHT = 0.2
#: Digit runs at least this long keep their length in a shape (a zip is ``99999``, an
#: item id ``9999999999``); shorter ones are all ``9`` (a street number, a count).
LONG_DIGITS = 5
#: Shapes of one parameter kept per entry (a list parameter's items may differ).
MAX_SHAPES_PER_PARAMETER = 4

# a word: letters and digits, dots inside ("dana.w", "example.org") belong to it
_RUN_RE = re.compile(r"[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*")
_DISTINCTIVE_RE = re.compile(r"[0-9@#_]")
_TOKEN_RE = re.compile(r"[^\s,;:!?()'\"]+")
_EDGE = "a9"  # a shape matches only between whole shape words
_EDGE_PUNCTUATION = ".,;:!?()[]{}'\"<>"  # stripped from a word's ends when counting values


def _run_shape(match: re.Match[str]) -> str:
    run = match.group(0)
    if run.isdigit():
        return "9" * len(run) if len(run) >= LONG_DIGITS else "9"
    return "a"


def shape(text: str) -> str:
    """``text`` with every word as ``a`` and every digit run as ``9`` (``99999`` when long),
    other characters kept: ``#W8660744`` -> ``#a``, ``Apt 12`` -> ``a 9``."""
    return _RUN_RE.sub(_run_shape, text)


def is_distinctive(value_shape: str) -> bool:
    """Whether a shape says something: it has a digit or a symbol (``@``, ``#``, ``_``)."""
    return bool(_DISTINCTIVE_RE.search(value_shape))


def _values(value: Any) -> Iterable[str]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):
            yield str(item)


def param_shapes(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """Parameter name -> the distinctive shapes of its bound value(s); others left out."""
    out: dict[str, list[str]] = {}
    for name, value in params.items():
        shapes = sorted({s for s in (shape(v).strip() for v in _values(value)) if is_distinctive(s)})
        if shapes:
            out[name] = shapes[:MAX_SHAPES_PER_PARAMETER]
    return out


def encode(params: Mapping[str, Any] | None) -> str:
    """The index metadata of an entry whose example bound ``params`` (``""``: none known)."""
    if params is None:
        return ""
    return json.dumps(param_shapes(params), sort_keys=True, separators=(",", ":"))


def encode_many(params: Sequence[Mapping[str, Any]]) -> str:
    """The index metadata of an entry standing for several examples (a prototype): each
    parameter's shapes over all of them, the :data:`MAX_SHAPES_PER_PARAMETER` most common
    (a payment method is ``a_a_9999999`` for a card, ``a_9999999`` for paypal)."""
    counts: dict[str, dict[str, int]] = {}
    for bound in params:
        for name, shapes in param_shapes(bound).items():
            for value_shape in shapes:
                counts.setdefault(name, {})[value_shape] = counts.get(name, {}).get(value_shape, 0) + 1
    merged = {name: sorted(sorted(found, key=lambda s: (-found[s], s))[:MAX_SHAPES_PER_PARAMETER])
              for name, found in counts.items()}
    return json.dumps(merged, sort_keys=True, separators=(",", ":"))


def decode(text: str | None) -> dict[str, list[str]] | None:
    """:func:`encode`'s value back; None when the entry has no shapes."""
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


@dataclass(frozen=True)
class TaskValues:
    """A task's shape and the spans of its distinctive value tokens, computed once a fetch."""

    shaped: str
    spans: tuple[tuple[int, int], ...]
    # encoded shapes -> penalty, for this task (entries of one skill mostly share shapes)
    penalties: dict[str, float] = field(default_factory=dict, compare=False, repr=False)
    #: the shapes of the task's distinct distinctive value tokens (one per distinct value)
    value_shapes: tuple[str, ...] = ()
    #: the task's text (the one-vs-every rule reads its words: skill_library.one_vs_every)
    text: str = field(default="", compare=False, repr=False)

    @classmethod
    def of(cls, task: str) -> "TaskValues":
        shaped = shape(task)
        spans = tuple(m.span() for m in _TOKEN_RE.finditer(shaped) if is_distinctive(m.group(0)))
        # whitespace-separated words less edge punctuation: "10:30," is one value
        distinct = {w.strip(_EDGE_PUNCTUATION) for w in task.split()} - {""}
        value_shapes = tuple(sorted(s for s in (shape(t) for t in distinct) if is_distinctive(s)))
        return cls(shaped, spans, value_shapes=value_shapes, text=task)

    def count(self, shapes: Iterable[str]) -> int:
        """How many distinct values of the task have one of ``shapes`` (a task naming
        ``#W1`` twice and ``#W2`` once holds two values of shape ``#a``)."""
        patterns = [_pattern(s) for s in shapes]
        return sum(1 for v in self.value_shapes if any(p.search(v) for p in patterns))


@lru_cache(maxsize=1024)
def _pattern(value_shape: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![{_EDGE}]){re.escape(value_shape)}(?![{_EDGE}])")


def fit(task: TaskValues, shapes: Mapping[str, Sequence[str]]) -> tuple[float, float]:
    """(fit, unexplained) of ``task`` for an entry with parameter ``shapes``."""
    covered: list[tuple[int, int]] = []
    present = 0
    for options in shapes.values():
        hit = False
        for value_shape in options:
            for m in _pattern(value_shape).finditer(task.shaped):
                covered.append(m.span())
                hit = True
        present += hit
    share = present / len(shapes) if shapes else 1.0
    if not task.spans:
        return share, 0.0
    loose = sum(1 for a, b in task.spans if not any(a < d and c < b for c, d in covered))
    return share, loose / len(task.spans)


class _Hit(Protocol):
    @property
    def similarity(self) -> float: ...
    @property
    def shapes(self) -> str | None: ...


def score(task: TaskValues, hit: _Hit) -> float:
    """The similarity of ``hit`` less its value-fit penalties (none without shapes)."""
    if not hit.shapes:
        return hit.similarity
    penalty = task.penalties.get(hit.shapes)
    if penalty is None:
        shapes = decode(hit.shapes)
        share, loose = fit(task, shapes) if shapes is not None else (1.0, 0.0)
        penalty = task.penalties[hit.shapes] = FIT_WEIGHT * (1.0 - share) + UNEXPLAINED_WEIGHT * loose
    return hit.similarity - penalty
