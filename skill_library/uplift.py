"""Uplift, measured with a holdout arm (issue 26 item 1): does the agent do better *with* a
skill than without it? Reliability (how often a skill's run succeeds) cannot say: a skill
whose runs all succeed may still leave the task worse off than the agent's own way.

Opt-in per tenant (:func:`configure`, ``SkillLibrary.configure_uplift``): the tenant names
the share of sessions held out (default :data:`UPLIFT_HOLDOUT_SHARE`, within
[0, :data:`MAX_HOLDOUT_SHARE`]), whether skills with side effects take part (default: no;
a skill with a state-changing tool is measured only when the tenant says so) and,
optionally, which skills. Off (no row) by default: fetch never holds anything back.

Routing. For skill ``name`` a session is in the holdout arm when
``bucket(tenant, name, session) < share``: the first 8 bytes of
``sha256(SALT + tenant + name + session)`` over 2**64, uniform on [0, 1), deterministic in
every process, and salted apart from the canary's bucket (``sha256(name + session)``,
skill_library.governance.canary), so being in a canary says nothing about being held out.

Fetch with ``session=`` (:func:`hold_back`): for every workflow in the result (skills
acting with the same tools are one workflow, as skill_library.abstention groups them), the
best-ranked skill of that workflow decides: when it is held back for this session, it and
its look-alikes leave the result (nothing of that workflow is offered in its place), its
name goes into ``FetchResult.held_back`` and, when it was the top match, the result
abstains with the reason: the agent solves the task its own way.

Outcomes. The top match of the result (before holding back, when the result did not
abstain) is the session's *exposure*: ``served`` or ``held_back``. The caller reports the
session's task outcome with ``SkillLibrary.record_session_outcome(session, outcome,
cost=...)`` in the existing vocabulary (:class:`~skill_library.models.OutcomeKind`; only
success and failure are counted) for either arm alike; it is stored in
``session_outcomes`` (schema 9, one row per session and skill; sessions stored as a digest).

Uplift (:func:`uplift`): success with and without, the difference with a
:data:`UPLIFT_CONFIDENCE` Newcombe hybrid score interval (method 10 of Newcombe 1998,
built from the two arms' Wilson score intervals), n per arm and the mean cost difference
per cost key. With both arms at :data:`UPLIFT_MIN_N` counted outcomes: an upper bound
below 0 is *negative* (the ``system`` actor quarantines the active version, audited with
the evidence: out of fetch for this tenant, waiting for a person's ``lift_quarantine`` or
``retire``), a lower bound above 0 is *positive* (marked once per version by an audit
event). Fewer sessions: the verdict is ``collecting`` and the result says how many more
each arm needs.

Limits: the interval is tested after every outcome (sequential looks), so a skill that
neither helps nor harms is suppressed more often than the nominal 2.5% (about 9% over
3,000 sessions of its workflow in a simulation at the defaults); that errs toward removing
skills that do not help. The exposure memo (which skill a session was served or held back
from) lives in the process that fetched; an outcome from another process names the skills
(``skills=``) and gets their arm from the hash.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

from skill_library.errors import SkillLibraryError
from skill_library.models import Match, OutcomeKind, Skill
from skill_library.storage.uplift_rows import UpliftRows
from skill_library.storage.uplift_rows import delete_outcomes as delete_outcomes

if TYPE_CHECKING:
    from skill_library.abstention import FetchResult
    from skill_library.protocols import HoldingOut

#: the share of sessions held out when a tenant opts in without naming one
UPLIFT_HOLDOUT_SHARE = 0.05
#: the largest share a tenant may hold out (more would cost the served arm too much)
MAX_HOLDOUT_SHARE = 0.5
#: counted outcomes (success or failure) each arm needs before a verdict
UPLIFT_MIN_N = 20
#: the two-sided confidence of the uplift interval
UPLIFT_CONFIDENCE = 0.95
#: the normal quantile of :data:`UPLIFT_CONFIDENCE`
UPLIFT_Z = 1.959963984540054
#: the salt of the holdout bucket (the canary's bucket has none: independent of it)
SALT = "skill-library uplift holdout v1"
#: how many sessions' exposures a library object remembers from fetch
SESSION_MEMO_SIZE = 10_000
#: the cost keys the docs name (any other non-negative number is kept too)
COST_KEYS = ("tool_calls", "tokens", "seconds")
#: the audit "name" of a tenant's uplift setting (not snake_case: no skill has it)
AUDIT_NAME = "@uplift"
#: the ``evidence["mark"]`` of a version marked reliably positive
POSITIVE_MARK = "uplift_positive"

Arm = Literal["served", "held_back"]
Verdict = Literal["off", "collecting", "inconclusive", "negative", "positive"]



@dataclass(frozen=True)
class UpliftSettings:
    """A tenant's holdout: ``share`` of sessions per skill, whether skills with side effects
    take part, and which skills (None: every code skill)."""

    share: float
    side_effects: bool = False
    skills: tuple[str, ...] | None = None

    @property
    def enabled(self) -> bool:
        """Whether any session is held out."""
        return self.share > 0

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        out = asdict(self)
        out["skills"] = list(self.skills) if self.skills is not None else None
        return out


OFF = UpliftSettings(share=0.0)


@dataclass(frozen=True)
class ArmCounts:
    """One arm's counts and mean costs."""

    n: int
    successes: int
    #: outcomes of kinds that are not counted (misuse, not_applicable, wrong_skill)
    other: int
    cost: dict[str, float]

    @property
    def rate(self) -> float | None:
        """Share of counted outcomes that succeeded (None: none yet)."""
        return self.successes / self.n if self.n else None


