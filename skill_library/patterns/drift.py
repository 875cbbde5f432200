"""Drift of a usage pattern: has the recent window of next states left the historical one?

Pure functions over a sequence of next states (oldest first), so the same rule runs on the
stored transitions and on synthetic streams. The rule, with its settings named below:

- the *recent* window is the last ``recent`` next states, *history* the ``history`` before it;
- both become distributions over the states seen in either, add-``alpha`` smoothed
  (:data:`DRIFT_SMOOTHING`), and the divergence is KL(recent || history) in nats;
- drift is detected only when the divergence is above ``threshold`` and the most likely
  recent state differs from the historical one, at each of the last ``persistence`` window
  ends (:data:`DRIFT_PERSISTENCE`), and that recent top holds at least
  :data:`DRIFT_MIN_TOP_SHARE` of its window: one noisy window never flags drift.

The defaults were chosen on synthetic streams (tests/test_patterns_drift.py): a stable
noisy stream (0.7 / 0.2 / 0.1) over 1,000 windows and a swap of the two most likely states.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

#: transitions in the recent window
DRIFT_RECENT = 20
#: transitions of history the recent window is compared with
DRIFT_HISTORY = 100
#: KL(recent || history), in nats, above which a window counts as diverging
DRIFT_THRESHOLD = 0.2
#: add-alpha smoothing of both distributions (a state unseen in history is not infinite)
DRIFT_SMOOTHING = 0.5
#: consecutive diverging window ends (with a changed top state) needed to flag drift
DRIFT_PERSISTENCE = 2
#: the recent window's top state must hold at least this share of it (a plurality of a few
#: noisy draws is not a new habit)
DRIFT_MIN_TOP_SHARE = 0.6
#: fewer history transitions than this: no verdict (too little to compare with)
DRIFT_MIN_HISTORY = 20


@dataclass(frozen=True)
class Drift:
    """The verdict of :func:`detect`: ``stable`` is the historical distribution and
    ``emerging`` the recent one (state -> probability), each unsmoothed."""

    detected: bool
    old_top: str | None
    new_top: str | None
    recent_n: int
    divergence: float
    history_n: int = 0
    stable: dict[str, float] = field(default_factory=dict)
    emerging: dict[str, float] = field(default_factory=dict)


def smoothed_kl(recent: Counter[str], history: Counter[str], alpha: float = DRIFT_SMOOTHING) -> float:
    """KL(recent || history) in nats over the union of their states, add-``alpha`` smoothed."""
    states = sorted(set(recent) | set(history))
    if not states:
        return 0.0
    r_total = sum(recent.values()) + alpha * len(states)
    h_total = sum(history.values()) + alpha * len(states)
    total = 0.0
    for state in states:
        p = (recent[state] + alpha) / r_total
        q = (history[state] + alpha) / h_total
        total += p * math.log(p / q)
    return total


def top(counts: Counter[str]) -> str | None:
    """The most frequent state (ties by name), None when there is none."""
    if not counts:
        return None
    return min(counts, key=lambda s: (-counts[s], s))


def _share(counts: Counter[str]) -> dict[str, float]:
    n = sum(counts.values())
    return {s: c / n for s, c in sorted(counts.items())} if n else {}


def _window(states: Sequence[str], end: int, recent: int, history: int) -> tuple[Counter[str], Counter[str]]:
    start = max(0, end - recent)
    return Counter(states[start:end]), Counter(states[max(0, start - history):start])


def detect(
    states: Sequence[str],
    *,
    recent: int = DRIFT_RECENT,
    history: int = DRIFT_HISTORY,
    threshold: float = DRIFT_THRESHOLD,
    alpha: float = DRIFT_SMOOTHING,
    persistence: int = DRIFT_PERSISTENCE,
    min_history: int = DRIFT_MIN_HISTORY,
    min_top_share: float = DRIFT_MIN_TOP_SHARE,
) -> Drift:
    """Drift of the last ``recent`` of ``states`` (next states, oldest first) from the
    ``history`` before them (rule: module docstring)."""
    if recent < 1 or history < 1 or persistence < 1:
        raise ValueError("recent, history and persistence must be at least 1")
    end = len(states)
    now_recent, now_history = _window(states, end, recent, history)
    divergence = smoothed_kl(now_recent, now_history, alpha)
    old_top, new_top = top(now_history), top(now_recent)
    detected = sum(now_history.values()) >= min_history and len(states) >= recent + persistence - 1
    for back in range(persistence):
        if not detected:
            break
        r, h = _window(states, end - back, recent, history)
        detected = (
            sum(h.values()) >= min_history
            and smoothed_kl(r, h, alpha) > threshold
            and top(r) != top(h)
            and r[top(r) or ""] >= min_top_share * sum(r.values())
        )
    return Drift(
        detected=detected,
        old_top=old_top,
        new_top=new_top,
        recent_n=sum(now_recent.values()),
        divergence=divergence,
        history_n=sum(now_history.values()),
        stable=_share(now_history),
        emerging=_share(now_recent),
    )
