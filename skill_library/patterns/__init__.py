"""Usage-pattern memory (which state follows which, per subject), drift, and drift-aware
reliability. ``library.patterns`` is a :class:`Patterns`."""

from skill_library.patterns.core import (
    CLASSIFY_MIN_CONFIDENCE,
    CLASSIFY_PRIOR_WEIGHT,
    PREDICT_MIN_N,
    PROMOTE_MIN_N,
    Classified,
    PatternError,
    Patterns,
    Recorded,
    State,
)
from skill_library.patterns.drift import Challenger, Drift, detect, smoothed_kl, swap_evidence, winner

__all__ = [
    "CLASSIFY_MIN_CONFIDENCE",
    "CLASSIFY_PRIOR_WEIGHT",
    "PREDICT_MIN_N",
    "PROMOTE_MIN_N",
    "Challenger",
    "Classified",
    "Drift",
    "PatternError",
    "Patterns",
    "Recorded",
    "State",
    "detect",
    "smoothed_kl",
    "swap_evidence",
    "winner",
]