@dataclass(frozen=True)
class Uplift:
    """The uplift of one version of a skill: success served vs held back (module doc).

    ``difference`` is ``served_rate - held_rate`` with the Newcombe interval
    ``[low, high]``; ``cost`` maps each cost key both arms report to
    ``{"served": mean, "held_back": mean, "difference": served - held_back}``;
    ``needs`` is how many more counted outcomes each arm needs for a verdict."""

    name: str
    version: int | None
    tenant: str
    served: ArmCounts
    held_back: ArmCounts
    difference: float | None
    low: float | None
    high: float | None
    verdict: Verdict
    needs: dict[str, int]
    share: float
    min_n: int = UPLIFT_MIN_N
    confidence: float = UPLIFT_CONFIDENCE
    method: str = "Newcombe hybrid score interval (Wilson score per arm) for a difference of proportions"
    cost: dict[str, dict[str, float]] = field(default_factory=dict)
    marked: bool = False
    suppressed: bool = False

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (arms with their rates)."""
        out = asdict(self)
        out["served"]["rate"] = self.served.rate
        out["held_back"]["rate"] = self.held_back.rate
        return out

    def describe(self) -> str:
        """One line for people."""
        head = f"uplift of {self.name}" + (f" v{self.version}" if self.version is not None else "")
        arms = (f"served {_rate(self.served)}, held back {_rate(self.held_back)}")
        if self.verdict == "off" and not self.served.n and not self.held_back.n:
            return f"{head}: not measured (no holdout for this tenant; configure_uplift to opt in)"
        if self.verdict == "collecting":
            more = []
            if self.needs.get("served"):
                more.append(f"{self.needs['served']} more served")
            if self.needs.get("held_back"):
                sessions = (f", about {math.ceil(self.needs['held_back'] / self.share)} more sessions of its "
                            f"workflow at a {self.share:.0%} holdout" if self.share > 0 else
                            " (the holdout is off: configure_uplift to opt in)")
                more.append(f"{self.needs['held_back']} more held-back{sessions}")
            return (f"{head}: too few sessions ({arms}); needs {' and '.join(more)} "
                    f"(at least {self.min_n} counted outcomes per arm)")
        assert self.difference is not None and self.low is not None and self.high is not None
        line = (f"{head}: {arms}; difference {100 * self.difference:+.1f} points, "
                f"{self.confidence:.0%} CI [{100 * self.low:+.1f}, {100 * self.high:+.1f}] (Newcombe)")
        for key, values in sorted(self.cost.items()):
            line += f"; {key} {values['difference']:+.3g} per session"
        verdicts = {"negative": "reliably negative", "positive": "reliably positive",
                    "inconclusive": "not yet conclusive", "off": "holdout off"}
        line += f": {verdicts[self.verdict]}"
        if self.suppressed:
            line += " (taken out of fetch, waiting for review)"
        elif self.marked:
            line += " (marked)"
        return line


def _rate(arm: ArmCounts) -> str:
    return f"{arm.successes}/{arm.n}" + (f" ({100 * arm.rate:.0f}%)" if arm.rate is not None else "")


# -- statistics --------------------------------------------------------------------------
def wilson(successes: int, n: int, z: float = UPLIFT_Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``(0, 1)`` for ``n == 0``)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(s1: int, n1: int, s2: int, n2: int, z: float = UPLIFT_Z) -> tuple[float, float, float]:
    """``(p1 - p2, low, high)``: Newcombe's hybrid score interval for a difference of two
    independent proportions (his method 10), from each one's Wilson interval."""
    if n1 <= 0 or n2 <= 0:
        raise ValueError("both arms need at least one outcome")
    p1, p2 = s1 / n1, s2 / n2
    l1, u1 = wilson(s1, n1, z)
    l2, u2 = wilson(s2, n2, z)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


