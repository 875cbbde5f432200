"""``SkillLibrary``: the facade agents and the CLI use.

Data flows one way: trace -> generalizer -> verifier -> record store + vector index ->
fetch -> sandbox run -> outcome -> record store. The record store is the truth; the vector
index is derived and rebuilt from it whenever it is missing, damaged or out of step.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from skill_library import ranking
from skill_library.embeddings import Embedder, SentenceTransformerEmbedder
from skill_library.errors import SkillLibraryError, SkillNotFoundError
from skill_library.models import (
    AddResult,
    LearnResult,
    Match,
    Outcome,
    Skill,
    SkillKind,
    SkillRun,
    SkillStatus,
    ToolCall,
    Trace,
)
from skill_library.index_sync import IndexRebuiltWarning, SyncedIndex
from skill_library.record_store import RecordStore, SQLRecordStore
from skill_library.vector_index import VectorIndex, entries_for

if TYPE_CHECKING:
    from sandbox import Limits, Sandbox

    from skill_library.induction import Generalizer

__all__ = ["IndexRebuiltWarning", "SkillLibrary"]

DUPLICATE_SIMILARITY = 0.9
DEFAULT_MIN_RELIABILITY = 0.6


class SkillLibrary:
    """A folder of versioned, verified skills: records in SQLite, ``when`` vectors in Chroma.

    ``SkillLibrary(path)`` opens or creates the library in ``path``. ``embedder`` defaults
    to the packaged all-MiniLM-L6-v2 (loaded on first need); ``min_reliability`` is the
    fetch threshold on Laplace reliability.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        min_reliability: float = DEFAULT_MIN_RELIABILITY,
        store: RecordStore | None = None,
    ) -> None:
        if not 0.0 <= min_reliability <= 1.0:
            raise ValueError(f"min_reliability must be within [0, 1], got {min_reliability}")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.min_reliability = min_reliability
        self.embedder: Embedder = embedder or SentenceTransformerEmbedder()
        self.store: RecordStore = store or SQLRecordStore.in_folder(self.path)
        self._index = SyncedIndex(self.path, self.store, self.embedder)
        self._sandbox: Sandbox | None = None
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "SkillLibrary":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox workers and release the stores."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._sandbox is not None:
                self._sandbox.close()
        finally:
            try:
                self._index.close()
            finally:
                self.store.close()

    @property
    def index_path(self) -> Path:
        """Folder of the derived Chroma index."""
        return self.path / "chroma"

    @property
    def index(self) -> VectorIndex:
        """The vector index, (re)opened and checked against the records when needed."""
        return self._index.current()

    # -- skills -------------------------------------------------------------------------
    def add(self, skill: Skill, *, verified: bool = False) -> AddResult:
        """Store ``skill`` as a new active version (version 1 for a new name).

        A hand-written skill starts with no outcomes (reliability 0.5); ``verified=True``
        counts one success, for a skill proven on a verified trace. When another active
        skill's ``when`` is more than 0.9 cosine-similar, nothing is stored and the result
        names it in ``duplicate_of``.
        """
        if not isinstance(skill, Skill):
            raise TypeError(f"add() takes a Skill, got {type(skill).__name__}")
        _check_addable(skill)
        embedding = self.embedder.embed([skill.when])[0]
        with self._index.writing() as index:
            duplicate = self._duplicate_of(embedding, skill.name, index)
            if duplicate is not None:
                return AddResult(
                    status="duplicate", duplicate_of=duplicate[0], similarity=duplicate[1]
                )
            stored = self.store.add_version(skill, initial_success=verified)
            index.upsert(entries_for([stored]), [embedding])
        return AddResult(status="added", skill=stored)

    def add_many(
        self,
        skills: Sequence[Skill],
        *,
        verified: bool = False,
        progress: bool = False,
    ) -> list[AddResult]:
        """:meth:`add` for many skills at once, with batched embedding and index writes.

        Duplicates are checked against the index and against earlier skills of the same
        batch; results come back in input order.
        """
        import numpy as np

        for skill in skills:
            if not isinstance(skill, Skill):
                raise TypeError(f"add_many() takes Skills, got {type(skill).__name__}")
            _check_addable(skill)
        results: list[AddResult] = []
        batch_size = 256
        bar = _ProgressBar(progress, "adding skills", len(skills))
        with bar, self._index.writing() as index:
            for start in range(0, len(skills), batch_size):
                batch = skills[start : start + batch_size]
                vectors = self.embedder.embed([s.when for s in batch])
                neighbours = index.query_many(vectors, min(2, index.count()))
                # Earlier batches are in the index already; this batch is checked in memory.
                accepted: list[tuple[Skill, list[float]]] = []
                accepted_names: list[str] = []
                accepted_vectors = np.empty((len(batch), len(vectors[0]) if vectors else 0))
                verdicts: list[tuple[str, float] | None] = []
                for skill, vector, hits in zip(batch, vectors, neighbours):
                    duplicate = next(
                        (
                            (h.name, h.similarity)
                            for h in hits
                            if h.name != skill.name and h.similarity > DUPLICATE_SIMILARITY
                        ),
                        None,
                    )
                    if duplicate is None and accepted_names:
                        sims = accepted_vectors[: len(accepted_names)] @ np.asarray(vector)
                        best = int(np.argmax(sims))
                        if sims[best] > DUPLICATE_SIMILARITY and accepted_names[best] != skill.name:
                            duplicate = (accepted_names[best], float(sims[best]))
                    verdicts.append(duplicate)
                    if duplicate is None:
                        accepted_vectors[len(accepted_names)] = vector
                        accepted.append((skill, vector))
                        accepted_names.append(skill.name)
                saved = iter(self.store.add_versions([s for s, _ in accepted], initial_success=verified))
                for duplicate in verdicts:
                    if duplicate is None:
                        results.append(AddResult(status="added", skill=next(saved)))
                    else:
                        results.append(
                            AddResult(status="duplicate", duplicate_of=duplicate[0], similarity=duplicate[1])
                        )
                # one index entry per name: a name added twice in a batch keeps its newest
                latest: dict[str, tuple[Skill, list[float]]] = {}
                for result, (_, vector) in zip(
                    [r for r in results[-len(batch):] if r.skill is not None], accepted
                ):
                    assert result.skill is not None
                    latest[result.skill.name] = (result.skill, vector)
                index.upsert(
                    entries_for([s for s, _ in latest.values()]),
                    [v for _, v in latest.values()],
                )
                bar.advance(len(batch))
        return results

    def _duplicate_of(
        self, embedding: Sequence[float], name: str, index: VectorIndex
    ) -> tuple[str, float] | None:
        for hit in index.query(embedding, min(2, index.count())):
            if hit.name != name and hit.similarity > DUPLICATE_SIMILARITY:
                return hit.name, hit.similarity
        return None

    def get(self, name: str, version: int | None = None) -> Skill:
        """A skill's active version (or ``version``) with its outcome counts."""
        return self.store.get(name, version)

    def list(self, *, status: SkillStatus | None = None) -> list[Skill]:
        """The current version of every skill (optionally only those with ``status``)."""
        return self.store.list(status=status)

    def history(self, name: str) -> list[Skill]:
        """Every version of ``name``, oldest first, each with its own counts."""
        return self.store.history(name)

    def outcomes(self, name: str) -> list[dict[str, Any]]:
        """The append-only outcome log of ``name`` (all versions), oldest first."""
        return self.store.outcome_log(name)

    def retire(self, name: str) -> Skill:
        """Retire a skill: it stays in the records but is never fetched again."""
        with self._index.writing() as index:
            skill = self.store.set_status(name, "retired")
            index.delete(name)
        return skill

    def reindex(self, *, progress: bool = False) -> int:
        """Rebuild the vector index from the records; returns how many skills it holds."""
        with _ProgressBar(progress, "embedding skills", len(self.store.list(status="active"))) as bar:
            return self._index.rebuild(progress=bar.advance)

    # -- fetch and feedback -------------------------------------------------------------
    def fetch(
        self,
        task: str,
        k: int = 2,
        *,
        min_reliability: float | None = None,
        kinds: Sequence[SkillKind] | None = None,
    ) -> list[Match]:
        """The ``k`` best skills for ``task``: active, reliability >= the threshold,
        ordered by cosine similarity of ``task`` to their ``when``, ties by reliability
        then name."""
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if not isinstance(task, str) or not task.strip():
            raise ValueError("task must be a non-empty string")
        threshold = self.min_reliability if min_reliability is None else min_reliability
        wanted_kinds = set(kinds) if kinds is not None else None
        index = self.index
        embedding = self.embedder.embed([task])[0]
        n = max(4 * k, k + 8)
        while True:
            found = index.query(embedding, n)  # fewer than n: the index has no more
            hits = [h for h in found if wanted_kinds is None or h.kind in wanted_kinds]
            records = self.store.get_many([(h.name, h.version) for h in hits])
            matches = []
            for hit in hits:
                skill = records.get((hit.name, hit.version))
                if skill is not None and ranking.qualifies(skill, threshold):
                    matches.append(ranking.make_match(skill, hit.similarity))
            if len(matches) >= k or len(found) < n:
                return ranking.rank(matches)[:k]
            n *= 4

    def feedback(
        self,
        name: str,
        succeeded: bool,
        *,
        version: int | None = None,
        trace_id: str | None = None,
    ) -> Skill:
        """Append one outcome for ``name`` (default: its active version)."""
        if not isinstance(succeeded, bool):
            raise TypeError(f"succeeded must be a bool, got {type(succeeded).__name__}")
        return self.store.record_outcome(name, succeeded, version=version, trace_id=trace_id)

    # -- learning -----------------------------------------------------------------------
    @property
    def sandbox(self) -> "Sandbox":
        """The sandbox skills run in (started on first use, closed with the library)."""
        if self._sandbox is None:
            from sandbox import Sandbox

            self._sandbox = Sandbox(workers=1)
        return self._sandbox

    def default_generalizer(self) -> "Generalizer":
        """The LLM generalizer when an endpoint is configured, else the offline one."""
        from skill_library.induction import DataflowGeneralizer, LLMGeneralizer

        return LLMGeneralizer.from_env() or DataflowGeneralizer()

    def learn(
        self,
        trace: Trace | Mapping[str, Any],
        *,
        generalizer: "Generalizer | None" = None,
        verifier: Callable[..., Any] | None = None,
    ) -> LearnResult:
        """Turn a verified successful trace into a stored, re-verified skill.

        The candidate is replayed against the trace in the sandbox before it is saved;
        ``verifier`` is an optional extra live check. ``trace`` may also be a mapping of
        trace fields or ``{"messages": [...], "task": ..., "outcome": ...}`` (an OpenAI
        transcript). Returns status ``saved``, ``duplicate`` (an equivalent skill exists)
        or ``rejected`` (with reasons; a malformed or unverified trace stores nothing).
        """
        from skill_library.induction import check_trace, coerce_trace, learn_from_trace

        checked, reasons = coerce_trace(trace)  # a Trace, its fields, or an OpenAI transcript
        if checked is None or (reasons := check_trace(checked)):
            return LearnResult(status="rejected", reasons=reasons)
        trace = checked
        related = self._related_skills(trace)
        candidate, report, reasons = learn_from_trace(
            trace,
            generalizer=generalizer or self.default_generalizer(),
            sandbox=self.sandbox,
            related=related,
            live_verifier=verifier,
        )
        if reasons or candidate is None:
            return LearnResult(status="rejected", reasons=reasons, report=report)
        skill = candidate.to_skill(trace_ids=[trace.id])
        try:
            existing = self.store.get(skill.name)
        except SkillNotFoundError:
            existing = None
        if existing is not None:
            if not self._same_workflow(existing, skill):
                skill = _renamed(skill, self._free_name(skill.name))
            elif existing.status == "retired":
                return LearnResult(
                    status="rejected",
                    report=report,
                    reasons=[
                        f"skill {existing.name!r} for this workflow was retired; learning does "
                        "not revive it (add a new version explicitly to do so)"
                    ],
                )
            elif existing.code == skill.code or existing.reliability >= self.min_reliability:
                # same procedure, or a different one while the stored one still works:
                # keep the proven version rather than restart its record from one trace
                return LearnResult(
                    status="duplicate",
                    skill=existing,
                    report=report,
                    duplicate_of=existing.name,
                    reasons=[
                        f"{existing.name!r} v{existing.version} already does this "
                        f"(reliability {existing.reliability:.2f})"
                    ],
                )
            # else: the stored version stopped working; the new one becomes the next version
        self.store.save_trace(trace)
        added = self.add(skill, verified=True)
        if not added.added:
            return LearnResult(
                status="duplicate",
                skill=self.store.get(added.duplicate_of) if added.duplicate_of else None,
                report=report,
                duplicate_of=added.duplicate_of,
                reasons=[f"an active skill with a {added.similarity:.3f}-similar `when` exists"],
            )
        return LearnResult(status="saved", skill=added.skill, report=report)

    def _related_skills(self, trace: Trace) -> list[Skill]:
        """Skills the trace invoked, plus the nearest fetchable skills to its task."""
        related: dict[str, Skill] = {}
        for call in trace.calls:
            if call.kind == "skill" and call.name not in related:
                try:
                    related[call.name] = self.store.get(call.name)
                except SkillNotFoundError:
                    pass
        if self.index.count():
            for match in self.fetch(trace.task, k=3):
                related.setdefault(match.skill.name, match.skill)
        return list(related.values())

    def _same_workflow(self, existing: Skill, new: Skill) -> bool:
        a, b = self.embedder.embed([existing.when, new.when])
        return sum(x * y for x, y in zip(a, b)) > DUPLICATE_SIMILARITY

    def _free_name(self, name: str) -> str:
        taken = {s.name for s in self.store.list()}
        suffix = 2
        while f"{name}_{suffix}" in taken:
            suffix += 1
        return f"{name}_{suffix}"

    # -- running ------------------------------------------------------------------------
    def run(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        limits: "Limits | None" = None,
        verifier: Callable[[SkillRun], bool] | None = None,
        record: bool = True,
    ) -> SkillRun:
        """Run the active version of ``name`` in the sandbox with its dependencies.

        Only the tools the skill (and its dependencies) declare are reachable, and a tool
        schema that does not say otherwise admits only the arguments it lists. The calls
        it makes come back as a new, stored :class:`Trace`. An exception or a limit hit
        records a failure; a success is recorded by ``verifier`` (when given) or later
        through :meth:`feedback`. ``record=False`` writes nothing (no trace, no outcome),
        for evaluating a frozen library.
        """
        skill = self.get(name)
        if skill.kind != "code" or not skill.code:
            raise SkillLibraryError(f"skill {name!r} is an instruction skill and cannot be run")
        if skill.status != "active":
            raise SkillLibraryError(f"skill {name!r} is {skill.status}; only active skills run")
        args = dict(args or {})
        _check_args(skill, args)
        sources, declared = self._closure(skill)
        provided = dict(tools or {})
        allowed = {t: provided[t] for t in declared if t in provided}
        # closed by default: a skill may not pass arguments a tool's schema does not list
        schemas = {
            t: {**s, "additionalProperties": s.get("additionalProperties", False)}
            for t, s in (tool_schemas or {}).items()
            if t in allowed
        }
        result = self.sandbox.run(
            sources,
            entry=skill.name,
            args=args,
            tools=allowed,
            tool_schemas=schemas or None,
            limits=limits,
        )
        calls = [
            ToolCall(
                name=c.name,
                arguments=c.arguments,
                result=c.result,
                error=c.error,
                duration_ms=c.duration_ms,
            )
            for c in result.calls
        ]
        error = None
        if not result.ok and result.error is not None:
            where = f" (line {result.error.line})" if result.error.line else ""
            error = f"{result.error.type}: {result.error.message}{where}"
        trace = Trace(
            task=_task_text(skill, args),
            params=args,
            calls=calls,
            result=result.value if result.ok else None,
            source=f"skill:{skill.name}@{skill.version}",
        )
        run = SkillRun(
            name=skill.name,
            version=skill.version,
            ok=result.ok,
            value=result.value if result.ok else None,
            error=error,
            limit=result.limit,
            stdout=result.stdout,
            duration_ms=result.duration_ms,
            trace=trace,
        )
        if not result.ok:
            outcome = Outcome(success=False, verifier="sandbox", evidence=error)
        elif verifier is not None:
            judge = getattr(verifier, "__name__", "verifier")
            try:
                outcome = Outcome(success=bool(verifier(run)), verifier=judge)
            except Exception as exc:  # a verifier that cannot judge counts as a failure
                outcome = Outcome(
                    success=False, verifier=judge, evidence=f"verifier raised {type(exc).__name__}: {exc}"
                )
        else:
            outcome = None
        trace = trace.model_copy(update={"outcome": outcome})
        run = run.model_copy(update={"trace": trace})
        if not record:
            return run
        self.store.save_trace(trace)
        if outcome is not None:
            self.store.record_outcome(
                skill.name, outcome.success, version=skill.version, trace_id=trace.id
            )
        return run

    def _closure(self, skill: Skill) -> tuple[list[str], list[str]]:
        """Sources of ``skill`` and its dependencies, and every tool they declare."""
        sources: list[str] = []
        tools: list[str] = []
        seen: set[str] = set()
        stack = [skill]
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            if current.code:
                sources.append(current.code)
            tools.extend(t for t in current.tools if t not in tools)
            for dep in current.depends_on:
                if dep not in seen:
                    try:
                        dep_skill = self.get(dep)
                    except SkillNotFoundError:
                        raise SkillLibraryError(
                            f"skill {current.name!r} depends on {dep!r}, which does not exist"
                        ) from None
                    stack.append(dep_skill)
        return sources, tools

    # -- integrations: thin delegates to skill_library.integrations ---------------------
    def render(self, matches: Sequence[Match], *, max_tokens: int = 800) -> str:
        """The planner's prompt block for ``matches``, cut to ``max_tokens`` (estimated as
        characters / 4): see :func:`skill_library.integrations.prompt_block.render`."""
        from skill_library.integrations import prompt_block

        examples = prompt_block.recorded_examples(matches, self.store.get_trace)
        return prompt_block.render(matches, max_tokens=max_tokens, examples=examples)

    def as_openai_tools(self, matches: Sequence[Match], *, api: str = "chat") -> list[dict[str, Any]]:
        """OpenAI function tools (``api="chat"`` or ``"responses"``) for the code skills."""
        from skill_library.integrations.openai_tools import as_openai_tools

        return as_openai_tools(matches, api=api)  # type: ignore[arg-type]

    def dispatch(
        self, tool_call: Any, tools: Mapping[str, Callable[..., Any]] | None = None, **run_options: Any
    ) -> dict[str, Any]:
        """Run the skill a model called; returns the ``tool`` message (``.run`` is the run)."""
        from skill_library.integrations.openai_tools import dispatch

        return dispatch(self, tool_call, tools, **run_options)

    def import_draft(self, skill: Skill) -> Skill:
        """Store ``skill`` as an unverified draft version: never indexed, fetched or run."""
        if skill.successes or skill.failures:
            raise ValueError(f"successes/failures: a draft starts with no outcomes; {skill.name!r} has some")
        return self.store.add_version(skill, status="draft")


