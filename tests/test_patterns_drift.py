"""Drift on synthetic streams (issue 11): false positives on a stable noisy stream, detection
delay on a swap of the most likely next state, emerging promoted only after enough evidence.

The figures are printed (pytest -s) and pinned in the README ("Usage patterns").
"""

from __future__ import annotations

import random

from skill_library.patterns import PROMOTE_MIN_N
from skill_library.patterns.drift import DRIFT_HISTORY, DRIFT_RECENT, detect

#: next-state probabilities before and after the swap of the two most likely states
OLD = {"review": 0.7, "export": 0.2, "share": 0.1}
NEW = {"export": 0.7, "review": 0.2, "share": 0.1}
WINDOWS = 1_000
#: the swap must be detected within this many sessions (one transition per session)
MAX_DELAY = 20


def stream(rng: random.Random, n: int, probs: dict[str, float]) -> list[str]:
    return rng.choices(list(probs), list(probs.values()), k=n)


def first_detection(before: list[str], after: list[str]) -> int | None:
    return next((n for n in range(1, len(after) + 1) if detect(before + after[:n]).detected), None)


def test_no_drift_over_1000_stable_windows():
    rng = random.Random(11)
    states = stream(rng, DRIFT_HISTORY + DRIFT_RECENT + WINDOWS, OLD)
    flagged = sum(detect(states[:end]).detected for end in range(len(states) - WINDOWS, len(states)))
    print(f"\nfalse positives: {flagged} of {WINDOWS} stable windows ({flagged / WINDOWS:.3%})")
    assert flagged == 0


def test_a_swap_is_detected_within_20_sessions():
    rng = random.Random(11)
    before = stream(rng, DRIFT_HISTORY + DRIFT_RECENT, OLD)
    after = stream(rng, 40, NEW)
    delay = first_detection(before, after)
    print(f"\nswap detected after {delay} sessions")
    assert delay is not None and delay <= MAX_DELAY
    found = detect(before + after[:delay])
    assert (found.old_top, found.new_top) == ("review", "export")
    assert found.stable["review"] > 0.5 and found.emerging["export"] >= 0.6


def test_rates_over_many_streams():
    """The figures reported: the false-positive rate over 5 x 1,000 windows and the delay
    distribution over 100 swaps (each a different seed)."""
    flagged = 0
    for seed in range(5):
        states = stream(random.Random(1000 + seed), DRIFT_HISTORY + DRIFT_RECENT + WINDOWS, OLD)
        flagged += sum(detect(states[:end]).detected for end in range(len(states) - WINDOWS, len(states)))
    delays = []
    for seed in range(100):
        rng = random.Random(seed)
        delay = first_detection(stream(rng, DRIFT_HISTORY + DRIFT_RECENT, OLD), stream(rng, 40, NEW))
        delays.append(delay if delay is not None else 99)
    delays.sort()
    within = sum(d <= MAX_DELAY for d in delays)
    print(f"\nfalse-positive rate {flagged / (5 * WINDOWS):.4f}; delay median {delays[50]}, "
          f"90th percentile {delays[90]}; {within}/100 within {MAX_DELAY} sessions")
    assert flagged / (5 * WINDOWS) <= 0.001
    assert within >= 80


def test_emerging_is_promoted_only_after_enough_evidence(library):
    patterns = library.patterns
    rng = random.Random(5)
    for n, state in enumerate(stream(rng, DRIFT_HISTORY, OLD)):
        patterns.record_transition("ann", "open", state, session=f"s{n}")
    assert patterns.predict("ann", "open") == "review"
    new = stream(rng, 80, NEW)
    seen_drift_at = None
    promoted_at = None
    for n, state in enumerate(new, start=1):
        patterns.record_transition("ann", "open", state, session=f"t{n}")
        found = patterns.detect_drift("ann", "open")
        if found.detected and seen_drift_at is None:
            seen_drift_at = n
            assert patterns.emerging("ann", "open") and patterns.predict("ann", "open") == "review"
        if promoted_at is None and patterns.predict("ann", "open") == "export":
            promoted_at = n
            assert patterns.emerging("ann", "open") == {}
    assert seen_drift_at is not None and seen_drift_at <= MAX_DELAY
    assert promoted_at is not None
    # stable was kept until the emerging habit had PROMOTE_MIN_N transitions of its own
    assert promoted_at >= PROMOTE_MIN_N > seen_drift_at
    assert patterns.predict("ann", "open") == "export"


def test_a_short_burst_is_not_promoted(library):
    patterns = library.patterns
    rng = random.Random(8)
    for n, state in enumerate(stream(rng, DRIFT_HISTORY, OLD)):
        patterns.record_transition("bo", "open", state, session=f"s{n}")
    for n in range(14):  # a burst of the other state, then back to the habit
        patterns.record_transition("bo", "open", "export", session=f"b{n}")
        patterns.detect_drift("bo", "open")
    for n, state in enumerate(stream(rng, 40, OLD)):
        patterns.record_transition("bo", "open", state, session=f"c{n}")
        patterns.detect_drift("bo", "open")
    assert patterns.predict("bo", "open") == "review"
    assert patterns.emerging("bo", "open") == {}