# -- settings --------------------------------------------------------------------------
def check_share(share: Any) -> float:
    """``share`` as a float within [0, MAX_HOLDOUT_SHARE]; ValueError in one line otherwise."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
            or not 0.0 <= share <= MAX_HOLDOUT_SHARE:
        raise ValueError(f"holdout share must be a number within [0, {MAX_HOLDOUT_SHARE}] (the share of "
                         f"sessions held out, e.g. {UPLIFT_HOLDOUT_SHARE}; 0 turns it off), got {share!r}")
    return float(share)


def configure(
    library: "HoldingOut", *, share: float = UPLIFT_HOLDOUT_SHARE, side_effects: bool = False,
    skills: Iterable[str] | None = None, actor: Any = None,
) -> UpliftSettings:
    """Store the tenant's holdout (``skill.admin``; audited under :data:`AUDIT_NAME`)."""
    from skill_library.governance.actors import require
    from skill_library.governance.lifecycle import unit_of
    from skill_library.governance.workflow import caller_actor

    share = check_share(share)
    if not isinstance(side_effects, bool):
        raise TypeError(f"side_effects must be a bool, got {type(side_effects).__name__}")
    if isinstance(skills, str):
        raise TypeError("skills must be a collection of skill names, not one string")
    names = tuple(sorted(set(skills))) if skills is not None else None
    who = caller_actor(library, actor)
    require(who, "skill.admin", "change the tenant's uplift holdout")
    new = UpliftSettings(share=share, side_effects=side_effects, skills=names)

    def event(row: "Mapping[str, Any] | None") -> dict[str, Any]:
        old = _settings_of(row)
        return {"name": AUDIT_NAME, "version": None, "from_status": f"{old.share:g}", "to_status": f"{share:g}",
                "reason": "uplift holdout set" if share > 0 else "uplift holdout off",
                "evidence": {"from": old.to_json(), "to": new.to_json()}}

    UpliftRows(unit_of(library)).set_settings(share=share, side_effects=side_effects, skills=names,
                                             actor=who.id, event=event)
    library.context.store.bump_index_generation()  # fetch rereads the setting at the next generation
    _SETTINGS.pop(library, None)
    return new


def _settings_of(row: "Mapping[str, Any] | None") -> UpliftSettings:
    if row is None:
        return OFF
    skills = row["skills"]
    return UpliftSettings(share=float(row["share"]), side_effects=bool(row["side_effects"]),
                          skills=tuple(skills) if skills is not None else None)


