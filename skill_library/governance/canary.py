"""Canary rollout: serve a candidate version to a deterministic share of sessions, watch
its outcomes, roll it back automatically when it is significantly worse.

Routing. A canary of skill ``name`` is one row of the ``canaries`` table
(skill_library.governance.tables: tenant, name, version, share, cohort). A session is in
the canary when its cohort is the canary's named cohort, or when
``bucket(name, session) < share``, where the bucket is the first 8 bytes of
``sha256(name + "\\0" + session)`` read as an integer over 2**64: uniform on [0, 1),
deterministic (a session always gets the same version, in every process), and salted by
the skill's name so one session is not in every canary at once. Everyone else gets the
active version. A version is served as a canary only while its status is ``canary``.

Hot path. ``fetch`` without ``session``/``cohort`` never looks at canaries. With one, the
tenant's canary set is read once per index generation (every write of the table bumps the
generation, which fetch reads anyway) and kept in memory, so a fetch with no canaries
costs no extra round trip.

Stickiness. ``run``, ``feedback`` and ``dispatch`` take ``version=``; without it and with
``session=`` they use the version ``fetch`` returned to that session in this process (kept
for the last :data:`SESSION_MEMO_SIZE` session/skill pairs), else the session's route.

Automatic rollback. After every outcome of a skill with a canary, once the canary has
``Policy.canary_min_outcomes`` outcomes (default :data:`CANARY_MIN_OUTCOMES`), its failures
and successes are compared with the active version's by a one-sided Fisher's exact test
(:mod:`skill_library.governance.significance`); when p < ``Policy.canary_alpha`` (default
:data:`CANARY_ALPHA`) the ``system`` actor moves the canary back to ``approved`` with an
audit event (reason and evidence: the counts, the p-value, the level). The counts are the
versions' own outcome counters (the canary's are all from its rollout; evaluation runs are
not recorded as outcomes). The defaults (skill_library.governance.policy) are 30 outcomes
and alpha = 0.05. The test is repeated at every outcome (sequential looks), which raises
the chance of a false rollback above alpha; that errs on the safe side: a false rollback
only returns the canary to ``approved``, from where it can be tried again (a tenant wanting
fewer can lower ``canary_alpha``).

The canary's row is written by ``workflow.canary`` and removed by the lifecycle when the
version leaves ``canary`` (promoted or rolled back), in the transaction of the transition,
which also bumps the index generation.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal, Sequence

from pydantic import BaseModel, ConfigDict

from skill_library.governance.lifecycle import unit_of
from skill_library.governance.significance import fisher_worse_p
from skill_library.models import Match

if TYPE_CHECKING:
    from skill_library.protocols import Canaried, Tenant

#: how many (session, skill) -> version pairs a library remembers from fetch
SESSION_MEMO_SIZE = 10_000

Decision = Literal["collecting", "healthy", "rollback"]


@dataclass(frozen=True)
class Canary:
    """One running canary (a row of the ``canaries`` table)."""

    name: str
    version: int
    share: float | None
    cohort: str | None
    started_by: str
    started_at: datetime

    def serves(self, name: str, session: str | None, cohort: str | None) -> bool:
        """True when ``session`` (or ``cohort``) gets this canary."""
        if cohort is not None and self.cohort is not None and cohort == self.cohort:
            return True
        return session is not None and self.share is not None and session_bucket(name, session) < self.share


class CanaryState(BaseModel):
    """A canary with the evidence on it: both versions' counts, the test and its decision.

    ``decision``: ``collecting`` (fewer than ``min_outcomes`` canary outcomes), ``healthy``
    (not significantly worse) or ``rollback`` (p-value below ``alpha``).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    version: int
    share: float | None
    cohort: str | None
    active_version: int | None
    canary_successes: int
    canary_failures: int
    active_successes: int
    active_failures: int
    p_value: float
    decision: Decision
    min_outcomes: int
    alpha: float
    started_by: str
    started_at: datetime


