"""Admission: what a verified candidate does to the library — merge, revise, save or not.

One skill per *workflow*. Before a candidate learned from a trace is stored, the library
looks for a skill of the same workflow among the skills named like it and the skills
nearest to the trace's task:

* **merge** when the candidate's normalized code equals a skill's (function name,
  docstring, parameter and local names ignored), or when an existing skill *replays the
  new trace* given the trace's bindings: nothing new is stored, the trace becomes evidence
  (one success on the active version, the trace among its examples);
* **revise** when a learned skill of the same name does not reproduce the trace: a
  candidate built from the skill's example traces together with the new one becomes the
  next version if it replays every one of them; a skill that has dropped out (reliability
  under the fetch threshold) is replaced by the new candidate when no joint one is found;
* **duplicate** when a reliable skill for the same task, taking the same parameters, exists
  and no joint candidate could be found (nothing stored); a skill that reads alike but
  takes other inputs (the customer's email, not a name and zip) is another workflow;
* **save** otherwise, under a free name.

The decision and the writes it leads to happen in one critical section (the library's
write lock), so two processes learning the same workflow at once neither split evidence
nor take the same name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library import privacy
from skill_library.induction import describe, description
from skill_library.induction.candidate import Candidate
from skill_library.induction.verify import replay_verify
from skill_library.models import Example, Skill, Trace, VerificationReport

if TYPE_CHECKING:  # pragma: no cover
    from sandbox import Sandbox

#: At most this many example texts of a skill are in the fetch index (chosen for diversity).
MAX_INDEXED_EXAMPLES = 8
#: At most this many nearest skills (by task) are checked for the same workflow.
WORKFLOW_NEIGHBOURS = 3


def normalized_code(code: str) -> str | None:
    """The code with its function name, docstrings and parameter/local names canonical.

    Two skills with equal normalized code do the same thing. None when ``code`` does not
    parse.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not functions:
        return None
    bound: dict[str, str] = {}
    for func in functions:
        bound.setdefault(func.name, f"_f{len(bound)}")
    for func in functions:
        for arg in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]:
            bound.setdefault(arg.arg, f"_v{len(bound)}")
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.setdefault(node.id, f"_v{len(bound)}")

    class Canonical(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
            node.name = bound.get(node.name, node.name)
            body = node.body
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                first.value.value, str
            ):
                body = body[1:] or [ast.Pass()]
            node.body = body
            node.returns = None
            self.generic_visit(node)
            return node

        def visit_arg(self, node: ast.arg) -> Any:
            node.arg = bound.get(node.arg, node.arg)
            node.annotation = None
            return node

        def visit_Name(self, node: ast.Name) -> Any:
            node.id = bound.get(node.id, node.id)
            return node

    return ast.unparse(Canonical().visit(tree))


def bindings_for(skill: Skill, candidate: Candidate, trace: Trace) -> dict[str, Any] | None:
    """Arguments for ``skill`` that reproduce ``trace``, by parameter name, or None."""
    schema = skill.parameters or {}
    args: dict[str, Any] = {}
    for name in schema.get("properties", {}):
        if name in candidate.example_args:
            args[name] = candidate.example_args[name]
        elif name in trace.params:
            args[name] = trace.params[name]
    if any(p not in args for p in schema.get("required", [])):
        return None
    return args


def as_candidate(skill: Skill, args: Mapping[str, Any]) -> Candidate:
    """A stored skill as a candidate that replays with ``args``."""
    return Candidate(
        name=skill.name,
        when=skill.when,
        description=skill.description,
        code=skill.code or "",
        parameters=skill.parameters or {"type": "object", "properties": {}},
        tools=list(skill.tools),
        depends_on=list(skill.depends_on),
        example_args=dict(args),
        generalizer=skill.provenance.generalizer,
        model=skill.provenance.model,
    )