_SETTINGS: "weakref.WeakKeyDictionary[Any, tuple[int | None, UpliftSettings]]" = weakref.WeakKeyDictionary()


def settings(library: "HoldingOut", generation: int | None = None) -> UpliftSettings:
    """The tenant's holdout, read once per index ``generation`` (default: the store's)."""
    from skill_library.governance.lifecycle import unit_of

    if generation is None:
        generation = library.context.store.index_generation()
    cached = _SETTINGS.get(library)
    if cached is not None and cached[0] == generation:
        return cached[1]
    found = _settings_of(UpliftRows(unit_of(library)).settings())
    _SETTINGS[library] = (generation, found)
    return found


# -- routing -----------------------------------------------------------------------------
def bucket(tenant: str, name: str, session: str) -> float:
    """The session's point in [0, 1) for skill ``name`` of ``tenant`` (module doc)."""
    digest = hashlib.sha256(f"{SALT}\0{tenant}\0{name}\0{session}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def measured(library: "HoldingOut", skill: Skill, found: UpliftSettings,
             read_only: frozenset[str] | None = None) -> bool:
    """Whether ``skill`` takes part in the tenant's holdout (code skills; with side effects
    only when the tenant says so; only the named skills when it names some). ``read_only``:
    the tenant's read-only tools, when the caller has them already."""
    if not found.enabled or skill.kind != "code":
        return False
    if found.skills is not None and skill.name not in found.skills:
        return False
    if not found.side_effects:
        from skill_library import ranking

        if ranking.acting_tools(skill, library.read_only_tools if read_only is None else read_only):
            return False
    return True


def held(library: "HoldingOut", skill: Skill, session: str, found: UpliftSettings,
         read_only: frozenset[str] | None = None) -> bool:
    """Whether ``session`` is in ``skill``'s holdout arm."""
    return (measured(library, skill, found, read_only)
            and bucket(library.context.tenant, skill.name, session) < found.share)


def workflow_of(skill: Skill) -> tuple[str, ...]:
    """The workflow a skill belongs to: its sorted tools (skill_library.abstention's grouping
    of look-alikes: skills acting with the same tools)."""
    return tuple(sorted(skill.tools or [skill.name]))


_EXPOSURES: "weakref.WeakKeyDictionary[Any, OrderedDict[str, dict[str, tuple[Arm, int]]]]" = \
    weakref.WeakKeyDictionary()


def _memo(library: "HoldingOut") -> "OrderedDict[str, dict[str, tuple[Arm, int]]]":
    memo = _EXPOSURES.get(library)
    if memo is None:
        memo = _EXPOSURES[library] = OrderedDict()
    return memo


def _expose(library: "HoldingOut", session: str, name: str, arm: Arm, version: int) -> None:
    memo = _memo(library)
    memo.setdefault(session, {})[name] = (arm, version)
    memo.move_to_end(session)
    while len(memo) > SESSION_MEMO_SIZE:
        memo.popitem(last=False)


def exposures(library: "HoldingOut", session: str) -> dict[str, tuple[Arm, int]]:
    """The skills this library object served or held back as ``session``'s top match, with
    the arm and version."""
    return dict(_memo(library).get(session, {}))