def _check_addable(skill: Skill) -> None:
    if skill.status != "active":
        raise ValueError(
            f"status: add() stores active versions; {skill.name!r} has status {skill.status!r}"
        )
    if skill.successes or skill.failures:
        raise ValueError(
            f"successes/failures: a new version starts with no outcomes; {skill.name!r} carries "
            f"{skill.successes}/{skill.failures} (use verified=True or feedback())"
        )


def _check_args(skill: Skill, args: dict[str, Any]) -> None:
    properties = (skill.parameters or {}).get("properties", {})
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise ValueError(f"skill {skill.name!r} has no parameter(s) {', '.join(unknown)}")
    missing = [p for p in (skill.parameters or {}).get("required", []) if p not in args]
    if missing:
        raise ValueError(f"skill {skill.name!r} needs argument(s) {', '.join(missing)}")


_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _task_text(skill: Skill, args: Mapping[str, Any]) -> str:
    """``skill.when`` with each ``{name}`` placeholder replaced by that argument's value.

    Plain substitution, not ``str.format``: ``when`` may come from a model and may hold
    any braces (``{x[0]}``, ``{x.__class__}``), which must neither raise nor reach into
    the arguments' attributes.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in args:
            return match.group(0)
        found = args[name]
        return found if isinstance(found, str) else json.dumps(found, default=str)

    return _PLACEHOLDER_RE.sub(value, skill.when)


def _renamed(skill: Skill, new_name: str) -> Skill:
    """``skill`` under another name: its function definition is renamed too."""
    assert skill.code is not None
    tree = ast.parse(skill.code)
    lines = skill.code.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == skill.name:
            row = node.lineno - 1
            lines[row] = lines[row].replace(f"def {skill.name}(", f"def {new_name}(", 1)
    data = skill.model_dump()
    data.update(name=new_name, code="".join(lines))
    return Skill.model_validate(data)


class _ProgressBar:
    """A rich progress bar when ``enabled`` (and there is work), otherwise a no-op."""

    def __init__(self, enabled: bool, label: str, total: int) -> None:
        self._bar: Any = None
        if enabled and total:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._task = self._bar.add_task(label, total=total)

    def __enter__(self) -> "_ProgressBar":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)
