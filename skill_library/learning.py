"""The learning pipeline behind ``SkillLibrary.learn`` and ``learn_many``.

A batch of traces is checked, its tasks embedded at once, each trace generalized and
replayed, its masked example texts embedded at once, and then each candidate is admitted
(merged, revised, duplicate or saved: :mod:`skill_library.induction.admission`) under the
library's write lock, the index written once per batch. Functions take the library they
work for; the facade delegates here.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skill_library import erasure, fetching, prototypes, settings
from skill_library.errors import SkillNotFoundError
from skill_library.induction import describe, description
from skill_library.models import LearnResult, Skill, Trace
from skill_library.text_vectors import pack
from skill_library.vector_index import VectorIndex, best_per_skill

if TYPE_CHECKING:
    from sandbox import Limits
    from skill_library.induction import Generalizer
    from skill_library.library import SkillLibrary

#: How many nearest fetchable skills a learned candidate may call (besides those the trace
#: invoked).
RELATED_SKILLS = 3
#: Index entries read when looking for a skill of the same workflow as a new trace.
WORKFLOW_QUERY_ENTRIES = 24
#: Statuses whose trace is kept as a skill's evidence (its task vector is stored for the
#: skill's prototype: skill_library.prototypes).
EVIDENCE_STATUSES = frozenset({"saved", "merged", "revised", "held"})


def learn_batch(
    lib: "SkillLibrary",
    items: Sequence[Trace | Mapping[str, Any]],
    generalizer: "Generalizer",
    verifier: Callable[..., Any] | None,
    limits: "Limits | None" = None,
    *,
    split_parts: bool = True,
) -> builtins.list[LearnResult]:
    from skill_library.induction import admission, check_trace, coerce_trace, learn_from_trace
    from skill_library.induction import parts as compound

    out: builtins.list[LearnResult | None] = [None] * len(items)
    checked: dict[int, Trace] = {}
    for n, item in enumerate(items):
        trace, reasons = coerce_trace(item)  # a Trace, its fields, or an OpenAI transcript
        if trace is None or (reasons := check_trace(trace)):
            out[n] = LearnResult(status="rejected", reasons=reasons)
        else:
            checked[n] = trace.identified()  # no id given: the hash of its content
    for n, result in already_learned(lib, checked).items():  # idempotent: evidence counts once
        out[n] = result
        del checked[n]
    for n, result in erasure.forgotten(lib, checked).items():  # erased by forget: never again
        out[n] = result
        del checked[n]
    if split_parts:  # a compound trace is learned as the workflows it combines
        split = {n: found for n, t in checked.items()
                 if (found := compound.split(t, lib.read_only_tools))}
        if split:
            flat = [p for found in split.values() for p in found]
            results = iter(learn_batch(lib, flat, generalizer, verifier, limits, split_parts=False))
            for n, found in split.items():
                out[n] = combined([next(results) for _ in found])
                del checked[n]
    if not checked:
        return [r for r in out if r is not None]
    vectors = dict(zip(checked, lib.embedder.embed(
        [description.query_text(t.task) for t in checked.values()]
    )))
    prepared: dict[int, tuple[Any, Any, builtins.list[Skill]]] = {}
    docs = describe.tool_docs(lib.tool_specs())
    vocabulary = admission.vocabulary(docs)
    index = lib.index
    indexed = index.count() > 0
    for n, trace in checked.items():
        related = related_skills(lib, trace, vectors[n], index if indexed else None)
        candidate, report, reasons = learn_from_trace(
            trace, generalizer=generalizer, sandbox=lib.sandbox, related=related,
            live_verifier=verifier, read_only=lib.read_only_tools, limits=limits,
            tool_docs=docs,
        )
        if reasons or candidate is None or report is None:
            out[n] = LearnResult(status="rejected", reasons=reasons, report=report)
        else:
            prepared[n] = (candidate, report, related)
    examples = {n: admission.example_for(checked[n], c, vocabulary=vocabulary)
                for n, (c, _r, _rel) in prepared.items()}
    texts = {n: description.index_text(e.text, e.params) for n, e in examples.items()}
    unique = list(dict.fromkeys(texts.values()))
    known = dict(zip(unique, lib.context.vectors.embed(unique))) if unique else {}
    if prepared:
        with lib.context.index.writing() as index:
            pending: set[str] = set()  # skills whose index entries are written at the end
            for n, (candidate, report, related) in prepared.items():
                out[n] = admit(lib, candidate, report, checked[n], related, generalizer,
                               index, known, pending, docs=docs, vocabulary=vocabulary)
            # the task vectors of the traces kept as evidence: the skills' prototypes
            prototypes.save(lib.store, lib.embedder.model_name, {
                checked[n].id: pack(vectors[n]) for n in prepared
                if (r := out[n]) is not None and r.status in EVIDENCE_STATUSES
            })
            lib.context.sync(index, sorted(pending), known=known)
    return [r for r in out if r is not None]

def after_learning(lib: "SkillLibrary", results: Sequence[LearnResult]) -> None:
    """After traces were learned: re-mine the preconditions when any was kept as evidence
    (a look-alike's new traces can add, change or remove a condition)."""
    from skill_library.induction import preconditions

    if any(r.status in EVIDENCE_STATUSES for r in results):
        preconditions.refresh(lib)


def already_learned(lib: "SkillLibrary", traces: Mapping[int, Trace]) -> dict[int, LearnResult]:
    """The traces (by position) that are stored already or repeat an earlier one of the
    batch: each a ``duplicate`` naming the skill it is evidence of, where known."""
    stored = lib.store.known_traces([t.id for t in traces.values()])
    seen: set[str] = set()
    found: dict[int, LearnResult] = {}
    for n, trace in traces.items():
        if trace.id in stored or trace.id in seen:
            earlier = lib.store.trace_outcome(trace.id) if trace.id in stored else None
            found[n] = LearnResult(status="duplicate", duplicate_of=earlier["name"] if earlier else None, reasons=[
                f"trace {trace.id} was learned before (same task, params, calls and outcome): nothing added"])
        seen.add(trace.id)
    return found


def admit(
    lib: "SkillLibrary",
    candidate: Any,
    report: Any,
    trace: Trace,
    related: builtins.list[Skill],
    generalizer: Any,
    index: VectorIndex,
    known: dict[str, Any],
    pending: set[str],
    *,
    docs: Mapping[str, Any] | None = None,
    vocabulary: frozenset[str] = frozenset(),
) -> LearnResult:
    """Under the write lock: decide merge / revise / save and write the records; the
    names whose index entries must change are added to ``pending``."""
    from skill_library.governance import learned as governed
    from skill_library.induction import admission, revision

    names = lib.store.names(prefix=candidate.name)
    # the trace's task with its values masked, as it would be stored: what reads alike
    # is compared on what the workflow asks, not on who asked
    example = admission.example_for(trace, candidate, vocabulary=vocabulary)
    example_text = description.index_text(example.text, example.params)
    if example_text not in known:
        known[example_text] = lib.context.vectors.embed([example_text])[0]
    near = {h.name: h.similarity for h in best_per_skill(
        index.query(known[example_text], WORKFLOW_QUERY_ENTRIES)
    )[: admission.WORKFLOW_NEIGHBOURS]} if index.count() else {}
    wanted = list(dict.fromkeys([*admission.family(candidate.name, names), *near]))
    found = lib.store.get_many_active(wanted)
    # a draft (imported, not yet verified) is no evidence of a workflow: never merged into
    neighbours = [found[n] for n in wanted if n in found and found[n].status != "draft"]
    # a held revision leaves the active version current: evidence merged meanwhile is its
    evidence = lib.store.examples([s.name for s in neighbours])

    def example_traces(skill: Skill) -> builtins.list[Trace]:
        found = []
        for example in evidence[skill.name]:
            try:
                found.append(lib.store.get_trace(example.trace_id))
            except KeyError:
                continue
        return found

    def revise(traces: builtins.list[Trace], skill: Skill) -> Any:
        return revision.revise(
            traces, generalizer=generalizer, sandbox=lib.sandbox,
            related=[r for r in related if r.name != skill.name], extra=[candidate],
            read_only=lib.read_only_tools, tool_docs=docs,
        )

    for skill in neighbours:
        if any(e.trace_id == trace.id for e in evidence[skill.name]):
            return LearnResult(
                status="duplicate", skill=skill, report=report, duplicate_of=skill.name,
                reasons=[f"trace {trace.id} is already evidence for {skill.name!r}"],
            )
    decision = admission.decide(
        candidate, trace, report=report, neighbours=neighbours, sandbox=lib.sandbox,
        related=related, min_reliability=lib.min_reliability,
        example_traces=example_traces, revise=revise,
        same_task=lambda s: near.get(s.name, 0.0) > settings.DUPLICATE_SIMILARITY,
        read_only=lib.read_only_tools,
    )
    if decision.status in ("duplicate", "rejected"):
        return LearnResult(
            status=decision.status, skill=decision.skill, report=decision.report,  # type: ignore[arg-type]
            reasons=decision.reasons,
            duplicate_of=decision.skill.name if decision.status == "duplicate" and decision.skill else None,
        )
    if decision.status == "merged":
        assert decision.skill is not None
        skill = decision.skill
        params = list((skill.parameters or {}).get("properties", {}))
        examples = evidence[skill.name]
        examples = admission.choose_indexed(
            [*examples, admission.example_for(trace, candidate, params, vocabulary=vocabulary)]
        )
        stored = lib.store.save_evidence(
            skill.name, version=skill.version, trace=trace, success=True, examples=examples,
        )
        pending.add(stored.name)
        return LearnResult(status="merged", skill=stored, report=decision.report,
                           reasons=decision.reasons)
    new = decision.candidate
    assert new is not None
    if decision.status == "revised":
        assert decision.skill is not None
        old = decision.skill
        examples = [] if len(decision.traces) == 1 else evidence[old.name]
        version = _renamed(new.to_skill(trace_ids=[t.id for t in decision.traces]), old.name)
    else:
        examples = []
        version = new.to_skill(trace_ids=[trace.id])
        if version.name in names:
            version = _renamed(version, free_name(lib, version.name, names))
        names.append(version.name)
    params = list((version.parameters or {}).get("properties", {}))
    examples = admission.choose_indexed(
        [*examples, admission.example_for(trace, new, params, vocabulary=vocabulary)])
    lib.store.save_trace(trace)
    admitted = governed.admit_learned(lib, version, trace, decision.report)
    stored = admitted.skill
    if admitted.activated or not admitted.revision:
        stored = lib.store.save_evidence(
            stored.name, version=stored.version, trace=trace, success=True, examples=examples,
        )
    else:  # a held revision: the active version keeps its examples and its when
        stored = lib.store.save_evidence(stored.name, version=stored.version, trace=trace, success=True)
    pending.add(stored.name)
    if not admitted.activated:
        return LearnResult(status="held", skill=stored, report=decision.report,
                           reasons=[*admitted.reasons, *decision.reasons])
    return LearnResult(status=decision.status, skill=stored, report=decision.report,  # type: ignore[arg-type]
                       reasons=decision.reasons)

def combined(results: Sequence[LearnResult]) -> LearnResult:
    """One result for a compound trace learned as ``results`` (its parts, in order)."""
    stored = [r for r in results if r.status in EVIDENCE_STATUSES]
    lead = stored[0] if stored else results[0]
    reasons = [f"learned as {len(results)} parts: "
               + ", ".join(f"{r.status} {r.skill.name if r.skill else ''}".strip() for r in results)]
    return LearnResult(status=lead.status, skill=lead.skill, report=lead.report,
                       duplicate_of=lead.duplicate_of, reasons=reasons + lead.reasons,
                       parts=list(results))


def related_skills(
    lib: "SkillLibrary", trace: Trace, task_vector: Sequence[float], index: VectorIndex | None
) -> builtins.list[Skill]:
    """Skills the trace invoked, plus the nearest fetchable skills to its task."""
    related: dict[str, Skill] = {}
    for call in trace.calls:
        if call.kind == "skill" and call.name not in related:
            try:
                related[call.name] = lib.store.get(call.name)
            except SkillNotFoundError:
                pass
    if index is not None:
        for match in fetching.search(lib, task_vector, RELATED_SKILLS, lib.min_reliability,
                                   None, index):
            related.setdefault(match.skill.name, match.skill)
    return list(related.values())

def free_name(
    lib: "SkillLibrary", name: str, taken: Sequence[str] | None = None) -> str:
    used = set(taken if taken is not None else [s.name for s in lib.store.list()])
    suffix = 2
    while f"{name}_{suffix}" in used:
        suffix += 1
    return f"{name}_{suffix}"


def _renamed(skill: Skill, new_name: str) -> Skill:
    """``skill`` under another name: its function definition is renamed too."""
    assert skill.code is not None
    tree = ast.parse(skill.code)
    lines = skill.code.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == skill.name:
            row = node.lineno - 1
            lines[row] = lines[row].replace(f"def {skill.name}(", f"def {new_name}(", 1)
    if new_name == skill.name:
        return skill
    data = skill.model_dump()
    data.update(name=new_name, code="".join(lines))
    return Skill.model_validate(data)