def hold_back(library: "HoldingOut", result: "FetchResult", session: str,
              generation: int | None = None) -> "FetchResult":
    """``result`` with the workflows held back for ``session`` taken out (module doc)."""
    found = settings(library, generation)
    if not found.enabled or not result:
        return result
    read_only = library.read_only_tools if not found.side_effects else frozenset()
    ranked = [m for m in result if not m.prefetch]
    top = ranked[0] if ranked and not result.abstained else None
    best: dict[tuple[str, ...], Match] = {}
    for m in result:
        best.setdefault(workflow_of(m.skill), m)
    out_workflows = {w: m for w, m in best.items() if held(library, m.skill, session, found, read_only)}
    if top is not None and measured(library, top.skill, found, read_only):
        arm: Arm = "held_back" if workflow_of(top.skill) in out_workflows else "served"
        _expose(library, session, top.skill.name, arm, top.skill.version)
    if not out_workflows:
        return result
    kept = [m for m in result if workflow_of(m.skill) not in out_workflows]
    removed = [m for m in result if workflow_of(m.skill) in out_workflows]
    for m in removed:  # a held-back skill was given to nobody: outside outcomes cannot credit it
        library.context.routes.sessions.pop((session, m.skill.name), None)
    names = [m.skill.name for m in out_workflows.values()]
    alike = sorted({m.skill.name for m in removed} - set(names))
    note = (f"held back for this session to measure uplift: {', '.join(names)}"
            + (f" (and its look-alikes {', '.join(alike)})" if alike else "")
            + ": solve it without a skill of that workflow")
    new = type(result)(kept)
    new.__dict__.update(result.__dict__)
    new.held_back = names
    if ranked and workflow_of(ranked[0].skill) in out_workflows:
        new.abstained = True
        new.ambiguous = False
        new.reason = note
    else:
        new.reason = "; ".join(r for r in (result.reason, note) if r)
    return new


# -- outcomes ----------------------------------------------------------------------------
def session_digest(session: str) -> str:
    """What ``session_outcomes`` stores of a session id."""
    return hashlib.sha256(session.encode("utf-8")).hexdigest()


def _check_cost(cost: Mapping[str, Any] | None) -> dict[str, float] | None:
    if cost is None:
        return None
    if not isinstance(cost, Mapping):
        raise TypeError("cost must be a mapping such as {'tool_calls': 4, 'tokens': 1200, 'seconds': 3.5}")
    out = {}
    for key, value in cost.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"cost keys are names such as {', '.join(COST_KEYS)}; got {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"cost {key!r} must be a non-negative number, got {value!r}")
        out[key] = float(value)
    return out


def record_session_outcome(
    library: "HoldingOut", session: str, outcome: "bool | OutcomeKind | str", *,
    skills: Iterable[str] | None = None, cost: Mapping[str, Any] | None = None, reason: str | None = None,
    origin: str = "feedback",
) -> dict[str, str]:
    """Record ``session``'s task outcome for each skill it was served or held back from;
    returns skill -> arm. Without ``skills``: the ones this library's fetch gave (or held
    back from) the session as its top match; with them: each skill's arm by the hash."""
    from skill_library.governance.lifecycle import unit_of

    if not isinstance(session, str) or not session.strip():
        raise ValueError("session must be a non-empty string (the id fetch was given)")
    if not isinstance(outcome, (bool, str)):
        raise TypeError(f"outcome must be a bool or an OutcomeKind, got {type(outcome).__name__}")
    kind = OutcomeKind.of(outcome)
    spent = _check_cost(cost)
    seen = exposures(library, session)
    targets: dict[str, tuple[Arm, int | None]] = {}
    if skills is None:
        if not seen:
            raise SkillLibraryError(
                f"session {session!r} was served or held back no measured skill in this process; "
                "fetch with session= first, or name the skills (skills=[...])")
        targets = {name: (arm, version) for name, (arm, version) in seen.items()}
    else:
        if isinstance(skills, str):
            raise TypeError("skills must be a collection of skill names, not one string")
        found = settings(library)
        for name in skills:
            if name in seen:
                targets[name] = seen[name]
                continue
            skill = library.context.store.get(name)  # unknown name: "no skill named ..."
            arm: Arm = "held_back" if held(library, skill, session, found) else "served"
            targets[name] = (arm, skill.version)
    digest = session_digest(session)
    line = " ".join(str(reason).split())[:200] if reason else None
    already = UpliftRows(unit_of(library)).add_session_outcomes(digest, [
        {"name": name, "version": version, "arm": arm, "kind": kind.value,
         "success": kind is OutcomeKind.SUCCESS, "reason": line, "origin": origin, "cost": spent}
        for name, (arm, version) in targets.items()
    ])
    if already:
        raise SkillLibraryError(
            f"session {session!r} already has its outcome for {', '.join(sorted(already))}; one per session")
    for name in targets:
        after_outcome(library, name)
    return {name: str(arm) for name, (arm, _) in targets.items()}


