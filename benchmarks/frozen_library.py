"""A read-only view of a SkillLibrary, for the test phase of a benchmark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_library import Match, Skill, SkillLibrary, SkillRun


class FrozenLibraryError(RuntimeError):
    """Something tried to change a frozen library."""


class FrozenLibrary:
    """Fetches and runs skills from ``library`` but records nothing: no traces, no outcomes,
    no learning. Every write raises :class:`FrozenLibraryError`."""

    frozen = True  # agents may check it (the replay agent's fit="top" uses skills only then)

    def __init__(self, library: "SkillLibrary") -> None:
        self._library = library

    def fetch(self, task: str, k: int = 2, **options: Any) -> list["Match"]:
        return self._library.fetch(task, k, **options)

    def get(self, name: str, version: int | None = None) -> "Skill":
        return self._library.get(name, version)

    def examples(self, name: str) -> list[Any]:
        """The skill's masked example tasks (read-only)."""
        return self._library.examples(name)

    def plan(self, task: str, **options: Any) -> Any:
        """A plan for a compound task (read-only: plan only fetches)."""
        return self._library.plan(task, **options)

    def run(self, name: str, args: Any = None, tools: Any = None, **options: Any) -> "SkillRun":
        options["record"] = False
        return self._library.run(name, args, tools, **options)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise FrozenLibraryError("the library is frozen (benchmark test phase): nothing may change")

    learn = feedback = add = add_many = retire = reindex = _refuse