def replays(
    skill: Skill,
    candidate: Candidate,
    trace: Trace,
    sandbox: "Sandbox",
    related: Sequence[Skill],
    read_only: frozenset[str] = frozenset(),
) -> VerificationReport | None:
    """The passing replay of ``trace`` by ``skill`` with the trace's bindings, else None."""
    if skill.kind != "code" or not skill.code:
        return None
    args = bindings_for(skill, candidate, trace)
    if args is None:
        return None
    report = replay_verify(as_candidate(skill, args), trace, sandbox, related=related,
                           read_only=read_only)
    return report if report.passed else None


def same_inputs(skill: Skill, candidate: Candidate) -> bool:
    """Whether ``skill`` takes the parameters ``candidate`` takes (the workflow's inputs)."""
    return set((skill.parameters or {}).get("properties", {})) == set(candidate.parameters.get("properties", {}))


def family(name: str, names: Sequence[str]) -> list[str]:
    """``name`` and the ``name_2``, ``name_3`` ... among ``names``."""
    pattern = re.compile(re.escape(name) + r"(_\d+)?")
    return [n for n in names if pattern.fullmatch(n)]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9{}_]+", text.lower()))


def choose_indexed(examples: Sequence[Example], cap: int = MAX_INDEXED_EXAMPLES) -> list[Example]:
    """``examples`` with ``indexed`` set on at most ``cap`` of distinct, diverse texts.

    Greedy farthest-point selection on word sets (Jaccard distance), oldest first, so the
    choice needs no model and is stable as examples arrive.
    """
    distinct: dict[str, int] = {}
    for n, example in enumerate(examples):
        distinct.setdefault(example.text, n)
    order = list(distinct.values())
    chosen: list[int] = []
    if len(order) <= cap:
        chosen = order
    else:
        words = {n: _word_set(examples[n].text) for n in order}
        chosen = [order[0]]
        while len(chosen) < cap:
            def distance(n: int) -> float:
                return min(
                    1 - len(words[n] & words[c]) / max(1, len(words[n] | words[c]))
                    for c in chosen
                )
            best = max((n for n in order if n not in chosen), key=distance)
            chosen.append(best)
    keep = set(chosen)
    return [e.model_copy(update={"indexed": n in keep}) for n, e in enumerate(examples)]


@dataclass
class Decision:
    """What admission decided for one candidate (before the writes)."""

    status: str
    skill: Skill | None = None  # the existing skill merged into / revised / duplicated
    candidate: Candidate | None = None  # the code to store (save / revise)
    report: VerificationReport | None = None
    reasons: list[str] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)  # example traces of a revision


def vocabulary(docs: Mapping[str, Any]) -> frozenset[str]:
    """The domain's words (its tools' names and declared summaries): capitalized, they are
    not names (:func:`skill_library.privacy.mask_names`)."""
    words: set[str] = set()
    for name, doc in docs.items():
        words.update(describe.words_of(name))
        words.update(w.casefold() for w in re.findall(r"[^\W\d_]{3,}", getattr(doc, "summary", "")))
    return frozenset(words)


def example_for(
    trace: Trace,
    candidate: Candidate,
    skill_params: Sequence[str] | None = None,
    *,
    vocabulary: Iterable[str] = (),
) -> Example:
    """The example of ``trace`` for a skill with ``candidate``'s bindings: its task through
    the one masking pass (:func:`skill_library.privacy.redact`): bound values as
    placeholders, every other value of the trace by its role, names and shapes masked,
    clauses about nothing the skill does dropped. A task that is all personal data gives
    the skill's own description."""
    bindings = dict(candidate.example_args)
    for name in skill_params or ():
        if name not in bindings and name in trace.params:
            bindings[name] = trace.params[name]
    objects = [v for c in trace.calls for v in c.arguments.values() if isinstance(v, str)]
    # what the skill is about: its own tools' words and objects (the domain's vocabulary
    # only keeps its words from being taken for names: "Your name is..." names no action)
    topic = description.topic_words([c.name for c in trace.calls], objects)
    known = privacy.trace_values(trace.params, trace.calls)
    text = privacy.redact(trace.task, bindings, known, topic=topic, vocabulary=vocabulary)
    if not text:
        text = candidate.when
    # the example keeps its values' shapes (for the index and value fit), not the values
    return Example(trace_id=trace.id, text=text,
                   params={k: privacy.shape_dummy(v) for k, v in bindings.items()})


