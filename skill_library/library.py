"""``SkillLibrary``: the facade agents and the CLI use.

Data flows one way: trace -> generalizer -> verifier -> record store + vector index ->
fetch -> sandbox run -> outcome -> record store. The record store is the truth; the vector
index is derived and rebuilt from it whenever it is missing, damaged or out of step.
"""

from __future__ import annotations

import builtins
import os
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Sequence, get_args

from skill_library import opening, settings, telemetry
from skill_library import uplift as holdout
from skill_library.context import TenantContext
from skill_library.deprecation import deprecated, renamed_argument
from skill_library.embeddings import Embedder
from skill_library.governance import Actor, ActorRegistry, Policy, ToolSpec
from skill_library.governance_calls import GovernanceCalls
from skill_library.index_sync import IndexRebuiltWarning, SyncedIndex
from skill_library.models import (
    AddResult,
    Example,
    LearnResult,
    Match,
    OutcomeKind,
    Skill,
    SkillKind,
    SkillRun,
    SkillStatus,
    Trace,
)
from skill_library.procedures.core import DEFAULT_CONFIDENCE, PROMPT_LIMIT, PROMPT_THRESHOLD
from skill_library.progress import ProgressBar
from skill_library.record_store import RecordStore
from skill_library.tenancy import DEFAULT_TENANT
from skill_library.text_vectors import StoredVectors
from skill_library.vector_index import VectorIndex

if TYPE_CHECKING:
    #: skill_library.settings.LEARN_BATCH and ADD_BATCH (read and written there)
    LEARN_BATCH: int
    ADD_BATCH: int

    from sandbox import Limits, Sandbox
    from skill_library.abstention import Calibration, FetchResult
    from skill_library.induction import Generalizer
    from skill_library.induction.revision import SkillCheck
    from skill_library.patterns import Patterns
    from skill_library.planning import Plan, PlanRun
    from skill_library.procedures import Extraction, Procedures
    from skill_library.redaction import RedactionReport
    from skill_library.uplift import Uplift, UpliftSettings
    from skill_library.vector_index import IndexServer

__all__ = ["GeneralizerName", "IndexRebuiltWarning", "SkillLibrary"]

DEFAULT_MIN_RELIABILITY = 0.6
#: fetch returns no skill less cosine-similar than this to the task (its best text).
#: Chosen with benchmarks/calibrate_fetch.py on this repository's suites
#: (docs/fetch.md#fetch-feedback-reliability).
DEFAULT_MIN_SIMILARITY = 0.2
#: the generalizers a library can be told to use by name
GeneralizerName = Literal["dataflow", "llm"]