def _rows(library: "HoldingOut", name: str, version: int | None,
          since: datetime | None = None) -> list[dict[str, Any]]:
    from skill_library.governance.lifecycle import unit_of

    rows = UpliftRows(unit_of(library)).session_outcomes(name, version)
    if since is not None:
        rows = [r for r in rows if _aware(r["recorded_at"]) > since]
    return rows


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _arm(rows: Sequence[Mapping[str, Any]]) -> ArmCounts:
    counted = [r for r in rows if OutcomeKind.of(r["kind"]).counted]
    costs: dict[str, list[float]] = {}
    for r in counted:
        for key, value in (r["cost"] or {}).items():
            costs.setdefault(key, []).append(float(value))
    return ArmCounts(n=len(counted), successes=sum(1 for r in counted if r["kind"] == OutcomeKind.SUCCESS.value),
                other=len(rows) - len(counted), cost={k: sum(v) / len(v) for k, v in sorted(costs.items())})


def uplift(library: "HoldingOut", name: str, version: int | None = None, *,
           since: datetime | None = None, skill: Skill | None = None, events: Sequence[Any] | None = None) -> Uplift:
    """The uplift of ``version`` (default: the pointer's) of ``name`` (module doc);
    ``since``: only outcomes recorded after it (``skill``, ``events``: the version and its
    audit events, when the caller read them)."""
    if skill is None:
        skill = library.context.store.get(name, version)
    if events is None:
        events = _events(library, name, skill.version)
    rows = _rows(library, name, skill.version, since)
    served = _arm([r for r in rows if r["arm"] == "served"])
    held_arm = _arm([r for r in rows if r["arm"] == "held_back"])
    found = settings(library)
    share = found.share if measured(library, skill, found) else 0.0
    needs = {"served": max(0, UPLIFT_MIN_N - served.n), "held_back": max(0, UPLIFT_MIN_N - held_arm.n)}
    difference = low = high = None
    verdict: Verdict
    if served.n and held_arm.n:
        difference, low, high = newcombe(served.successes, served.n, held_arm.successes, held_arm.n)
    if any(needs.values()):
        verdict = "collecting" if share > 0 or served.n or held_arm.n else "off"
    elif high is not None and high < 0:
        verdict = "negative"
    elif low is not None and low > 0:
        verdict = "positive"
    else:
        verdict = "inconclusive"
    cost = {key: {"served": served.cost[key], "held_back": held_arm.cost[key],
                  "difference": served.cost[key] - held_arm.cost[key]}
            for key in served.cost if key in held_arm.cost}
    return Uplift(name=name, version=skill.version, tenant=library.context.tenant, served=served, held_back=held_arm,
                  difference=difference, low=low, high=high, verdict=verdict, needs=needs, share=share,
                  cost=cost, marked=any(e.evidence.get("mark") == POSITIVE_MARK for e in events),
                  suppressed=skill.status == "quarantined" and _suppression(events) is not None)


# -- verdicts: suppression and the positive mark -------------------------------------------
def _events(library: "HoldingOut", name: str, version: int | None = None) -> list[Any]:
    from skill_library.governance import audit
    from skill_library.governance.lifecycle import unit_of

    with unit_of(library).transaction(write=False) as conn:
        return audit.read(conn, library.context.tenant, name, version)


def is_marked(library: "HoldingOut", name: str, version: int) -> bool:
    """Whether ``version`` of ``name`` was marked reliably positive."""
    return any(e.evidence.get("mark") == POSITIVE_MARK for e in _events(library, name, version))


def _suppression(events: Sequence[Any]) -> Any:
    """The audit event (of a version's ``events``) that quarantined it for its uplift."""
    found = [e for e in events if e.to_status == "quarantined" and e.evidence.get("test") == "uplift"]
    return found[-1] if found else None


