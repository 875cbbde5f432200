"""Drift on synthetic streams (issue 11): false positives on a stable noisy stream, detection
delay on a swap of the most likely next state, emerging promoted only after enough evidence.

The streams, seeds and measures are benchmarks/drift_rates.py's; the defaults were tuned on its
``TUNE_*`` seeds and are measured here on (a slice of) its ``HELD_OUT_*`` seeds. The figures are
printed (pytest -s); docs/procedures.md's come from ``python -m benchmarks.drift_rates`` (all held-out
seeds).
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter

from benchmarks.drift_rates import (
    HELD_OUT_STABLE,
    HELD_OUT_SWAP,
    MAX_DELAY,
    NEW,
    OLD,
    WINDOWS,
    delay,
    false_positives,
    measure,
    stable_stream,
    stream,
    swap_stream,
)
from skill_library.patterns import PROMOTE_MIN_N
from skill_library.patterns.drift import (
    DRIFT_HISTORY,
    DRIFT_MIN_LEAD,
    DRIFT_RECENT,
    DRIFT_THRESHOLD,
    detect,
    swap_evidence,
    winner,
)

#: held-out stable streams and swaps the rates are measured on here (the benchmark uses all)
RATE_STREAMS = 20
RATE_SWAPS = 200
#: bounds the measured rates must keep: at most this share of stable windows flagged, ...
MAX_FP_RATE = 0.0005
#: ... and at least this share of swaps detected within MAX_DELAY sessions. Not 1.0: at this
#: stream no rule with (about) no false positive in 1,000 windows detects every swap within 20
#: sessions (docs/procedures.md#usage-patterns-drift-and-quarantine); the default setting detects about 90%.
MIN_WITHIN = 0.8


def flagged(states) -> bool:
    return detect(states).detected


def test_no_drift_over_1000_stable_windows():
    states = stable_stream(HELD_OUT_STABLE[0])
    n = false_positives(states, flagged)
    print(f"\nfalse positives: {n} of {WINDOWS} stable windows ({n / WINDOWS:.3%})")
    assert n == 0


def test_a_swap_is_detected_within_20_sessions():
    before, after = swap_stream(HELD_OUT_SWAP[0])
    sessions = delay(before, after, flagged)
    print(f"\nswap detected after {sessions} sessions")
    assert sessions is not None and sessions <= MAX_DELAY
    found = detect(before + after[:sessions])
    assert (found.old_top, found.new_top) == ("review", "export")
    assert found.lead >= DRIFT_MIN_LEAD and found.evidence > DRIFT_THRESHOLD and found.divergence > 0
    assert 0 < found.change_n <= DRIFT_RECENT
    assert found.stable["review"] > 0.5 and found.emerging["export"] > found.emerging["review"]


def test_rates_on_held_out_seeds():
    """The false-positive rate over 20 x 1,000 stable windows and the delays of 200 swaps."""
    rates = measure(HELD_OUT_STABLE[:RATE_STREAMS], HELD_OUT_SWAP[:RATE_SWAPS])
    print("\n" + rates.line())
    assert rates.windows == RATE_STREAMS * WINDOWS and len(rates.delays) == RATE_SWAPS
    assert rates.fp_rate <= MAX_FP_RATE
    assert rates.within >= MIN_WITHIN * RATE_SWAPS
    assert statistics.median(d if d is not None else 99 for d in rates.delays) <= 17


def test_evidence_is_the_swap_likelihood_ratio():
    history = Counter({"review": 70, "export": 20, "share": 10})
    # add-0.5 smoothing over 3 states: p(review) = 70.5 / 101.5, p(export) = 20.5 / 101.5
    recent = Counter({"export": 10, "review": 5, "share": 3})
    assert math.isclose(swap_evidence(recent, history), 5 * math.log(70.5 / 20.5))
    # the old top still leads: evidence against a change
    assert swap_evidence(Counter({"review": 9, "export": 6, "share": 3}), history) < 0
    # an unseen state: ln(70.5 / 0.5) a transition of lead
    assert math.isclose(swap_evidence(Counter({"new": 8, "review": 5}), history), 3 * math.log(70.5 / 0.5))
    assert swap_evidence(Counter({"review": 3}), Counter()) == 0.0


def test_a_window_drifts_on_a_lead_with_evidence():
    history = Counter({"review": 70, "export": 20, "share": 10})
    won = winner(Counter({"export": 10, "review": 4, "share": 4}), history)
    assert won is not None and (won.state, won.lead) == ("export", DRIFT_MIN_LEAD)
    assert won.evidence > DRIFT_THRESHOLD
    assert winner(Counter({"export": 10, "review": 5, "share": 3}), history) is None  # lead 5
    # between two states of about the same probability a lead is not a change of habit
    near_tie = Counter({"review": 45, "export": 40, "share": 15})
    assert winner(Counter({"export": 13, "review": 5}), near_tie) is None


def test_persistence_asks_for_consecutive_windows():
    states = stream(random.Random(3), DRIFT_HISTORY + DRIFT_RECENT, OLD) + ["export"] * DRIFT_RECENT

    def first(persistence: int) -> int:
        return next(n for n in range(len(states)) if detect(states[:n], persistence=persistence).detected)

    assert first(3) == first(1) + 2


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
