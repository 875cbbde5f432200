"""Plans for compound tasks: an ordered list of skills, each with the part it covers.

A task such as "exchange the boots of one order and cancel another one" combines two
workflows; no single learned skill does both (learning stores them apart:
:mod:`skill_library.induction.parts`). :func:`plan` answers with the skills in order.

The method:

1. the task is cut into *units*: its sentences, and each sentence into its clauses (cut at
   ``;``, ``, and``, `` and then``, `` also``... : :func:`skill_library.induction.parts.clauses`),
   so the split does not rely on sentence boundaries alone;
2. each unit of at least :data:`MIN_UNIT_WORDS` words (values aside) is matched with the
   same ``fetch`` an agent calls (filters, reliability and value fit apply); skills acting
   with the same tools are one *workflow*; a unit's similarity to a workflow gets
   :data:`LEXICAL_BONUS` when the unit uses a word of that workflow's tool names that no
   other matched workflow's tools have (the domain's verbs are its tools' names: "Return
   #W1 via paypal" says *return*);
3. a unit *gains* what it is nearer to a workflow than to the next workflow (or to
   :data:`MIN_PART_SIMILARITY`): a greeting or who is asking is about as near to every
   workflow, a request is near to its own;
4. a Viterbi pass labels each unit with a skill or nothing, maximizing the gains less
   :data:`STEP_COST` per step started; consecutive units of one skill are one step (unless
   a new sentence names other ids than the step does: a second order to exchange is a
   second step), and a step keeps the unlabeled units after it (a trailing "via paypal",
   an item's name);
5. two or more steps make a compound plan; otherwise the plan is the single best skill
   for the whole task (``fetch(task, 1)``).

Measured on τ-bench retail (benchmarks/README.md): on the held-out tasks of a fold, the
steps' workflows equal the gold writes' tools, in order, for most tasks; the constants were
set on train folds only.

Limits: a part written with none of its workflow's words and no distinctive tool word is
matched by the embedder alone; two requests of the same workflow in a row that name no ids
are one step (the skill's loop or list parameter covers both, or it runs once); steps run in the order the
task names them; a unit that names two workflows' requests without a clause boundary goes
to one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.induction.parts import clauses
from skill_library.privacy import sentences

if TYPE_CHECKING:
    from skill_library.models import Match, SkillRun
    from skill_library.protocols import Planning

#: Units per task past which its sentences are the units (cost bound: one fetch per unit).
MAX_UNITS = 24
#: A unit less similar than this to a skill gains nothing by taking it (it stays uncovered
#: or joins the step before it); above it, a unit gains what it is nearer to the skill than
#: to the other workflows' matches.
MIN_PART_SIMILARITY = 0.45
#: What starting a step costs, in similarity: a second skill must be worth it.
STEP_COST = 0.1
#: Matches read per unit (the other workflows among them are its baseline).
UNIT_K = 6
#: Added to a unit's similarity to a workflow whose tools' own words the unit uses ("Return
#: #W1 via paypal" says "return"): the domain's verbs are its tools' names.
LEXICAL_BONUS = 0.15
#: A unit with fewer words than this (values aside) cannot start a step of its own.
MIN_UNIT_WORDS = 3
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


_ID_RE = re.compile(r"#?[A-Za-z]{1,3}\d{4,}|[A-Za-z]+_[A-Za-z_]*\d{3,}|#\w*\d\w*")


def _names_another_target(unit: tuple[int, str], step: Sequence[str], previous_sentence: int) -> bool:
    """Whether ``unit`` starts another request of the same workflow: a new sentence naming
    ids (``#W1``, ``order_17``) none of which the step so far names, while the step names
    some (a second order to exchange is a second step)."""
    sentence, text = unit
    if sentence == previous_sentence:
        return False
    mine = set(_ID_RE.findall(text))
    before = set(_ID_RE.findall(" ".join(step)))
    return bool(mine) and bool(before) and not mine & before


def _family(match: "Match") -> tuple[str, ...]:
    return tuple(sorted(match.skill.tools or [match.skill.name]))


def _content_words(text: str) -> list[str]:
    """The words of ``text`` that are not values (no digits, no ``_`` ids, no braces)."""
    return [w for w in re.findall(r"[^\s{}:;,.()\[\]'\"]+", text)
            if re.fullmatch(r"[A-Za-z][A-Za-z'-]+", w) and len(w) >= 2]


def _stems(text: str) -> set[str]:
    """Lowercase words of ``text`` with a plural or past ``s``/``ed`` cut (crude, on purpose)."""
    out = set()
    for word in re.findall(r"[a-z]{3,}", text.lower()):
        out.add(re.sub(r"(?:es|s|ed|ing)$", "", word) or word)
    return out


def _distinctive(family: tuple[str, ...], found: Sequence["Match"]) -> set[str]:
    """The words of ``family``'s tool names that no other matched workflow's tools have: the
    domain's own verbs and objects for it ("return", "cancel", "address")."""
    mine = set().union(*(_stems(t.replace("_", " ")) for t in family))
    for m in found:
        other = _family(m)
        if other != family and not set(family) <= set(other):  # a compound that holds it
            mine -= set().union(*(_stems(t.replace("_", " ")) for t in other))
    return mine


def _params(match: "Match") -> list[str]:
    schema = match.skill.parameters or {}
    return list(schema.get("properties", {}))


def plan(
    library: "Planning",
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
        if len(_content_words(text)) < MIN_UNIT_WORDS:
            scored.append({})  # "via paypal", an item's name: a detail of the step before it
            continue
        found = fetch(text, max(k, UNIT_K))
        said = _stems(text)
        families: dict[tuple[str, ...], float] = {}
        for m in found:  # a family: the skills acting with the same tools (one workflow)
            family = _family(m)
            near = m.similarity + (LEXICAL_BONUS if said & _distinctive(family, found) else 0.0)
            families[family] = max(families.get(family, -1.0), near)
        row: dict[str, tuple[float, "Match"]] = {}
        for m in found:
            # what the unit says about this workflow beyond the next one: a greeting or who
            # is asking is about as near to every workflow; a request is near to its own
            family = _family(m)
            others = [v for f, v in families.items() if f != family]
            gain = families[family] - max([min_similarity, *others])
            if m.skill.name not in row or gain > row[m.skill.name][0]:
                row[m.skill.name] = (gain, m)
        scored.append(row)
    labels = sorted({name for row in scored for name in row})
    # Viterbi over units: each unit is uncovered (gain 0) or takes a skill (its gain, step
    # 3 of the module docstring); starting a step costs STEP_COST
    NONE = ""
    best: dict[str, tuple[float, list[str]]] = {NONE: (0.0, [])}
    for row in scored:
        nxt: dict[str, tuple[float, list[str]]] = {}
        for label in [NONE, *labels]:
            if label != NONE and label not in row:
                continue
            gain = 0.0 if label == NONE else row[label][0]
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
        if steps and steps[-1].name == label and path[i - 1] in (label, NONE) \
                and not _names_another_target(units[i], pieces[-1], units[i - 1][0]):
            pieces[-1].append(text)
            if similarity > steps[-1].similarity:
                steps[-1] = PlanStep(label, match.skill.version, "", steps[-1].params, similarity)
            continue
        steps.append(PlanStep(label, match.skill.version, "", _params(match), similarity))
        pieces.append([text])
    steps = [PlanStep(s.name, s.version, " ".join(p), s.params, s.similarity)
             for s, p in zip(steps, pieces)]
    if len(steps) >= 2:
        return Plan(task=task, steps=steps, uncovered=uncovered)
    whole = fetch(task, 1)
    if not whole:
        return Plan(task=task, steps=[], uncovered=[u for _n, u in units])
    top = whole[0]
    return Plan(task=task, steps=[PlanStep(top.skill.name, top.skill.version, task, _params(top),
                                           top.similarity)])


@dataclass(frozen=True)
class PlanRun:
    """What :func:`run_plan` did: one run per step that ran, in order."""

    plan: Plan
    runs: list["SkillRun"] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every step ran and succeeded."""
        return len(self.runs) == len(self.plan.steps) and all(r.ok for r in self.runs)

    @property
    def stopped_at(self) -> int | None:
        """The index of the step that failed (the later steps did not run), or None."""
        return next((n for n, r in enumerate(self.runs) if not r.ok), None)


def run_plan(
    library: "Planning",
    result: Plan,
    args: Sequence[Mapping[str, Any] | None],
    tools: Mapping[str, Callable[..., Any]] | None = None,
    **options: Any,
) -> PlanRun:
    """Run ``result``'s steps in order, each with its own ``args`` (one mapping per step), in
    the sandbox through :meth:`SkillLibrary.run` (so each step's outcome is its own skill's,
    recorded as any run is; ``options`` such as ``session``, ``record`` or ``limits`` go to
    every step); the first step that fails stops the plan."""
    if len(args) != len(result.steps):
        raise ValueError(f"run_plan needs one argument mapping per step: the plan has "
                         f"{len(result.steps)} step(s), got {len(args)}")
    runs: list["SkillRun"] = []
    for step, step_args in zip(result.steps, args):
        run = library.run(step.name, step_args, tools, version=step.version, **options)
        runs.append(run)
        if not run.ok:
            break
    return PlanRun(plan=result, runs=runs)


def describe(result: Plan) -> Sequence[str]:
    """One line per step (``1. name: part``), then the uncovered parts."""
    lines = [f"{n}. {s.name} v{s.version} ({s.similarity:.2f}): {s.part}"
             for n, s in enumerate(result.steps, start=1)]
    lines += [f"uncovered: {u}" for u in result.uncovered]
    return lines
