"""What the library inferred about a subject, and the subject's controls over it.

The subject never said these things; the library inferred them. ``explain`` lists every
pattern, transition statistic and procedure concerning the subject and what each may
influence (``prefetch``, ``prompt`` or ``nothing``); ``forget`` erases the subject
everywhere: these, and every trace, example and link that names the subject
(:mod:`skill_library.erasure`); ``opt_out`` (on ``library.patterns``) stops recording and
using them. An opt-out outlives ``forget`` (as a salted hash, not the subject's value): it
is the subject's own choice, not something inferred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skill_library.errors import SkillNotFoundError

if TYPE_CHECKING:
    from skill_library.library import SkillLibrary


def explain(library: "SkillLibrary", subject: str) -> dict[str, Any]:
    """Patterns and procedures concerning ``subject``, each with what it may influence."""
    from skill_library.fetching import PREFETCH_MIN_N
    from skill_library.procedures import PROMPT_THRESHOLD

    opted_out = library.patterns.opted_out(subject)
    patterns = []
    for pattern in library.patterns.summary(subject):
        predicted = pattern["predicts"]
        influences = "nothing"
        if not opted_out and predicted is not None and pattern["transitions"] >= PREFETCH_MIN_N:
            try:
                influences = "prefetch" if library.context.store.get(predicted).kind == "code" else "nothing"
            except SkillNotFoundError:
                influences = "nothing"
        patterns.append({**pattern, "influences": influences})
    procedures = []
    for procedure in library.procedures.list(subject=subject):
        active = procedure.status == "active" and procedure.confidence >= PROMPT_THRESHOLD
        procedures.append({
            "name": procedure.name, "version": procedure.version, "title": procedure.title,
            "trigger": procedure.trigger, "description": procedure.description,
            "confidence": procedure.confidence, "status": procedure.status,
            "influences": "prompt" if active and not opted_out else "nothing",
        })
    return {"subject": subject, "opted_out": opted_out, "patterns": patterns, "procedures": procedures}


def forget(library: "SkillLibrary", subject: str) -> dict[str, Any]:
    """Erase ``subject`` everywhere (skill_library.erasure.forget); returns the report as data."""
    from skill_library import erasure

    return erasure.forget(library, subject).as_dict()