def session_bucket(name: str, session: str) -> float:
    """The session's point in [0, 1) for skill ``name`` (sha256; see the module docstring)."""
    digest = hashlib.sha256(f"{name}\0{session}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def aware(value: datetime) -> datetime:
    """``value`` in UTC (SQLite hands timezone-aware columns back naive)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def policy_settings(library: "Canaried") -> tuple[int, float]:
    """(canary_min_outcomes, canary_alpha) from the library's policy, else the defaults."""
    policy = library.policy
    return policy.canary_min_outcomes, policy.canary_alpha


# -- the table (skill_library.governance.tables; written by workflow.canary and lifecycle.apply)
def running(library: "Tenant", generation: int | None = None) -> dict[str, Canary]:
    """The tenant's canaries by skill name, read once per index ``generation`` (default:
    the store's current one)."""
    if generation is None:
        generation = library.context.store.index_generation()
    routes = library.context.routes
    cached = routes.cache
    if cached is not None and cached[0] == generation:
        return cached[1]
    from skill_library.storage.canary_rows import canary_rows

    rows = canary_rows(unit_of(library))
    found = {
        r["name"]: Canary(
            name=r["name"], version=int(r["version"]), share=r["share"], cohort=r["cohort"],
            started_by=r["actor"], started_at=aware(r["started_at"]),
        )
        for r in rows
    }
    routes.cache = (generation, found)
    return found


# -- routing ---------------------------------------------------------------------------
def _memo(library: "Tenant") -> "OrderedDict[tuple[str, str], int]":
    return library.context.routes.sessions


def remember(library: "Tenant", session: str, name: str, version: int) -> None:
    """Remember that ``session`` was given ``version`` of ``name``."""
    memo = _memo(library)
    memo[(session, name)] = version
    memo.move_to_end((session, name))
    while len(memo) > SESSION_MEMO_SIZE:
        memo.popitem(last=False)


def route(library: "Tenant", matches: Sequence[Match], *, session: str | None,
          cohort: str | None, generation: int | None) -> list[Match]:
    """``matches`` with the canary version swapped in for the skills whose canary serves
    this session or cohort (the version must still have status ``canary``)."""
    if session is None and cohort is None:
        return list(matches)
    canaries = running(library, generation)
    if not canaries:
        if session is not None:
            for m in matches:
                if m.skill.kind == "code":
                    remember(library, session, m.skill.name, m.skill.version)
        return list(matches)
    wanted = [
        (m.skill.name, canaries[m.skill.name].version)
        for m in matches
        if m.skill.name in canaries and canaries[m.skill.name].serves(m.skill.name, session, cohort)
    ]
    records = library.context.store.get_many(wanted) if wanted else {}
    out = []
    for m in matches:
        canary = canaries.get(m.skill.name)
        skill = records.get((m.skill.name, canary.version)) if canary is not None else None
        if skill is not None and skill.status == "canary":
            m = m.model_copy(update={"skill": skill})
        if session is not None and m.skill.kind == "code":  # procedures have no versions to pin
            remember(library, session, m.skill.name, m.skill.version)
        out.append(m)
    return out


def session_version(library: "Tenant", name: str, *, session: str | None,
                    cohort: str | None) -> int | None:
    """The version ``session`` should use for ``name``: the one fetch gave it, else its
    route (the canary's version, or None for the active version)."""
    if session is not None:
        remembered = _memo(library).get((session, name))
        if remembered is not None:
            return remembered
    if session is None and cohort is None:
        return None
    canary = running(library).get(name)
    if canary is not None and canary.serves(name, session, cohort):
        return canary.version
    return None


# -- evidence and automatic rollback ---------------------------------------------------
def state(library: "Canaried", canary: Canary) -> CanaryState:
    """The canary's counts, p-value and decision now."""
    min_outcomes, alpha = policy_settings(library)
    candidate = library.context.store.get(canary.name, canary.version)
    active = library.context.store.get(canary.name)
    if active.status != "active" or active.version == candidate.version:
        active_successes = active_failures = 0
        active_version = None
    else:
        active_successes, active_failures = active.successes, active.failures
        active_version = active.version
    p = fisher_worse_p(candidate.failures, candidate.successes, active_failures, active_successes)
    decision: Decision
    if candidate.outcomes < min_outcomes:
        decision = "collecting"
    else:
        decision = "rollback" if p < alpha else "healthy"
    return CanaryState(
        name=canary.name, version=canary.version, share=canary.share, cohort=canary.cohort,
        active_version=active_version, canary_successes=candidate.successes,
        canary_failures=candidate.failures, active_successes=active_successes,
        active_failures=active_failures, p_value=p, decision=decision,
        min_outcomes=min_outcomes, alpha=alpha, started_by=canary.started_by,
        started_at=canary.started_at,
    )


def states(library: "Canaried") -> list[CanaryState]:
    """Every running canary of the tenant with its evidence, by name."""
    return [state(library, c) for _, c in sorted(running(library).items())]


def after_outcome(library: "Canaried", name: str) -> CanaryState | None:
    """Test the canary of ``name`` (if any) after an outcome; roll it back when it is
    significantly worse. Returns its state (None: no canary)."""
    canary = running(library).get(name)
    if canary is None:
        return None
    current = state(library, canary)
    if current.decision == "rollback":
        roll_back(library, current)
    return current


def roll_back(library: "Canaried", current: CanaryState) -> None:
    """The ``system`` actor moves the canary back to ``approved`` (audited); that ends it."""
    from skill_library.errors import LifecycleError
    from skill_library.governance.actors import system_actor
    from skill_library.governance.lifecycle import library_transition

    skill = library.context.store.get(current.name, current.version)
    if skill.status == "canary":
        reason = (
            f"automatic canary rollback: failure rate {current.canary_failures}/"
            f"{current.canary_failures + current.canary_successes} is significantly worse than the "
            f"active version's {current.active_failures}/"
            f"{current.active_failures + current.active_successes} (one-sided Fisher exact test, "
            f"p={current.p_value:.3g} < alpha={current.alpha})"
        )
        evidence = {
            "test": "fisher_exact_one_sided", "p_value": current.p_value, "alpha": current.alpha,
            "min_outcomes": current.min_outcomes, "active_version": current.active_version,
            "canary": {"successes": current.canary_successes, "failures": current.canary_failures},
            "active": {"successes": current.active_successes, "failures": current.active_failures},
        }
        try:  # the transition also ends the canary (its row goes in the same transaction)
            library_transition(library, current.name, current.version, "approved",
                               actor=system_actor(), reason=reason, evidence=evidence)
        except LifecycleError:  # another process rolled it back or promoted it first
            if library.context.store.get(current.name, current.version).status == "canary":
                raise
