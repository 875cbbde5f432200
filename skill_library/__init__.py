"""skill-library: procedural memory for tool-using AI agents.

Verified tool-call traces become parameterized, re-verified Python skills; skills are
stored as versioned records, indexed by their ``when`` text, fetched by similarity and
reliability, and run in a restricted sandbox.
"""

from typing import TYPE_CHECKING, Any

#: where each public name lives: imported on first use, so that importing one submodule
#: (the CLI, errors) pulls in neither pydantic models nor SQLAlchemy, torch or chromadb
_LAZY = {
    **dict.fromkeys(("Calibration", "FetchResult"), "skill_library.abstention"),
    **dict.fromkeys((
        "DestinationNotEmptyError", "EvidenceError", "GeneralizationError", "IndexCorruptError",
        "IndexUnavailableError", "InvalidTenantError", "LibraryNotFoundError", "LifecycleError", "LLMError",
        "LockTimeoutError", "MissingExtraError", "PatternError", "PermissionDenied",
        "RecordsBehindIndexError", "RecordStoreCorruptError", "RecordStoreUnavailableError",
        "RecordStoreURLError", "SchemaVersionError", "SkillLibraryError", "SkillNotFoundError", "SkillPolicyError",
        "SkillUsageError", "SuiteError", "TraceError", "TraceNotFoundError", "WriteLockTimeoutError",
    ), "skill_library.errors"),
    **dict.fromkeys((
        "AddResult", "Condition", "LearnResult", "Match", "Outcome", "OutcomeKind", "Provenance",
        "ScoreBreakdown", "Skill", "SkillRun", "ToolCall", "Trace", "VerificationReport",
    ), "skill_library.models"),
    "SkillLibrary": "skill_library.library",
    **dict.fromkeys(("Plan", "PlanRun", "PlanStep"), "skill_library.planning"),
    **dict.fromkeys(("Actor", "AuditEvent", "Policy", "ToolSpec"), "skill_library.governance"),
}

__all__ = [
    "Actor",
    "AddResult",
    "AuditEvent",
    "Calibration",
    "Condition",
    "DestinationNotEmptyError",
    "EvidenceError",
    "FetchResult",
    "GeneralizationError",
    "IndexCorruptError",
    "IndexUnavailableError",
    "InvalidTenantError",
    "LearnResult",
    "LibraryNotFoundError",
    "LifecycleError",
    "LLMError",
    "LockTimeoutError",
    "Match",
    "MissingExtraError",
    "Outcome",
    "OutcomeKind",
    "PatternError",
    "PermissionDenied",
    "Plan",
    "PlanRun",
    "PlanStep",
    "Policy",
    "Provenance",
    "RecordsBehindIndexError",
    "RecordStoreCorruptError",
    "RecordStoreUnavailableError",
    "RecordStoreURLError",
    "SchemaVersionError",
    "ScoreBreakdown",
    "Skill",
    "SkillLibrary",
    "SkillLibraryError",
    "SkillNotFoundError",
    "SkillPolicyError",
    "SkillRun",
    "SkillUsageError",
    "SuiteError",
    "ToolCall",
    "ToolSpec",
    "Trace",
    "TraceError",
    "TraceNotFoundError",
    "VerificationReport",
    "WriteLockTimeoutError",
]


if TYPE_CHECKING:
    from skill_library.abstention import Calibration, FetchResult
    from skill_library.errors import (
        DestinationNotEmptyError,
        EvidenceError,
        GeneralizationError,
        IndexCorruptError,
        IndexUnavailableError,
        InvalidTenantError,
        LibraryNotFoundError,
        LifecycleError,
        LLMError,
        LockTimeoutError,
        MissingExtraError,
        PatternError,
        PermissionDenied,
        RecordsBehindIndexError,
        RecordStoreCorruptError,
        RecordStoreUnavailableError,
        RecordStoreURLError,
        SchemaVersionError,
        SkillLibraryError,
        SkillNotFoundError,
        SkillPolicyError,
        SkillUsageError,
        SuiteError,
        TraceError,
        TraceNotFoundError,
        WriteLockTimeoutError,
    )
    from skill_library.governance import Actor, AuditEvent, Policy, ToolSpec
    from skill_library.library import SkillLibrary
    from skill_library.models import (
        AddResult,
        Condition,
        LearnResult,
        Match,
        Outcome,
        OutcomeKind,
        Provenance,
        ScoreBreakdown,
        Skill,
        SkillRun,
        ToolCall,
        Trace,
        VerificationReport,
    )
    from skill_library.planning import Plan, PlanRun, PlanStep


def __getattr__(name: str) -> Any:  # lazy: see _LAZY
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'skill_library' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
