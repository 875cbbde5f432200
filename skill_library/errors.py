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


class IndexUnavailableError(SkillLibraryError):
    """The index server cannot be reached (down, restarting, wrong address): nothing was
    written to the index; records already committed stay, and the index is checked
    against them when the server is back."""


class RecordStoreUnavailableError(SkillLibraryError):
    """The record store's database server cannot be reached or refused the connection
    (the transaction in flight was rolled back; nothing committed is lost)."""


class RecordStoreURLError(SkillLibraryError, ValueError):
    """A record store URL that cannot be parsed (``postgresql+psycopg://USER@HOST/DATABASE``
    or ``sqlite:///PATH``); the message says what was wrong."""


class LockTimeoutError(SkillLibraryError, TimeoutError):
    """A lock the library waited for was not free within its timeout: the library's write
    lock (``settings.WRITE_LOCK_TIMEOUT_SECONDS``) or the records database's own lock
    (SQLite's ``database is locked`` after ``settings.SQLITE_BUSY_TIMEOUT_MS``). Nothing
    was written by the call that gave up; it may be retried."""


class WriteLockTimeoutError(LockTimeoutError):
    """Another writer held the library's write lock for longer than the wait allowed."""


class RecordsBehindIndexError(SkillLibraryError):
    """The records are older than the vector index: rebuilding would lose skills."""


class GeneralizationError(SkillLibraryError):
    """A generalizer could not turn a trace into a candidate skill."""


class LLMError(SkillLibraryError):
    """The LLM endpoint could not be reached or answered unusably."""


class LibraryNotFoundError(SkillLibraryError, FileNotFoundError):
    """A folder holds no skill library (and creating one was not asked for)."""

    def __init__(self, path: object, detail: str = "") -> None:
        self.path = path
        self.detail = detail
        super().__init__(str(path))

    def __str__(self) -> str:
        why = f" ({self.detail})" if self.detail else ""
        return (
            f"no skill library in {self.path}{why}: run `skills init --dir {self.path}` "
            "(or pass --create; SkillLibrary(path, create=True) in Python) to make one"
        )


class RecordStoreCorruptError(SkillLibraryError):
    """The records file is not a usable skill-library database (garbage, empty, damaged)."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")

    def __str__(self) -> str:
        return (
            f"the records file {self.path} {self.problem}: restore it from a backup, or move "
            "it away and run `skills init` to start an empty library"
        )


class SchemaVersionError(SkillLibraryError, RuntimeError):
    """The records were written by a newer skill-library (a newer schema version)."""


class TraceNotFoundError(SkillLibraryError, KeyError):
    """No stored trace has the given id."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        super().__init__(trace_id)

    def __str__(self) -> str:
        return f"no trace with id {self.trace_id!r}"


class SkillUsageError(SkillLibraryError, ValueError):
    """A skill was called wrongly: missing tools or arguments that break its schema.

    Not the skill's failure: no outcome is recorded.
    """


class SkillPolicyError(SkillLibraryError, ValueError):
    """A skill's code breaks the sandbox policy (it would fail on every run)."""


class MissingExtraError(SkillLibraryError, ImportError):
    """An optional feature needs an extra that is not installed."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature, self.extra, self.module = feature, extra, module
        super().__init__(f"{feature} needs the '{extra}' extra")

    def __str__(self) -> str:
        return (
            f"{self.feature} needs the optional '{self.extra}' extra ({self.module} is not "
            f"installed): pip install 'skill-library[{self.extra}]'"
        )


def require_extra(module: str, extra: str, feature: str) -> object:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(feature, extra, module) from None


class PermissionDenied(SkillLibraryError, PermissionError):
    """An actor tried a governed write it is not allowed to make (the message names the
    actor and the missing permission, or the rule that refused it)."""


class LifecycleError(SkillLibraryError, ValueError):
    """A lifecycle transition that is not allowed (the message names the skill, the
    version, the status it has and the status asked for)."""


class EvidenceError(SkillLibraryError, ValueError):
    """A success was claimed without the evidence that backs it (``add(verified=True)``
    naming no stored trace a verifier judged a success)."""


class PatternError(SkillLibraryError, ValueError):
    """A usage-pattern call was wrong: an unknown state, a bad state space."""


class SuiteError(SkillLibraryError, ValueError):
    """A suite file cannot be read or does not hold a valid suite."""


class InvalidTenantError(SkillLibraryError, ValueError):
    """A tenant name that is not lowercase letters, digits, ``_`` and ``-``."""


class DestinationNotEmptyError(SkillLibraryError):
    """``skills migrate`` refuses to copy into a record store that already holds skills."""
