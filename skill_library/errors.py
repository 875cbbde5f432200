"""Exceptions raised by the skill library."""

from __future__ import annotations


class SkillLibraryError(Exception):
    """Base class for errors raised by skill_library."""


class SkillNotFoundError(SkillLibraryError, KeyError):
    """No skill (or no such version of a skill) exists under the given name."""

    def __init__(self, name: str, version: int | None = None) -> None:
        self.name = name
        self.version = version
        super().__init__(name)

    def __str__(self) -> str:
        if self.version is None:
            return f"no skill named {self.name!r}"
        return f"skill {self.name!r} has no version {self.version}"


class TraceError(SkillLibraryError, ValueError):
    """A trace is malformed (bad OpenAI transcript, missing fields, ...)."""


class IndexCorruptError(SkillLibraryError):
    """The derived vector index cannot be opened or is out of step with the records."""


class GeneralizationError(SkillLibraryError):
    """A generalizer could not turn a trace into a candidate skill."""


class LLMError(SkillLibraryError):
    """The LLM endpoint could not be reached or answered unusably."""