def decide(
    candidate: Candidate,
    trace: Trace,
    *,
    report: VerificationReport,
    neighbours: Sequence[Skill],
    sandbox: "Sandbox",
    related: Sequence[Skill],
    min_reliability: float,
    example_traces: Callable[[Skill], list[Trace]],
    revise: Callable[[list[Trace], Skill], tuple[Candidate, VerificationReport] | None],
    same_task: Callable[[Skill], bool],
    read_only: frozenset[str] = frozenset(),
) -> Decision:
    """Merge, revise, duplicate or save: see the module docstring.

    ``neighbours`` are the skills that may be of the same workflow (the candidate's name
    family first, then the nearest by task); ``example_traces(skill)`` gives a skill's
    stored example traces; ``revise(traces, skill)`` builds and checks a joint candidate;
    ``same_task(skill)`` says whether the trace's task reads like the skill's.
    """
    mine = normalized_code(candidate.code)
    code_skills = [s for s in neighbours if s.kind == "code" and s.code]
    for skill in code_skills:
        if mine is not None and normalized_code(skill.code or "") == mine:
            return _merge_or_refuse(skill, report, "has the same code")
    for skill in code_skills:
        proof = replays(skill, candidate, trace, sandbox, related, read_only)
        if proof is not None:
            return _merge_or_refuse(skill, proof, "replays this trace")
    # a skill that reads alike but takes other inputs (an email, not a name and zip) under
    # another behaviour name is another workflow: neither revised into, nor replaced, nor a
    # reason to refuse; one of the candidate's own name (a parameter renamed between traces,
    # an optional argument) is the same workflow
    alike = [s for s in code_skills
             if same_task(s) and (same_inputs(s, candidate) or family(candidate.name, [s.name]))]
    base = [
        s for s in code_skills
        if (family(candidate.name, [s.name]) or s in alike) and s.status not in ("retired", "rejected")
    ]
    for skill in base:
        traces = example_traces(skill)
        if not traces:
            continue  # hand-written: nothing to revise against
        # every example trace is passed: the revision replays a bounded, diverse sample of
        # them (settings.REVISION_SAMPLE) and all of them remain the new version's evidence
        revised = revise([*traces, trace], skill)
        if revised is not None:
            joint, joint_report = revised
            return Decision("revised", skill=skill, candidate=joint, report=joint_report,
                            traces=[*traces, trace])
        if skill.reliability < min_reliability:
            return Decision(
                "revised", skill=skill, candidate=candidate, report=report, traces=[trace],
                reasons=[f"{skill.name!r} v{skill.version} had dropped out (reliability "
                         f"{skill.reliability:.2f}) and no version replays all its examples; "
                         "the new version is learned from this trace"],
            )
    for skill in code_skills:
        if skill.status == "active" and skill.reliability >= min_reliability and skill in alike:
            return Decision(
                "duplicate", skill=skill, report=report,
                reasons=[f"{skill.name!r} v{skill.version} already does this "
                         f"(reliability {skill.reliability:.2f})"],
            )
    return Decision("saved", candidate=candidate, report=report)


def _merge_or_refuse(skill: Skill, report: VerificationReport, why: str) -> Decision:
    if skill.status in ("retired", "rejected"):
        return Decision(
            "rejected", skill=skill, report=report,
            reasons=[f"skill {skill.name!r} for this workflow was {skill.status}; learning does "
                     "not revive it (add or propose a new version explicitly to do so)"],
        )
    return Decision("merged", skill=skill, report=report,
                    reasons=[f"{skill.name!r} v{skill.version} {why}"])
