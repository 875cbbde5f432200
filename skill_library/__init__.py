"""skill-library: procedural memory for tool-using AI agents.

Verified tool-call traces become parameterized, re-verified Python skills; skills are
stored as versioned records, indexed by their ``when`` text, fetched by similarity and
reliability, and run in a restricted sandbox.
"""

from typing import TYPE_CHECKING, Any

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

#: governance names, imported on first use (skill_library.governance)
_GOVERNANCE = ("Actor", "AuditEvent", "Policy", "ToolSpec")

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
    from skill_library.governance import Actor, AuditEvent, Policy, ToolSpec
    from skill_library.library import SkillLibrary
    from skill_library.planning import Plan, PlanRun, PlanStep


def __getattr__(name: str) -> Any:  # lazy: importing models must not pull in torch/chromadb
    if name == "SkillLibrary":
        from skill_library.library import SkillLibrary

        return SkillLibrary
    if name in ("Plan", "PlanRun", "PlanStep"):
        from skill_library import planning

        return getattr(planning, name)
    if name in _GOVERNANCE:
        from skill_library import governance

        return getattr(governance, name)
    raise AttributeError(name)
