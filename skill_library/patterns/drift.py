"""Drift of a usage pattern: has the recent window of next states left the historical one?

Pure functions over a sequence of next states (oldest first), so the same rule runs on the
stored transitions and on synthetic streams. The rule, with its settings named below:

- the *recent* window is the last ``recent`` next states, *history* the ``history`` before it,
  smoothed add-``alpha`` (:data:`DRIFT_SMOOTHING`) over the states seen in either, so a state
  unseen in history has a small probability rather than none;
- each *challenger* ``s`` of the historical top state ``t`` has a *lead* ``n_s - n_t`` in the
  recent window and an *evidence*, the log-likelihood ratio of the recent window under "``s``
  and ``t`` swapped their historical probabilities" against the history, which is
  ``(n_s - n_t) * ln(p_t / p_s)`` (only those two counts differ between the hypotheses);
- a window *drifts* when a challenger leads by at least ``min_lead`` (:data:`DRIFT_MIN_LEAD`)
  with more than ``threshold`` nats (:data:`DRIFT_THRESHOLD`; :func:`winner`): the lead is
  what detects (for a swap it is the likelihood ratio up to a constant), the evidence keeps a
  lead between two states of about the same probability from counting;
- drift is detected when the last ``persistence`` window ends (:data:`DRIFT_PERSISTENCE`)
  drift, with at least :data:`DRIFT_MIN_HISTORY` transitions of history; a detected drift
  always has a changed top;
- ``divergence`` (KL(recent || history), smoothed, in nats) is reported as the size of the
  change, it does not decide; ``change_n`` estimates where the new habit began: the last
  ``change_n`` transitions are the shortest suffix of the recent window in which the winner's
  lead is largest. The library starts the ``emerging`` distribution there, so what is
  promoted later is the new habit's own.

How the defaults were chosen (``python -m benchmarks.drift_rates --tune``): streams of next
states 0.7 / 0.2 / 0.1, and the same with the two most likely swapped, one transition per
session. On *tuning* seeds (1,000 stable streams of 1,000 windows, 2,000 swaps), over windows
16-22, persistence 1-3 and leads 2-10, the setting kept detects the most swaps within 20
sessions while at most 2% of the stable streams see any flag. The evidence threshold was set
beside it on the same seeds: raising it from 2 to 6 nats cost 1 in 100 swap detections and
cut the flagged windows of a near-tied 0.45 / 0.40 / 0.15 habit from 777 to 29 of 50,000.
The figures reported (docs/procedures.md#usage-patterns-drift-and-quarantine,
tests/test_patterns_drift.py) come from other, *held-out*
seeds. No setting has both no flag over 1,000 windows and every swap within 20 sessions at
this stream: a detector told the exact swap and the true probabilities (``--oracle``)
detects 84% of swaps within 20 sessions with no flag over 200 stable streams, 90% with 2% of
them flagged.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

#: transitions in the recent window
DRIFT_RECENT = 18
#: transitions of history the recent window is compared with
DRIFT_HISTORY = 100
#: the challenger's lead over the historical top (transitions of the recent window) from
#: which a window counts as drifting
DRIFT_MIN_LEAD = 6
#: ... with more than this evidence (log-likelihood ratio of the swap, nats): a lead between
#: two states of about the same probability is not a change of habit
DRIFT_THRESHOLD = 6.0
#: add-alpha smoothing of both distributions (a state unseen in history is not impossible)
DRIFT_SMOOTHING = 0.5
#: consecutive drifting window ends needed to flag drift (one noisy window never does)
DRIFT_PERSISTENCE = 1
#: fewer history transitions than this: no verdict (too little to compare with)
DRIFT_MIN_HISTORY = 20


@dataclass(frozen=True)
class Drift:
    """The verdict of :func:`detect`: ``stable`` is the historical distribution and
    ``emerging`` the recent one (state -> probability), each unsmoothed; at the last window
    end, ``lead`` is the largest challenger lead and ``evidence`` the largest swap evidence
    (nats), ``divergence`` the KL of the recent window from history, and ``change_n`` (on
    drift) the transitions since the estimated change."""

    detected: bool
    old_top: str | None
    new_top: str | None
    recent_n: int
    divergence: float
    history_n: int = 0
    stable: dict[str, float] = field(default_factory=dict)
    emerging: dict[str, float] = field(default_factory=dict)
    evidence: float = 0.0
    lead: int = 0
    change_n: int = 0


def _smoothed(counts: Counter[str], states: Sequence[str], alpha: float) -> dict[str, float]:
    total = sum(counts.values()) + alpha * len(states)
    return {s: (counts[s] + alpha) / total for s in states}


def smoothed_kl(recent: Counter[str], history: Counter[str], alpha: float = DRIFT_SMOOTHING) -> float:
    """KL(recent || history) in nats over the union of their states, add-``alpha`` smoothed."""
    states = sorted(set(recent) | set(history))
    if not states:
        return 0.0
    p, q = _smoothed(recent, states, alpha), _smoothed(history, states, alpha)
    return sum(p[s] * math.log(p[s] / q[s]) for s in states)


def swap_evidence(recent: Counter[str], history: Counter[str], alpha: float = DRIFT_SMOOTHING) -> float:
    """Nats of evidence in ``recent`` that a challenger replaced the top state of ``history``:
    the largest, over challengers ``s``, of ``(n_s - n_t) * ln(p_t / p_s)`` with ``t`` the
    historical top and ``p`` the smoothed history (0.0 without a history or a challenger)."""
    return max((c.evidence for c in challengers(recent, history, alpha)), default=0.0)


@dataclass(frozen=True)
class Challenger:
    """A state other than the historical top ``old``: its ``lead`` over ``old`` in the recent
    window (transitions) and the ``evidence`` (nats) of the swap hypothesis."""

    state: str
    lead: int
    evidence: float


def challengers(recent: Counter[str], history: Counter[str], alpha: float = DRIFT_SMOOTHING) -> list[Challenger]:
    """Every challenger of the historical top state, over the states seen in either window."""
    old = top(history)
    if old is None:
        return []
    states = sorted(set(recent) | set(history))
    p = _smoothed(history, states, alpha)
    return [
        Challenger(s, recent[s] - recent[old], (recent[s] - recent[old]) * math.log(p[old] / p[s]))
        for s in states if s != old
    ]


def winner(
    recent: Counter[str], history: Counter[str], *, threshold: float = DRIFT_THRESHOLD,
    min_lead: int = DRIFT_MIN_LEAD, alpha: float = DRIFT_SMOOTHING,
) -> Challenger | None:
    """The challenger that has replaced the historical top in ``recent``, if one has: it leads
    by at least ``min_lead`` with more than ``threshold`` nats of evidence (the largest lead
    among those that do); None otherwise."""
    found = [c for c in challengers(recent, history, alpha) if c.lead >= min_lead and c.evidence > threshold]
    return max(found, key=lambda c: (c.lead, c.evidence)) if found else None


def change_start(window: Sequence[str], old: str, new: str) -> int:
    """How many of the last of ``window`` the ``new`` state's lead over ``old`` is largest in
    (the shortest such suffix; 0 when it never leads)."""
    lead, best, best_n = 0, 0, 0
    for n, state in enumerate(reversed(window), start=1):
        lead += (state == new) - (state == old)
        if lead > best:
            best, best_n = lead, n
    return best_n


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
    min_lead: int = DRIFT_MIN_LEAD,
    alpha: float = DRIFT_SMOOTHING,
    persistence: int = DRIFT_PERSISTENCE,
    min_history: int = DRIFT_MIN_HISTORY,
) -> Drift:
    """Drift of the last ``recent`` of ``states`` (next states, oldest first) from the
    ``history`` before them (rule: module docstring)."""
    if recent < 1 or history < 1 or persistence < 1:
        raise ValueError("recent, history and persistence must be at least 1")
    end = len(states)
    now_recent, now_history = _window(states, end, recent, history)
    found = None
    detected = end >= recent + persistence - 1
    for back in range(persistence):
        if not detected:
            break
        r, h = (now_recent, now_history) if back == 0 else _window(states, end - back, recent, history)
        won = winner(r, h, threshold=threshold, min_lead=min_lead, alpha=alpha)
        found = won if back == 0 else found
        detected = sum(h.values()) >= min_history and won is not None
    old_top = top(now_history)
    return Drift(
        detected=detected,
        old_top=old_top,
        new_top=top(now_recent),
        recent_n=sum(now_recent.values()),
        divergence=smoothed_kl(now_recent, now_history, alpha),
        history_n=sum(now_history.values()),
        stable=_share(now_history),
        emerging=_share(now_recent),
        evidence=swap_evidence(now_recent, now_history, alpha),
        lead=max((c.lead for c in challengers(now_recent, now_history, alpha)), default=0),
        change_n=change_start(states[max(0, end - recent):], old_top, found.state)
        if detected and old_top is not None and found is not None else 0,
    )
