"""Ranking of fetch candidates: what the task can use, not only what reads alike.

Each candidate the index returned gets one score, the sum of a similarity and five
penalties (each <= 0, each bounded, so no term can swamp the similarity):

    score = similarity                      # cosine of the task to the skill's best entry
          + value_fit                       # skill_library.value_fit: missing / unexplained value shapes
          - EVIDENCE_WEIGHT    * (1 - evidence)
          - BINDABILITY_WEIGHT * (1 - bindability)
          - SPECIFICITY_WEIGHT * (1 - specificity)
          - RELIABILITY_WEIGHT * (1 - reliability)
          - intent.CONFLICT_PENALTY * conflicts   # skill_library.intent: the task rules it out
          - intent.STATE_PENALTY * excluded_state # the task names a state its precondition excludes

* **evidence**: a log-evidence prior on the verified successes ``n`` of the version
  (each trace learned into it and each successful run is one):
  ``min(1, log(1 + n) / log(1 + EVIDENCE_SATURATION))``. A workflow learned from 97 traces
  scores 0.99, a copy learned once 0.15; past ``EVIDENCE_SATURATION`` successes more
  evidence adds nothing, so a popular skill cannot outrank a better-fitting one by volume.
* **bindability**: the share of the skill's required parameters the caller can supply:
  named in ``fetch(task, args={...})``, or visible in the task by the value shapes the
  skill's examples bound (skill_library.value_fit). A numbered parameter (``order_id_3``
  beside ``order_id``) needs as many distinct values of that shape as its number: a skill
  taking ``order_id_5`` is a poor fit for a task naming one order. A parameter whose values
  have no distinctive shape (a name, a reason) counts as bindable unless ``args`` is given
  and lacks it; nor does one whose tool declares its values as identifiers (an ``enum``:
  ``system`` in ``email vpn crm ...``) when the task names none of them
  (skill_library.intent, :func:`~skill_library.intent.identifier_choices`); when the task
  names one of them (``git``), that parameter is bound whatever shapes the examples' values
  had (``hr_portal`` -> ``a_a`` says which systems were seen, not which the tool takes), and
  value fit does not charge it either. Parameters of one shape (``email`` and
  ``colleague_email``) need as many distinct values of it in the task as there are of them
  (one email cannot be both the employee's and the colleague's; a value ``args`` passes for
  one of them that the task shows is used up by it). The parameters
  that cannot be bound are the match's ``missing``. Without
  ``args``, a single parameter whose shape the task lacks entirely is value fit's penalty
  already and is not charged twice here.
* **specificity**: ``1 / (1 + extra)``, where ``extra`` is how many more state-changing
  tools the skill (with the skills it calls) uses than the leanest candidate of this fetch:
  of two skills that read alike, the one that does more than the other (revokes every
  system *and* disables the account, where another revokes one) loses. A skill that loops
  over every item of a lookup, whose look-alike takes the item as a parameter, also loses
  ``one_vs_every.EVERY_PENALTY`` when the task does not say every (skill_library.one_vs_every,
  which also marks the look-alike's item parameter missing when the task names no item and
  flags both ``ambiguous`` when the task does not tell them apart).
* **reliability**: Laplace-smoothed success rate, as before.
* **intent**: ``-intent.CONFLICT_PENALTY`` for a skill the task's words rule out
  (skill_library.intent: a question or a "nothing needs to change" against a state-changing
  skill, a request for the opposite of what the skill does, or a negated verb of it), so a
  skill that fits comes first when there is one; abstention abstains when the top match
  still conflicts. ``-intent.STATE_PENALTY`` for a skill whose mined precondition excludes a
  state the task names ("our contractor" against a skill for staff, when a look-alike's
  precondition admits contractors: :func:`skill_library.intent.named_states`).

``Match.score`` is this score; ``fetch(..., explain=True)`` sets ``Match.explanation``
(:class:`~skill_library.models.ScoreBreakdown`), whose terms add up to it. Ties (within
``SIMILARITY_TIE``) go to reliability, then name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill_library import intent, one_vs_every, value_fit
from skill_library.models import Match, ScoreBreakdown, Skill

# Similarities closer than this are treated as a tie (float noise from the index).
SIMILARITY_TIE = 1e-6
#: successes at which the evidence prior saturates (1.0)
EVIDENCE_SATURATION = 100
#: largest evidence penalty (a skill with no verified success)
EVIDENCE_WEIGHT = 0.05
#: largest bindability penalty (no required parameter can be supplied)
BINDABILITY_WEIGHT = 0.15
#: largest specificity penalty (a skill doing far more than the leanest candidate)
SPECIFICITY_WEIGHT = 0.04
#: largest reliability penalty (reliability 0)
RELIABILITY_WEIGHT = 0.05

_NUMBERED_RE = re.compile(r"^(?P<base>[a-z][a-z0-9_]*?)_(?P<n>[0-9]+)$")


def qualifies(skill: Skill, min_reliability: float) -> bool:
    """True when ``skill`` is active and reliable enough to be fetched."""
    return skill.status == "active" and skill.reliability >= min_reliability


def evidence(successes: int) -> float:
    """The log-evidence prior in [0, 1]: ``log(1 + n) / log(1 + EVIDENCE_SATURATION)``, capped."""
    return min(1.0, math.log1p(max(0, successes)) / math.log1p(EVIDENCE_SATURATION))


def required_parameters(skill: Skill) -> list[str]:
    """The parameters a call of ``skill`` must pass (its schema's ``required``)."""
    schema = skill.parameters or {}
    return [str(p) for p in schema.get("required", [])]


def _numbered(name: str, names: set[str]) -> tuple[str, int]:
    """``(base, n)`` of a numbered parameter (``order_id_3`` beside ``order_id``), else ``(name, 1)``."""
    found = _NUMBERED_RE.match(name)
    if found and found.group("base") in names and int(found.group("n")) >= 2:
        return found.group("base"), int(found.group("n"))
    return name, 1


def _given(args: Mapping[str, Any], name: str, base: str, n: int) -> bool:
    if name in args:
        return True
    if n > 1 and base in args:  # numbered: the n-th of a list passed under the base name
        value = args[base]
        return isinstance(value, (list, tuple)) and len(value) >= n
    return False


def missing_parameters(
    skill: Skill, task: value_fit.TaskValues | None, shapes: Mapping[str, Sequence[str]] | None,
    args: Mapping[str, Any] | None,
) -> tuple[list[str], list[str]]:
    """``(required, missing)``: the skill's required parameters and those the caller cannot
    supply (see the module doc, *bindability*). ``shapes``: parameter -> value shapes its
    examples bound (an index entry's, decoded)."""
    required = required_parameters(skill)
    names = set((skill.parameters or {}).get("properties", {}))
    shapes = shapes or {}
    groups: dict[str, list[str]] = {}  # base -> its numbered family's shapes
    for name in names:
        base, _ = _numbered(name, names)
        groups.setdefault(base, []).extend(shapes.get(name, ()))
    missing = []
    for name in required:
        base, n = _numbered(name, names)
        if args is not None and _given(args, name, base, n):
            continue
        family = groups.get(base) or list(shapes.get(name, ()))
        if family and task is not None:
            if task.count(family) >= n:
                continue
            missing.append(name)  # a shape the task holds too few values of
        elif args is not None or n > 1:
            missing.append(name)  # not given, and nothing says the task holds it
    # parameters of one shape (``email`` and ``colleague_email``) need as many distinct
    # values of it in the task: one email cannot be both the employee and the colleague;
    # a value the caller passed for one of them that the task shows is used up by it
    numbered_bases = {_numbered(n, names)[0] for n in names if _numbered(n, names)[1] > 1}
    alike: dict[tuple[str, ...], list[str]] = {}
    for name in required:
        if (task is None or name in missing or name in numbered_bases or _numbered(name, names)[1] > 1
                or not shapes.get(name)):
            continue
        alike.setdefault(tuple(sorted(shapes[name])), []).append(name)
    for shared, members in alike.items():
        if len(members) < 2 or task is None:
            continue
        passed = {m: args[m] for m in members if m in args} if args is not None else {}
        needed = [m for m in members if m not in passed]
        shown = sum(1 for v in passed.values() if isinstance(v, str) and v.strip() and v.strip() in task.text)
        missing += needed[max(0, task.count(shared) - shown):]
    return required, missing


def charged_by_value_fit(skill: Skill, task: value_fit.TaskValues | None,
                         shapes: Mapping[str, Sequence[str]] | None, missing: Sequence[str]) -> set[str]:
    """The ``missing`` parameters value fit already charged (a single value whose shape the
    task lacks entirely): bindability does not charge them twice."""
    if task is None or not shapes:
        return set()
    names = set((skill.parameters or {}).get("properties", {}))
    return {name for name in missing
            if _numbered(name, names)[1] == 1 and shapes.get(name) and task.count(shapes[name]) == 0}


def acting_tools(skill: Skill, read_only: frozenset[str], needed: frozenset[str] | None = None) -> int:
    """How many state-changing tools ``skill`` uses (``needed``: its tools with those of the
    skills it calls, when known); tools named read-only do not count."""
    return len((needed if needed is not None else frozenset(skill.tools)) - read_only)


@dataclass
class Candidate:
    """What ranking knows of one candidate skill of a fetch."""

    skill: Skill
    similarity: float  # the plain cosine of its best entry (fetch's floor compares this)
    fitted: float  # the best entry's similarity less value fit's penalty
    entry: str  # the kind of that entry: when, example, prototype
    best_cosine: float  # that entry's cosine
    by_entry: dict[str, float]
    shapes: Mapping[str, Sequence[str]] | None
    acting: int = 0


def named_choices(reading: "intent.Reading | None", name: str) -> list[str]:
    """The parameters of skill ``name`` whose tool declares identifier values
    (skill_library.intent) of which the task names one (``git`` of ``system``)."""
    return list(reading.named_values(name)) if reading is not None else []


def entry_fit(task: value_fit.TaskValues, hit: Any, named: Sequence[str]) -> float:
    """``value_fit.score`` of an index entry with the ``named`` parameters (see
    :func:`named_choices`) out of its shapes: an enumerated value's example shapes
    (``hr_portal`` -> ``a_a``) say which values were seen, not which the tool takes."""
    shapes = value_fit.decode(hit.shapes) if named and hit.shapes else None
    if not shapes or not set(named) & set(shapes):
        return value_fit.score(task, hit)
    share, loose = value_fit.fit(task, {p: v for p, v in shapes.items() if p not in named})
    return float(hit.similarity - value_fit.FIT_WEIGHT * (1.0 - share) - value_fit.UNEXPLAINED_WEIGHT * loose)


def score(candidate: Candidate, task: value_fit.TaskValues | None, args: Mapping[str, Any] | None,
          leanest: int, *, every_penalty: float = 0.0,
          also_missing: Sequence[str] = (), conflict: str | None = None,
          named: Sequence[str] = (), state: str | None = None,
          explain: bool = True) -> tuple[float, ScoreBreakdown | None, list[str]]:
    """The candidate's score, its breakdown (None unless ``explain``) and its missing parameters; ``every_penalty``
    and ``also_missing``: the one-vs-every rule's (skill_library.one_vs_every); ``conflict``:
    why the task rules the skill out (skill_library.intent), or None; ``named``: parameters
    whose declared identifier values the task names (never missing, no value-shape check);
    ``state``: why the task names a state the skill's precondition excludes
    (skill_library.intent.named_states), charged ``intent.STATE_PENALTY``."""
    skill = candidate.skill
    shapes = candidate.shapes
    if named and shapes:
        shapes = {p: v for p, v in shapes.items() if p not in named}
    required, missing = missing_parameters(skill, task, shapes, args)
    missing = [p for p in missing if p not in named]
    missing += [p for p in also_missing if p in required and p not in missing]
    charged = charged_by_value_fit(skill, task, shapes, missing) if args is None else set()
    bind = 1.0 - (len(missing) - len(charged)) / len(required) if required else 1.0
    extra = max(0, candidate.acting - leanest)
    terms = {
        "value_fit": candidate.fitted - candidate.best_cosine,
        "evidence": -EVIDENCE_WEIGHT * (1.0 - evidence(skill.successes)),
        "bindability": -BINDABILITY_WEIGHT * (1.0 - bind),
        "specificity": -SPECIFICITY_WEIGHT * (1.0 - 1.0 / (1.0 + extra)) - every_penalty,
        "reliability": -RELIABILITY_WEIGHT * (1.0 - skill.reliability),
        "intent": (-intent.CONFLICT_PENALTY if conflict else 0.0) - (intent.STATE_PENALTY if state else 0.0),
    }
    total = candidate.best_cosine + sum(terms.values())
    if not explain:
        return total, None, missing
    breakdown = ScoreBreakdown.model_construct(
        entry=candidate.entry, by_entry=dict(candidate.by_entry), similarity=candidate.best_cosine,
        value_fit=terms["value_fit"], evidence=terms["evidence"], bindability=terms["bindability"],
        specificity=terms["specificity"], reliability=terms["reliability"],
        intent=terms["intent"], conflict=conflict or state, score=total, successes=skill.successes, required=required,
        acting_tools=candidate.acting,
    )
    return total, breakdown, missing


def make_match(skill: Skill, similarity: float, score: float | None = None, **extra: Any) -> Match:
    """A :class:`Match`; ``score`` defaults to similarity x reliability (prefetch's)."""
    # the skill is a validated record: constructing without re-validating keeps fetch cheap
    fields: dict[str, Any] = {"prefetch": False, "ambiguous": False, "missing": [], "explanation": None}
    fields.update(extra)
    return Match.model_construct(
        skill=skill,
        similarity=similarity,
        reliability=skill.reliability,
        score=similarity * skill.reliability if score is None else score,
        **fields,
    )


def rank_candidates(candidates: Iterable[Candidate], task: value_fit.TaskValues | None,
                    args: Mapping[str, Any] | None = None, *, explain: bool = False,
                    scope: "one_vs_every.Scope | None" = None,
                    reading: "intent.Reading | None" = None, limit: int | None = None) -> list[Match]:
    """Score ``candidates`` (module doc) and order them: score (ties within
    ``SIMILARITY_TIE``), then reliability, then name. ``scope``: the library's one-vs-every
    pairs (skill_library.one_vs_every), which penalize a loop skill for a task that does not
    say every, mark a one-item skill's parameter missing for one that names no item, and
    flag both sides ``ambiguous`` when the task does not tell them apart. ``reading``: the
    task read by skill_library.intent, which demotes the skills the task rules out.
    ``limit``: only the first ``limit`` matches are made (all are scored and ordered: what
    ranking tells the reading and the ``ambiguous`` flags are the same)."""
    found = list(candidates)
    leanest = min((c.acting for c in found), default=0)
    named_by_skill = {c.skill.name: named_choices(reading, c.skill.name) for c in found}
    penalty, also_missing, judged = one_vs_every.adjustments(
        scope, [c.skill.name for c in found], task.text if task is not None else "", args, named_by_skill)
    scored: list[tuple[Candidate, float, ScoreBreakdown | None, list[str]]] = []
    ruled_out: dict[str, tuple[float, str]] = {}  # name -> (score without the intent penalty, why)
    states = intent.named_states(reading.text, [c.skill for c in found]) if reading is not None else {}
    if reading is not None:
        reading.excluded_states = states  # abstention's rule 5 reads it
    for c in found:
        conflict = reading.conflict(c.skill, c.acting) if reading is not None else None
        unnamed = [p for p in reading.unnamed(c.skill) if args is None or p not in args] if reading else []
        named = named_by_skill[c.skill.name]
        total, breakdown, missing = score(c, task, args, leanest, every_penalty=penalty.get(c.skill.name, 0.0),
                                          also_missing=[*also_missing.get(c.skill.name, ()), *unnamed],
                                          conflict=conflict, named=named, state=states.get(c.skill.name),
                                          explain=explain)
        scored.append((c, total, breakdown, missing))
        if conflict:
            ruled_out[c.skill.name] = (total + intent.CONFLICT_PENALTY, conflict)
    # rank()'s order, with a Match made only for those returned
    order = sorted(scored, key=lambda s: order_key(s[1], s[0].skill.reliability, s[0].skill.name))
    ranked = [make_match(c.skill, c.similarity, total, missing=missing, explanation=breakdown)
              for c, total, breakdown, missing in (order if limit is None else order[:limit])]
    if reading is not None:
        reading.ruled_out = ruled_out
    if reading is not None and ruled_out and ranked:  # would a ruled-out skill have come first?
        best, why = max(((score_, name, why) for name, (score_, why) in ruled_out.items()),
                        key=lambda t: (t[0], t[1]))[1:]
        if ruled_out[best][0] > ranked[0].score + SIMILARITY_TIE:
            reading.displaced = (best, why)
    flagged = one_vs_every.ambiguous_names([c.skill.name for c, _, _, _ in order], judged)
    if flagged:
        ranked = [m.model_copy(update={"ambiguous": True}) if m.skill.name in flagged else m for m in ranked]
    return ranked


def rank(matches: Iterable[Match], scores: Mapping[str, float] | None = None) -> list[Match]:
    """Order by score (or ``scores``: skill name -> score; ties within ``SIMILARITY_TIE``),
    then reliability, then name."""
    scores = scores or {}
    return sorted(matches, key=lambda m: order_key(scores.get(m.skill.name, m.score), m.reliability, m.skill.name))


def order_key(score: float, reliability: float, name: str) -> tuple[int, float, str]:
    """The ranking order: score (ties within ``SIMILARITY_TIE``), then reliability, then name."""
    return (-round(score / SIMILARITY_TIE), -reliability, name)
