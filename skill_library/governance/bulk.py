"""Decisions on many versions in one call: approve or promote each, one audited transition
per version, every refusal kept beside the others (``SkillLibrary.approve_many`` /
``promote_many``, ``skills approve NAME... | --held``, ``skills promote NAME...``).

A version is named as ``(name, version)`` or by its name alone: for an approval, the
version of that name waiting for one (the newest evaluated, else the newest draft); for a
promotion, the newest approved (else canary) version. Nothing is all-or-nothing: each
version moves or is refused on its own, as if approved or promoted one by one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from skill_library.errors import SkillLibraryError

if TYPE_CHECKING:
    from skill_library.governance.actors import Actor
    from skill_library.models import Skill
    from skill_library.protocols import Deciding

@dataclasses.dataclass(frozen=True)
class Decision:
    """What became of one version of a bulk call: ``skill`` after the move, or ``error``
    (the one-line reason it was refused; then ``skill`` is None)."""

    name: str
    version: int | None
    skill: "Skill | None" = None
    error: str | None = None

    @property
    def done(self) -> bool:
        """Whether the version moved."""
        return self.error is None


def held(library: "Deciding") -> list[tuple[str, int]]:
    """The evaluated versions waiting for an approval (what learning held), oldest first."""
    return [(s.name, s.version) for s in library.review_queue() if s.status == "evaluated"]


def _pick(library: "Deciding", name: str, statuses: Sequence[str], what: str) -> int:
    """The newest version of ``name`` in the first of ``statuses`` that has one."""
    versions = library.history(name)  # raises SkillNotFoundError for an unknown name
    for status in statuses:
        found = [s.version for s in versions if s.status == status]
        if found:
            return found[-1]
    have = ", ".join(f"v{s.version} {s.status}" for s in versions)
    raise SkillLibraryError(f"skill {name!r} has no version {what} ({have})")


def _each(
    library: "Deciding",
    items: Sequence[str | tuple[str, int]],
    pick: Callable[[str], int],
    move: Callable[[str, int], "Skill"],
) -> list[Decision]:
    out: list[Decision] = []
    for item in items:
        name, version = (item, None) if isinstance(item, str) else item
        try:
            if version is None:
                version = pick(name)
            out.append(Decision(name, version, skill=move(name, version)))
        except (SkillLibraryError, ValueError) as exc:
            out.append(Decision(name, version, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    return out


def approve_many(
    library: "Deciding",
    items: Sequence[str | tuple[str, int]],
    *,
    actor: "Actor | str | None",
    reason: str = "",
) -> list[Decision]:
    """Approve each version (``SkillLibrary.approve`` for each); one :class:`Decision` each,
    in order."""
    return _each(
        library, items,
        lambda name: _pick(library, name, ("evaluated", "draft"), "waiting for approval"),
        lambda name, version: library.approve(name, version, actor=actor, reason=reason),
    )


def promote_many(
    library: "Deciding",
    items: Sequence[str | tuple[str, int]],
    *,
    actor: "Actor | str | None",
) -> list[Decision]:
    """Promote each version (``SkillLibrary.promote`` for each); one :class:`Decision` each,
    in order."""
    return _each(
        library, items,
        lambda name: _pick(library, name, ("approved", "canary"), "approved to promote"),
        lambda name, version: library.promote(name, version, actor=actor),
    )
