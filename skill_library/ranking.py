"""Ranking of fetch candidates: similarity first, then reliability, then name."""

from __future__ import annotations

from typing import Iterable, Mapping

from skill_library.models import Match, Skill

# Similarities closer than this are treated as a tie (float noise from the index).
SIMILARITY_TIE = 1e-6


def qualifies(skill: Skill, min_reliability: float) -> bool:
    """True when ``skill`` is active and reliable enough to be fetched."""
    return skill.status == "active" and skill.reliability >= min_reliability


def make_match(skill: Skill, similarity: float) -> Match:
    """A :class:`Match`; ``score`` = similarity x reliability, one number for agents."""
    reliability = skill.reliability
    # the skill is a validated record: constructing without re-validating keeps fetch cheap
    return Match.model_construct(
        skill=skill,
        similarity=similarity,
        reliability=reliability,
        score=similarity * reliability,
    )


def rank(matches: Iterable[Match], scores: Mapping[str, float] | None = None) -> list[Match]:
    """Order by similarity (ties within ``SIMILARITY_TIE``), then reliability, then name.

    ``scores`` (skill name -> score) replace the similarity of the skills they name: fetch
    passes the similarities adjusted by value fit (:mod:`skill_library.value_fit`).
    """
    scores = scores or {}
    return sorted(
        matches,
        key=lambda m: (-round(scores.get(m.skill.name, m.similarity) / SIMILARITY_TIE), -m.reliability, m.skill.name),
    )