class SkillLibrary(GovernanceCalls):
    """A folder of versioned, verified skills: records in SQLite, ``when`` vectors in Chroma.

    ``SkillLibrary(path)`` opens the library in ``path`` (created when the folder holds none,
    unless ``create=False``); ``records=`` and ``index=`` put the records on PostgreSQL and the
    index on a Chroma server; ``tenant=``, ``policy=`` and ``actor=`` pick the tenant, seed its
    policy and name the default actor. See docs/api.md#opening-a-library for every argument.
    The governance calls (propose, approve, promote, ...) are :class:`GovernanceCalls`'.
    """

    # the attributes skill_library.opening.open_library sets
    default_actor: str | None
    path: Path | None
    min_reliability: float
    min_similarity: float
    trusted_output_tools: frozenset[str]
    generalizer: "GeneralizerName | Generalizer"
    embedder: Embedder
    tenant: str
    index_server: "IndexServer | None"
    context: TenantContext
    actors: ActorRegistry
    _read_only_arg: frozenset[str]
    _store: RecordStore
    _sandbox: "Sandbox | None"
    _procedures: "Procedures | None"
    _patterns: "Patterns | None"
    _closed: bool
    _root: "SkillLibrary | None"
    _views: "dict[str, SkillLibrary]"
    _specs_cache: "dict[str, ToolSpec] | None"
    _policy_option: Policy | None

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, records: str | None = None, index: str | None = None,
        index_token: str | None = None, create: bool = True, embedder: Embedder | None = None,
        min_reliability: float = DEFAULT_MIN_RELIABILITY, min_similarity: float = DEFAULT_MIN_SIMILARITY,
        store: RecordStore | None = None, read_only_tools: Iterable[str] = (), trusted_output_tools: Iterable[str] = (),
        generalizer: "GeneralizerName | Generalizer" = "dataflow", tenant: str = DEFAULT_TENANT,
        policy: Policy | None = None, actor: str | None = None, sandbox: "Sandbox | None" = None,
    ) -> None:
        opening.open_library(self, path, records=records, index=index, index_token=index_token, create=create,
                             embedder=embedder, min_reliability=min_reliability, min_similarity=min_similarity,
                             store=store, read_only_tools=read_only_tools,
                             trusted_output_tools=trusted_output_tools, generalizer=generalizer,
                             tenant=tenant, policy=policy, actor=actor, sandbox=sandbox)

    def for_tenant(self, name: str) -> "SkillLibrary":
        """This library for tenant ``name`` (the same stores, ``name``'s records and index
        only; kept per name, closed with this library). See docs/api.md#opening-a-library."""
        return opening.tenant_view(self, name)

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "SkillLibrary":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox workers and release the stores (a view releases only its own)."""
        opening.close_library(self)

    @property
    def index_path(self) -> Path | None:
        """Folder of the derived Chroma index (None when the index is on a server)."""
        return None if self.index_server is not None or self.path is None else self.path / "chroma"

    @property
    def location(self) -> str:
        """Where the library lives, for messages: its folder, or its records and index URLs
        (passwords masked; the index token is never shown)."""
        return opening.location(self)

    @property
    def store(self) -> RecordStore:
        """Deprecated (warns; private in the next release): the record store writes without
        governance's audit events; use the public calls (docs/architecture.md#deprecations)."""
        deprecated("SkillLibrary.store", "the public calls (or library.context.store inside the package)")
        return self._store

    @property
    def index(self) -> VectorIndex:
        """The vector index, (re)opened and checked against the records when needed."""
        return self.context.index.current()

    def constructor_tool_specs(self) -> dict[str, ToolSpec]:
        """The ``read_only_tools=`` of this library object as tool specs (not stored)."""
        return {name: ToolSpec(side_effects=False) for name in self._read_only_arg}

    @property
    def procedures(self) -> "Procedures":
        """Instruction procedures (skill_library.procedures), created on first use."""
        return opening.procedures(self)

    @property
    def patterns(self) -> "Patterns":
        """Usage-pattern memory (skill_library.patterns), created on first use."""
        return opening.patterns(self)

    # -- skills -------------------------------------------------------------------------
    def add(self, skill: Skill, *, verified: bool = False, actor: "Actor | str | None" = None) -> AddResult:
        """Store ``skill`` as a new active version (the local administrator's direct path;
        audited; a near duplicate is not stored). See docs/api.md#add."""
        from skill_library import ingest
        return ingest.add_one(self, skill, verified=verified, actor=actor)

    def add_many(self, skills: Sequence[Skill], *, verified: bool = False, progress: bool = False,
                 actor: "Actor | str | None" = None) -> list[AddResult]:
        """:meth:`add` for many skills, batched; all are checked before any is stored (docs/api.md#add)."""
        from skill_library import ingest
        with ProgressBar(progress, "adding skills", len(skills)) as bar:
            return ingest.add_many_checked(self, skills, verified=verified, actor=actor, advance=bar.advance)

    def get(self, name: str, version: int | None = None) -> Skill:
        """A skill's active version (or ``version``) with its outcome counts (an old name of a
        renamed skill resolves, with a ``DeprecationWarning``)."""
        from skill_library import redaction
        return redaction.get(self, name, version)

    def list(self, *, status: SkillStatus | None = None) -> list[Skill]:
        """The current version of every skill (optionally only those with ``status``)."""
        if status is not None and status not in get_args(SkillStatus):
            raise ValueError(f"status must be one of {', '.join(get_args(SkillStatus))}, got {status!r}")
        return self._store.list(status=status)

    def history(self, name: str) -> builtins.list[Skill]:
        """Every version of ``name``, oldest first, each with its own counts."""
        return self._store.history(name)

    def outcomes(self, name: str) -> builtins.list[dict[str, Any]]:
        """The append-only outcome log of ``name`` (all versions), oldest first."""
        return self._store.outcome_log(name)

    def traces(self, name: str) -> builtins.list[Trace]:
        """The stored traces of ``name``: learned from, run, or named by an outcome."""
        return self._store.traces_for(name)

    def trace(self, trace_id: str) -> Trace:
        """One stored trace by id (:class:`TraceNotFoundError` when unknown)."""
        return self._store.get_trace(trace_id)

    def reindex(self, *, progress: bool = False, force: bool = False) -> int:
        """Rebuild the vector index from the records; returns how many skills it holds
        (refused on damaged or older records unless ``force``). See docs/api.md#reindex."""
        from skill_library import prototypes
        with self.context.index.locked():
            prototypes.backfill(self._store, self.embedder, [s.name for s in self._store.list(status="active")])
            with ProgressBar(progress, "embedding skills", len(self.context.index.expected_entries())) as bar:
                return self.context.index.rebuild(progress=bar.advance, force=force)

    # -- fetch and feedback -------------------------------------------------------------
    def plan(self, task: str, *, k: int = 3, tools: Iterable[str] | None = None,
             min_reliability: float | None = None) -> "Plan":
        """The skills that together cover a compound ``task``, in order, each with its part and
        parameters (:mod:`skill_library.planning` states the method and its limits)."""
        from skill_library import planning
        return planning.plan(self, task, k=k, tools=tools, min_reliability=min_reliability)

    def run_plan(self, plan: "Plan", args: Sequence[Mapping[str, Any] | None],
                 tools: Mapping[str, Callable[..., Any]] | None = None, **options: Any) -> "PlanRun":
        """Run a :meth:`plan`'s steps in order; the first failing step stops it (docs/api.md#run)."""
        from skill_library import planning
        return planning.run_plan(self, plan, args, tools, **options)

    @telemetry.traced("fetch")
    def fetch(
        self, task: str, k: int = 2, *, min_reliability: float | None = None, min_similarity: float | None = None,
        tools: Iterable[str] | None = None, kinds: Sequence[SkillKind] | None = None, subject: str | None = None,
        state: str | None = None, session: str | None = None, cohort: str | None = None,
        args: Mapping[str, Any] | None = None, explain: bool = False, abstain: bool = True, plan: bool = False,
        read_tools: Mapping[str, Callable[..., Any]] | None = None,
    ) -> "FetchResult":
        """The ``k`` best skills for ``task``, each at most once, as a
        :class:`~skill_library.abstention.FetchResult` (flagged ``abstained`` / ``ambiguous``
        with a ``reason``), ranked by :mod:`skill_library.ranking`. See docs/api.md#fetch."""
        from skill_library import fetching
        return fetching.fetch(self, task, k, min_reliability=min_reliability, min_similarity=min_similarity,
                              tools=tools, kinds=kinds, subject=subject, state=state, session=session,
                              cohort=cohort, args=args, explain=explain, abstain=abstain, plan=plan,
                              read_tools=read_tools)

    def calibration(self) -> "Calibration":
        """fetch's abstention calibration: floor, look-alike margin, expected precision and recall."""
        from skill_library import abstention
        return abstention.calibration(self)

    @telemetry.traced("feedback")
    def feedback(
        self, name: str, outcome: "bool | OutcomeKind | str | None" = None, *, version: int | None = None,
        trace_id: str | None = None, session: str | None = None, cohort: str | None = None,
        wrong_skill: bool = False, reason: str | None = None, succeeded: "bool | OutcomeKind | str | None" = None,
    ) -> Skill:
        """Append one ``outcome`` (a bool or an :class:`OutcomeKind`) for ``name``'s active
        version (or the one its ``session`` got); ``wrong_skill=True`` counts against
        retrieval, not the skill. ``succeeded=`` is the deprecated old name of ``outcome``.
        See docs/api.md#feedback."""
        from skill_library import outcomes as honest_outcomes
        given = renamed_argument("feedback", "outcome", outcome, "succeeded", succeeded)
        return honest_outcomes.feedback(self, name, given, version=version, trace_id=trace_id, session=session,
                                        cohort=cohort, wrong_skill=wrong_skill, reason=reason)

    def configure_uplift(self, *, share: float = holdout.UPLIFT_HOLDOUT_SHARE, side_effects: bool = False,
                         skills: Iterable[str] | None = None, actor: "Actor | str | None" = None) -> "UpliftSettings":
        """Opt the tenant in to uplift measurement for ``share`` of sessions (docs/api.md#feedback)."""
        return holdout.configure(self, share=share, side_effects=side_effects, skills=skills, actor=actor)

    def uplift_settings(self) -> "UpliftSettings":
        """The tenant's uplift holdout (share 0: off)."""
        return holdout.settings(self)

    def record_session_outcome(
        self, session: str, outcome: "bool | OutcomeKind | str", *, skills: Iterable[str] | None = None,
        cost: Mapping[str, float] | None = None, reason: str | None = None,
    ) -> dict[str, str]:
        """Record ``session``'s task outcome for the skills fetch served it or held back from
        it (or ``skills``), with its ``cost``; returns skill -> arm. See docs/api.md#feedback."""
        return holdout.record_session_outcome(self, session, outcome, skills=skills, cost=cost, reason=reason)

    def uplift(self, name: str, version: int | None = None) -> "Uplift":
        """Task success with and without ``name``, the difference with its interval (docs/uplift.md)."""
        return holdout.uplift(self, name, version)

    def outcome_counts(self, name: str, version: int | None = None) -> dict[str, int]:
        """How many outcomes of each kind ``name`` v``version`` (default: the active one) has."""
        return self._store.outcome_counts(name, version)

    def retrieval_misses(self, name: str) -> int:
        """How many times ``name`` was reported fetched for a task it does not do (``wrong_skill``)."""
        from skill_library import outcomes as honest_outcomes
        return honest_outcomes.retrieval_misses(self, name)

    def lift_quarantine(self, name: str, *, actor: "Actor | str | None" = None) -> Skill:
        """An approver (``skill.approve``) lifts the quarantine of ``name``. Audited."""
        from skill_library import outcomes as honest_outcomes
        return honest_outcomes.lift_quarantine(self, name, actor=actor)

    def reverify(self, name: str, args: Mapping[str, Any] | None = None,
                 tools: Mapping[str, Callable[..., Any]] | None = None, *, verifier: Callable[[SkillRun], bool],
                 actor: "Actor | str | None" = None, **run_options: Any) -> SkillRun:
        """Run a quarantined skill once under ``verifier``; a pass lifts the quarantine."""
        from skill_library import outcomes as honest_outcomes
        return honest_outcomes.reverify(self, name, args, tools, verifier=verifier, actor=actor, **run_options)

    # -- procedures, patterns and transparency: delegates to skill_library.procedures/.patterns
    def add_procedure(self, title: str, trigger: str, description: str, *, confidence: float = DEFAULT_CONFIDENCE,
                      name: str | None = None, actor: str | None = None) -> Skill:
        """Store an active procedure (a versioned ``instruction`` record; name from the title)."""
        return self.procedures.add(title, trigger, description, confidence=confidence, name=name, actor=actor)

    def record_procedure_outcome(self, name: str, outcome: "bool | OutcomeKind | str | None" = None, *,
                                 reason: str | None = None,
                                 positive: "bool | OutcomeKind | str | None" = None) -> Skill:
        """One application of a procedure: confidence +0.08 (at most 1) or -0.15 (at least 0)
        (``positive=``: the deprecated old name of ``outcome``)."""
        given = renamed_argument("record_procedure_outcome", "outcome", outcome, "positive", positive)
        self.procedures.record_outcome(name, given, reason=reason)
        return self._store.get(name)

    def build_system_prompt(self, base: str, *, task: str | None = None, threshold: float = PROMPT_THRESHOLD,
                            limit: int = PROMPT_LIMIT) -> str:
        """``base`` plus the active procedures at or above ``threshold`` (relevant to ``task``)."""
        return self.procedures.build_system_prompt(base, task=task, threshold=threshold, limit=limit,
                                                   excluded_subjects=self.patterns.opted_out_subjects())

    def extract_procedures(self, messages: Sequence[Mapping[str, Any]], *, actor: str | None,
                           subject: str | None = None, **options: Any) -> "Extraction":
        """At most three procedures a chat model finds in a finished session, stored as drafts."""
        return self.procedures.extract(messages, actor=actor, subject=subject, **options)

    def explain(self, subject: str) -> dict[str, Any]:
        """Everything the library inferred about ``subject`` and what each may influence."""
        from skill_library.patterns import transparency
        return transparency.explain(self.context.store, self.patterns, self.procedures, subject)

    def forget(self, subject: str) -> dict[str, Any]:
        """Erase ``subject`` (a user id or a value) everywhere; returns what was removed
        (docs/api.md#privacy-and-transparency)."""
        from skill_library import erasure
        return erasure.forget(self, subject).as_dict()

    def redact_stored(self) -> "RedactionReport":
        """Redact versions stored before the masking pass (docs/api.md#privacy-and-transparency)."""
        from skill_library import redaction
        return redaction.redact_stored(self)

    def opt_out(self, subject: str) -> None:
        """Stop recording and using anything about ``subject``."""
        self.patterns.opt_out(subject)

    # -- learning -----------------------------------------------------------------------
    @property
    def sandbox(self) -> "Sandbox":
        """This tenant's own sandbox, started on first use and closed with the library."""
        return opening.sandbox(self)

    def default_generalizer(self) -> "Generalizer":
        """The generalizer this library was set to use (offline dataflow unless ``"llm"``)."""
        return self.resolve_generalizer(self.generalizer)

    def resolve_generalizer(self, generalizer: "GeneralizerName | Generalizer | None") -> "Generalizer":
        """A generalizer from a name, an instance, or ``None`` (the library's setting)."""
        from skill_library import learning
        return learning.resolve_generalizer(generalizer, self.generalizer)

    @telemetry.traced("learn")
    def learn(self, trace: Trace | Mapping[str, Any], *, generalizer: "GeneralizerName | Generalizer | None" = None,
              verifier: Callable[..., Any] | None = None, limits: "Limits | None" = None) -> LearnResult:
        """Turn a verified successful trace into a skill, or into evidence for one (``saved``,
        ``merged``, ``revised``, ``duplicate`` or ``rejected``). See docs/api.md#learn."""
        return self.learn_many([trace], generalizer=generalizer, verifier=verifier, limits=limits)[0]

    @telemetry.traced("learn_many")
    def learn_many(
        self, traces: Iterable[Trace | Mapping[str, Any]], *,
        generalizer: "GeneralizerName | Generalizer | None" = None,
        verifier: Callable[..., Any] | None = None, limits: "Limits | None" = None, progress: bool = False,
    ) -> builtins.list[LearnResult]:
        """:meth:`learn` for many traces, in input order, with batched embedding (docs/api.md#learn)."""
        from skill_library import learning
        items, chosen = list(traces), self.resolve_generalizer(generalizer)
        with ProgressBar(progress, "learning traces", len(items)) as bar:
            results = learning.learn_all(self, items, chosen, verifier, limits, advance=bar.advance)
        learning.after_learning(self, results)  # re-mine preconditions (look-alikes' new traces)
        return results

    def verify_all(self, names: Sequence[str] | None = None) -> builtins.list["SkillCheck"]:
        """Replay every example trace of each active learned skill (or ``names``) (docs/api.md#learn)."""
        from skill_library.induction import revision
        return revision.verify_all(self, names)

    # private names kept for older code (docs/api.md#internals-kept-for-older-code)
    @property
    def _index(self) -> SyncedIndex:
        return self.context.index

    @property
    def _text_vectors(self) -> StoredVectors:
        return self.context.vectors

    @property
    def _session_versions(self) -> "OrderedDict[tuple[str, str], int]":
        return self.context.routes.sessions

    def examples(self, name: str) -> builtins.list[Example]:
        """The example tasks of ``name`` (masked), oldest first; ``indexed`` ones are fetched by."""
        self._store.get(name)  # raises for an unknown name
        return self._store.examples([name])[name]

    def prototype_traces(self, name: str) -> builtins.list[str]:
        """The trace ids whose task vectors' mean is ``name``'s prototype index entry (none yet: [])."""
        from skill_library import prototypes
        examples = self.examples(name)
        return prototypes.traces_of(examples, prototypes.vectored(self._store, self.embedder.model_name,
                                                                  {name: examples}))

    # -- running ------------------------------------------------------------------------
    @telemetry.traced("run")
    def run(
        self, name: str, args: Mapping[str, Any] | None = None, tools: Mapping[str, Callable[..., Any]] | None = None,
        *, version: int | None = None, tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        limits: "Limits | None" = None, verifier: Callable[[SkillRun], bool] | None = None, record: bool = True,
        subject: str | None = None, session: str | None = None, cohort: str | None = None,
        _allow_quarantined: bool = False,
    ) -> SkillRun:
        """Run the active version of ``name`` (or ``version``, or the one fetch gave ``session``)
        in the sandbox with its dependencies; the run comes back as a stored :class:`Trace`
        and a judged outcome. See docs/api.md#run."""
        from skill_library import execution, redaction
        return execution.run(
            self, redaction.resolve(self, name), args, tools, version=version, tool_schemas=tool_schemas,
            limits=limits, verifier=verifier, record=record, subject=subject, session=session, cohort=cohort,
            allow_quarantined=_allow_quarantined,
        )

    # -- presentation: thin delegates to skill_library.presentation ---------------------
    def render(self, matches: Sequence[Match], *, max_tokens: int = 800) -> str:
        """The planner's prompt block for ``matches``, cut to ``max_tokens`` (characters / 4)."""
        from skill_library.presentation import prompt_block
        examples = prompt_block.recorded_examples(matches, self._store.get_trace)
        return prompt_block.render(matches, max_tokens=max_tokens, examples=examples)

    def as_openai_tools(self, matches: Sequence[Match], *, api: str = "chat") -> builtins.list[dict[str, Any]]:
        """OpenAI function tools (``api="chat"`` or ``"responses"``) for the code skills."""
        from skill_library.presentation.openai_tools import as_openai_tools
        return as_openai_tools(matches, api=api)  # type: ignore[arg-type]

    def dispatch(self, tool_call: Any, tools: Mapping[str, Callable[..., Any]] | None = None,
                 **run_options: Any) -> dict[str, Any]:
        """Run the skill a model called; returns the ``tool`` message (``.run`` is the run)."""
        from skill_library.presentation.openai_tools import dispatch
        return dispatch(self, tool_call, tools, **run_options)

# moved to skill_library.opening (the names kept here for code that imports them)
INDEX_TOKEN_ENV = opening.INDEX_TOKEN_ENV
_is_sqlite = opening.is_sqlite
_index_server = opening.index_server
_check_folder = opening.check_folder

settings.forward(__name__, "LEARN_BATCH", "ADD_BATCH", "DUPLICATE_SIMILARITY")

#: names this module re-exported before (the fetch settings, ``check_policy``), read from
#: their homes on first use, so that opening a library for a governance call does not
#: import fetching and learning (docs/cli.md#speed)
_MOVED = {
    "ENTRIES_PER_SKILL_GUESS": "skill_library.fetching", "FETCH_GROWTH": "skill_library.fetching",
    "FETCH_MIN_EXTRA": "skill_library.fetching", "FETCH_OVERFETCH": "skill_library.fetching",
    "PREFETCH_MIN_N": "skill_library.fetching", "PROCEDURE_FETCH_CONFIDENCE": "skill_library.fetching",
    "check_policy": "skill_library.induction.validation",
}


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(home), name)
