"""skill-library: procedural memory for tool-using AI agents.

Verified tool-call traces become parameterized, re-verified Python skills; skills are
stored as versioned records, indexed by their ``when`` text, fetched by similarity and
reliability, and run in a restricted sandbox.
"""

from typing import TYPE_CHECKING, Any

from skill_library.errors import (
    GeneralizationError,
    IndexCorruptError,
    IndexUnavailableError,
    LLMError,
    RecordStoreUnavailableError,
    SkillLibraryError,
    SkillNotFoundError,
    TraceError,
)
from skill_library.models import (
    AddResult,
    LearnResult,
    Match,
    Outcome,
    Provenance,
    Skill,
    SkillRun,
    ToolCall,
    Trace,
    VerificationReport,
)

__all__ = [
    "AddResult",
    "GeneralizationError",
    "IndexCorruptError",
    "IndexUnavailableError",
    "LLMError",
    "LearnResult",
    "Match",
    "Outcome",
    "Provenance",
    "RecordStoreUnavailableError",
    "Skill",
    "SkillLibrary",
    "SkillLibraryError",
    "SkillNotFoundError",
    "SkillRun",
    "ToolCall",
    "Trace",
    "TraceError",
    "VerificationReport",
]


if TYPE_CHECKING:
    from skill_library.library import SkillLibrary


def __getattr__(name: str) -> Any:  # lazy: importing models must not pull in torch/chromadb
    if name == "SkillLibrary":
        from skill_library.library import SkillLibrary

        return SkillLibrary
    raise AttributeError(name)