def _last_lift(events: Sequence[Any]) -> datetime | None:
    """When a person last returned the version from a quarantine (its earlier evidence was
    judged then: the automatic rule reads only what came after)."""
    lifts = [e.at for e in events if e.from_status == "quarantined" and e.to_status == "active"]
    return lifts[-1] if lifts else None


def after_outcome(library: "HoldingOut", name: str) -> Uplift | None:
    """After a session outcome of ``name``: suppress its active version when its uplift is
    reliably negative, mark it when reliably positive (module doc)."""
    from skill_library.errors import LifecycleError, SkillNotFoundError
    from skill_library.governance import audit
    from skill_library.governance.actors import system_actor
    from skill_library.governance.lifecycle import library_transition, unit_of

    try:
        skill = library.context.store.get(name)
    except SkillNotFoundError:
        return None
    if skill.status != "active":
        return None
    events = _events(library, name, skill.version)
    current = uplift(library, name, skill.version, since=_last_lift(events), skill=skill, events=events)
    evidence = {"test": "uplift", **current.to_json()}
    if current.verdict == "negative":
        assert current.high is not None and current.difference is not None
        reason = (f"uplift reliably negative: tasks succeed {_rate(current.served)} with it and "
                  f"{_rate(current.held_back)} without it, difference {100 * current.difference:+.1f} points, "
                  f"{current.confidence:.0%} upper bound {100 * current.high:+.1f} < 0 (Newcombe, at least "
                  f"{current.min_n} per arm): out of fetch for review")
        try:
            library_transition(library, name, skill.version, "quarantined", actor=system_actor(),
                               reason=reason, evidence=evidence)
        except LifecycleError:  # another process moved it first
            pass
    elif current.verdict == "positive" and not current.marked:
        assert current.low is not None
        reason = (f"marked: uplift reliably positive ({100 * (current.difference or 0):+.1f} points, "
                  f"{current.confidence:.0%} lower bound {100 * current.low:+.1f} > 0)")
        unit_of(library).retrying(lambda conn: audit.write(
            conn, library.context.tenant, name, skill.version, skill.status, skill.status, actor=system_actor().id,
            reason=reason, evidence={**evidence, "mark": POSITIVE_MARK}))
    return current


# -- the tenant's overview (skills stats) --------------------------------------------------
@dataclass(frozen=True)
class UpliftSummary:
    """The tenant's holdout and the uplift of every skill with session outcomes."""

    settings: UpliftSettings
    skills: list[Uplift]

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return {"settings": self.settings.to_json(), "skills": [u.to_json() for u in self.skills]}

    def describe(self) -> str:
        """One line for people."""
        head = (f"uplift: holdout {self.settings.share:.0%} of sessions per skill"
                if self.settings.enabled else "uplift: holdout off")
        if not self.skills:
            return head + "; no session outcomes yet"
        groups: dict[str, list[str]] = {}
        for u in self.skills:
            label = {"negative": "reliably negative (out of fetch)" if u.suppressed else "reliably negative",
                     "positive": "reliably positive", "inconclusive": "inconclusive",
                     "collecting": "collecting", "off": "not measured"}[u.verdict]
            groups.setdefault(label, []).append(u.name)
        parts = [f"{len(names)} {label}: {', '.join(names)}" for label, names in groups.items()]
        return f"{head}; {len(self.skills)} skill(s) measured: " + "; ".join(parts)


def summary(library: "HoldingOut") -> UpliftSummary:
    """:class:`UpliftSummary` of the tenant (one uplift per skill with session outcomes)."""
    from skill_library.errors import SkillNotFoundError
    from skill_library.governance.lifecycle import unit_of

    names = UpliftRows(unit_of(library)).measured_names()
    found = []
    for name in names:
        try:
            found.append(uplift(library, name))
        except SkillNotFoundError:  # deleted since
            continue
    return UpliftSummary(settings=settings(library), skills=found)
