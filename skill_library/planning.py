"""Plans for compound tasks: an ordered list of skills, each with the part it covers.

A task such as "exchange the boots of one order and cancel another one" combines two
workflows; no single learned skill does both (learning stores them apart:
:mod:`skill_library.induction.parts`). :func:`plan` answers with the skills in order.

The method:

1. the task is cut into *units*: its sentences, and each sentence into its clauses (cut at
   ``;``, ``, and``, `` and then``, `` also``... : :func:`skill_library.induction.parts.clauses`),
   so the split does not rely on sentence boundaries alone;
2. every unit, and every run of up to :data:`MAX_SPAN` consecutive units within a sentence
   pair, is matched against the library (the same fetch an agent calls, so the same
   filters, reliability and value fit apply); a unit takes the skill of the best-matching
   span that holds it;
3. units whose best similarity is below the floor (greetings, who is asking, feelings)
   are *uncovered*; consecutive units that chose the same skill are one step, and a step
   holds the uncovered units that follow it (a trailing "via paypal" belongs to the request
   before it);
4. two or more steps of different skills make a compound plan; otherwise the plan is the
   single best skill for the whole task (``fetch(task, 1)``).

Limits: a part written with none of the words its skill's texts have is not matched
(paraphrase is the embedder's job); two requests of the same workflow in one task are one
step (the skill's loop or list parameter covers both, or it runs once); the order of the
steps is the order the task names them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skill_library.induction.parts import clauses, sentences

if TYPE_CHECKING:
    from skill_library.library import SkillLibrary
    from skill_library.models import Match

#: Units per task past which its sentences are the units (cost bound: one fetch per unit).
MAX_UNITS = 24
#: A unit less similar than this to a skill gains nothing by taking it (it stays uncovered
#: or joins the step before it); above it, a unit gains what it is nearer to the skill than
#: to the other workflows' matches.
MIN_PART_SIMILARITY = 0.45
#: What starting a step costs, in similarity: a second skill must be worth it.
STEP_COST = 0.05
#: Matches read per unit (the other workflows among them are its baseline).
UNIT_K = 6
#: How many matches are read per span.
SPAN_K = 3


@dataclass(frozen=True)
class PlanStep:
    """One step of a plan: the skill to run and the part of the task it covers."""

    name: str
    version: int
    part: str
    params: list[str]
    similarity: float


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` returns: the steps in order, and the parts no skill covers."""

    task: str
    steps: list[PlanStep] = field(default_factory=list)
    uncovered: list[str] = field(default_factory=list)

    @property
    def compound(self) -> bool:
        """Whether the plan runs two or more skills."""
        return len(self.steps) > 1

    def __len__(self) -> int:
        return len(self.steps)


def _units(task: str) -> list[tuple[int, str]]:
    """(sentence number, unit text) for each unit of ``task``."""
    out = []
    for number, sentence in enumerate(sentences(task)):
        for clause in clauses(sentence) or [sentence]:
            out.append((number, clause))
    return out


def _params(match: "Match") -> list[str]:
    schema = match.skill.parameters or {}
    return list(schema.get("properties", {}))


def plan(
    library: "SkillLibrary",
    task: str,
    *,
    k: int = SPAN_K,
    min_similarity: float = MIN_PART_SIMILARITY,
    tools: Iterable[str] | None = None,
    min_reliability: float | None = None,
) -> Plan:
    """The skills that together cover ``task``, in order (see the module docstring)."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError("plan needs a task: a non-empty string")
    tool_list = list(tools) if tools is not None else None

    def fetch(text: str, n: int) -> list["Match"]:
        return list(library.fetch(text, n, tools=tool_list, min_reliability=min_reliability,
                                  min_similarity=-1))

    units = _units(task)
    if len(units) > MAX_UNITS:  # a very long task: its sentences are the units
        units = [(n, sentence) for n, sentence in enumerate(sentences(task))][:MAX_UNITS]
    scored: list[dict[str, tuple[float, "Match"]]] = []
    for _n, text in units:
        found = fetch(text, max(k, UNIT_K))
        row: dict[str, tuple[float, "Match"]] = {}
        for m in found:
            # what the unit says about this skill beyond what it says about any skill: its
            # similarity less that of the other workflows' matches (a greeting or who is
            # asking is about as near to every skill; a request is near to its own)
            family = tuple(sorted(m.skill.tools or []))
            others = [o.similarity for o in found if tuple(sorted(o.skill.tools or [])) != family]
            baseline = max(min_similarity, sum(others) / len(others)) if others else min_similarity
            row[m.skill.name] = (m.similarity - baseline, m)
        scored.append(row)
    labels = sorted({name for row in scored for name in row})
    # Viterbi over units: each unit is uncovered (gain 0) or takes a skill (gain: its
    # similarity less the floor); starting a step costs STEP_COST
    NONE = ""
    best: dict[str, tuple[float, list[str]]] = {NONE: (0.0, [])}
    for row in scored:
        nxt: dict[str, tuple[float, list[str]]] = {}
        for label in [NONE, *labels]:
            gain = 0.0 if label == NONE else (row[label][0] if label in row else None)
            if gain is None:
                continue
            options = []
            for prev, (score, path) in best.items():
                cost = STEP_COST if label != NONE and label != prev else 0.0
                options.append((score + gain - cost, path + [label]))
            nxt[label] = max(options, key=lambda o: o[0])
        best = nxt
    path = max(best.values(), key=lambda o: o[0])[1]
    steps: list[PlanStep] = []
    uncovered: list[str] = []
    pieces: list[list[str]] = []
    for i, label in enumerate(path):
        text = units[i][1]
        if label == NONE:
            if steps:
                pieces[-1].append(text)  # a trailing detail belongs to the step before it
            else:
                uncovered.append(text)
            continue
        _gain, match = scored[i][label]
        similarity = match.similarity
        if steps and steps[-1].name == label and path[i - 1] in (label, NONE):
            pieces[-1].append(text)
            if similarity > steps[-1].similarity:
                steps[-1] = PlanStep(label, match.skill.version, "", steps[-1].params, similarity)
            continue
        steps.append(PlanStep(label, match.skill.version, "", _params(match), similarity))
        pieces.append([text])
    steps = [PlanStep(s.name, s.version, " ".join(p), s.params, s.similarity)
             for s, p in zip(steps, pieces)]
    if len({s.name for s in steps}) >= 2:
        return Plan(task=task, steps=steps, uncovered=uncovered)
    whole = fetch(task, 1)
    if not whole:
        return Plan(task=task, steps=[], uncovered=[u for _n, u in units])
    top = whole[0]
    return Plan(task=task, steps=[PlanStep(top.skill.name, top.skill.version, task, _params(top),
                                           top.similarity)])


def describe(result: Plan) -> Sequence[str]:
    """One line per step (``1. name: part``), then the uncovered parts."""
    lines = [f"{n}. {s.name} v{s.version} ({s.similarity:.2f}): {s.part}"
             for n, s in enumerate(result.steps, start=1)]
    lines += [f"uncovered: {u}" for u in result.uncovered]
    return lines
