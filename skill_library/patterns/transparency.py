"""What the library inferred about a subject, and the subject's controls over it.

The subject never said these things; the library inferred them. ``explain`` lists every
pattern, transition statistic and procedure concerning the subject and what each may
influence (``prefetch``, ``prompt`` or ``nothing``); ``SkillLibrary.forget`` erases the
subject everywhere: these, and every trace, example and link that names the subject
(:mod:`skill_library.erasure`); ``opt_out`` (on ``library.patterns``) stops recording and
using them. An opt-out outlives ``forget`` (as a salted hash, not the subject's value): it
is the subject's own choice, not something inferred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skill_library.errors import SkillNotFoundError

if TYPE_CHECKING:
    from skill_library.patterns import Patterns
    from skill_library.procedures import Procedures
    from skill_library.storage.interface import RecordStore


def explain(store: RecordStore, patterns: Patterns, procedures: Procedures, subject: str) -> dict[str, Any]:
    """Patterns and procedures concerning ``subject``, each with what it may influence
    (``store`` is the tenant's record store, for the predicted skills' kinds)."""
    from skill_library.fetching import PREFETCH_MIN_N
    from skill_library.procedures import PROMPT_THRESHOLD

    opted_out = patterns.opted_out(subject)
    found = []
    for pattern in patterns.summary(subject):
        predicted = pattern["predicts"]
        influences = "nothing"
        if not opted_out and predicted is not None and pattern["transitions"] >= PREFETCH_MIN_N:
            try:
                influences = "prefetch" if store.get(predicted).kind == "code" else "nothing"
            except SkillNotFoundError:
                influences = "nothing"
        found.append({**pattern, "influences": influences})
    listed = []
    for procedure in procedures.list(subject=subject):
        active = procedure.status == "active" and procedure.confidence >= PROMPT_THRESHOLD
        listed.append({
            "name": procedure.name, "version": procedure.version, "title": procedure.title,
            "trigger": procedure.trigger, "description": procedure.description,
            "confidence": procedure.confidence, "status": procedure.status,
            "influences": "prompt" if active and not opted_out else "nothing",
        })
    return {"subject": subject, "opted_out": opted_out, "patterns": found, "procedures": listed}

