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

from skill_library import (
    abstention,
    execution,
    fetching,
    ingest,
    learning,
    opening,
    prototypes,
    redaction,
    settings,
    telemetry,
)
from skill_library import outcomes as honest_outcomes
from skill_library import uplift as holdout
from skill_library.context import TenantContext
from skill_library.deprecation import deprecated
from skill_library.embeddings import Embedder
from skill_library.fetching import (  # noqa: F401  (settings named here before)
    ENTRIES_PER_SKILL_GUESS,
    FETCH_GROWTH,
    FETCH_MIN_EXTRA,
    FETCH_OVERFETCH,
    PREFETCH_MIN_N,
    PROCEDURE_FETCH_CONFIDENCE,
)
from skill_library.governance import Actor, ActorRegistry, AuditEvent, Policy, ToolSpec
from skill_library.index_sync import IndexRebuiltWarning, SyncedIndex
from skill_library.induction.validation import check_policy as check_policy  # its old home
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
    from skill_library.governance.bulk import Decision
    from skill_library.governance.canary import CanaryState
    from skill_library.governance.evaluation import Evaluation
    from skill_library.governance.suite import Suite, ToolsFactory
    from skill_library.governance.tool_schemas import Reverification
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


class SkillLibrary:
    """A folder of versioned, verified skills: records in SQLite, ``when`` vectors in Chroma.

    ``SkillLibrary(path)`` opens the library in ``path``, creating it when the folder holds
    none (``create=True``, the default, as ``sqlite3.connect`` does; the CLI passes
    ``create=False`` unless ``skills init`` or ``--create``). With ``create=False`` a folder
    without a library raises :class:`LibraryNotFoundError`. A damaged or empty records file
    always raises :class:`RecordStoreCorruptError`, as does a folder whose records are gone
    while its index is there. ``embedder`` defaults to the packaged all-MiniLM-L6-v2
    (loaded on first need); ``min_reliability`` is the fetch threshold on Laplace
    reliability; ``generalizer`` is what :meth:`learn` uses by default: ``"dataflow"``
    (offline, the default) or ``"llm"`` (the endpoint from ``OPENAI_*`` settings). The
    environment alone never turns the LLM on.
    ``min_similarity`` is fetch's floor on cosine similarity; ``read_only_tools`` names
    the tools that only read state: learning drops argument-free reads whose results a
    skill does not use, and replay verification lets a skill read more or less often than
    its trace (to look before it acts); they count as tools declared without side effects
    (a tool the tenant declared with side effects stays one: a declaration narrows, never
    widens). ``trusted_output_tools`` names the tools whose results and errors come from a
    system you control and carry no third-party text (a game engine's rules): they ground
    a learned skill's values as the task does (docs/security.md); every other result is
    untrusted data.

    Governance (docs/governance.md#governance): ``policy`` is stored as the tenant's policy when the
    library (or tenant) is created; opening an existing one with a different ``policy``
    raises (widen it with :meth:`set_policy`). Without one, the policy is
    ``Policy(auto_approve="read_only")``. Creating a library registers the OS user as its
    admin ``user`` actor (the default actor of :meth:`add` and the other direct writes),
    plus the ``generalizer`` and ``system`` actors.

    Governance: ``tenant=`` picks the tenant (:meth:`for_tenant` gives a view of another),
    ``policy=`` seeds a new tenant's policy, and ``actor=`` names the registered actor of
    calls made without ``actor=`` (default: the local administrator, the OS user).

    Shared deployment: ``SkillLibrary(records="postgresql+psycopg://user:pw@host/db",
    index="http://HOST:PORT[/COLLECTION]")`` keeps the records on PostgreSQL (the same
    schema, created or upgraded on first open) and the index on a Chroma server (vectors
    computed here and passed explicitly); no folder is needed. Either may be given alone
    with a ``path`` for the other. ``index_token`` (default: ``SKILLS_INDEX_TOKEN``) is sent
    as a bearer token to an authenticating proxy (:mod:`skill_library.index_proxy`); an index
    URL that is not loopback with no token is refused (:class:`InsecureIndexError`;
    docs/deployment.md#shared-deployment-postgresql-and-a-chroma-server). Passwords and tokens
    are never logged or stored: messages show the URL with its password masked.

    Tenants: ``tenant`` (default ``"default"``) names whose skills this library reads and
    writes; every call sees that tenant's records and index only, and two tenants may
    hold skills of the same name. :meth:`for_tenant` gives a view on the same stores for
    another tenant (docs/deployment.md#tenants).
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
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        records: str | None = None,
        index: str | None = None,
        index_token: str | None = None,
        create: bool = True,
        embedder: Embedder | None = None,
        min_reliability: float = DEFAULT_MIN_RELIABILITY,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        store: RecordStore | None = None,
        read_only_tools: Iterable[str] = (),
        trusted_output_tools: Iterable[str] = (),
        generalizer: "GeneralizerName | Generalizer" = "dataflow",
        tenant: str = DEFAULT_TENANT,
        policy: Policy | None = None,
        actor: str | None = None,
    ) -> None:
        opening.open_library(self, path, records=records, index=index, index_token=index_token, create=create,
                             embedder=embedder, min_reliability=min_reliability, min_similarity=min_similarity,
                             store=store, read_only_tools=read_only_tools,
                             trusted_output_tools=trusted_output_tools, generalizer=generalizer,
                             tenant=tenant, policy=policy, actor=actor)

    def for_tenant(self, name: str) -> "SkillLibrary":
        """This library for tenant ``name``: the same record engine, write lock, index
        client settings, embedder and sandbox, with every call on ``name``'s records and
        index only. Views are kept per name (asking twice gives the same one) and are
        closed with the library they came from. A tenant seen for the first time gets its
        actors and the ``policy=`` this library was opened with (default: ``read_only``)."""
        return opening.tenant_view(self, name)

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "SkillLibrary":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox workers and release the stores (a tenant view releases only its
        own index client; the library it came from closes the rest)."""
        opening.close_library(self)

    @property
    def index_path(self) -> Path | None:
        """Folder of the derived Chroma index (None when the index is on a server)."""
        if self.index_server is not None or self.path is None:
            return None
        return self.path / "chroma"

    @property
    def location(self) -> str:
        """Where the library lives, for messages: its folder, or its records and index URLs
        (passwords masked; the index token is never shown)."""
        records = str(getattr(self._store, "url", "")) if getattr(self._store, "shared", False) else None
        if records is None and self.index_server is None:
            return str(self.path)
        parts = [records or str(self.path), self.index_server.url if self.index_server else "its folder's index"]
        return f"records {parts[0]}, index {parts[1]}"

    @property
    def store(self) -> RecordStore:
        """Deprecated (warns ``DeprecationWarning``; private in the next release): the record
        store writes without governance's audit events. Read through the public calls
        (:meth:`get`, :meth:`history`, :meth:`outcomes`, ...); the concept modules use
        ``library.context.store`` (docs/architecture.md#deprecations)."""
        deprecated("SkillLibrary.store", "the public calls (or library.context.store inside the package)")
        return self._store

    @property
    def index(self) -> VectorIndex:
        """The vector index, (re)opened and checked against the records when needed."""
        return self.context.index.current()

    @property
    def procedures(self) -> "Procedures":
        """Instruction procedures (skill_library.procedures), created on first use."""
        if self._procedures is None:
            from skill_library.procedures import Procedures

            self._procedures = Procedures(self)
        return self._procedures

    @property
    def patterns(self) -> "Patterns":
        """Usage-pattern memory (skill_library.patterns), created on first use."""
        if self._patterns is None:
            from skill_library.patterns import Patterns

            self._patterns = Patterns(self._store, self.embedder)
        return self._patterns

    # -- governance: thin delegates to skill_library.governance --------------------------
    def resolve_actor(self, actor: "Actor | str | None" = None) -> Actor:
        """The registered actor ``actor`` names (an id, or an :class:`Actor` whose id is
        looked up: permissions come from the registry, never from the caller); ``None`` is
        the local administrator (the OS user). :class:`PermissionDenied` when unknown."""
        from skill_library.governance import workflow

        return workflow.resolve_actor(self, actor)

    @property
    def read_only_tools(self) -> frozenset[str]:
        """The tools that only read state: declared without side effects in the tenant, or
        named by ``read_only_tools=`` and not declared with side effects."""
        return frozenset(n for n, s in self.tool_specs().items() if not s.side_effects)

    def constructor_tool_specs(self) -> dict[str, ToolSpec]:
        """The ``read_only_tools=`` of this library object as tool specs (not stored)."""
        return {name: ToolSpec(side_effects=False) for name in self._read_only_arg}

    def tool_specs(self) -> dict[str, ToolSpec]:
        """The tools declared in the tenant (plus ``read_only_tools=``), by name."""
        from skill_library.governance import workflow

        return workflow.tool_specs(self)

    def register_tools(self, specs: Mapping[str, ToolSpec | None], *,
                       actor: "Actor | str | None" = None,
                       tools: Mapping[str, Callable[..., Any]] | None = None) -> "Reverification":
        """Declare tools in the tenant (``skill.admin``; audited; ``None`` removes one). A
        tool nobody declared counts as having side effects. A schema that is not valid JSON
        Schema is refused; active and canary versions bound to a changed or removed tool's
        schema are suspended and re-verified, with ``tools`` (the caller's callables) by a
        live read-only run too (docs/security.md, "Tool schemas")."""
        from skill_library.governance import workflow

        return workflow.register_tools(self, specs, actor=actor, tools=tools)

    def reverify_tools(self, name: str, tools: Mapping[str, Callable[..., Any]] | None = None) -> "Reverification":
        """Re-verify the suspended versions of ``name`` against the tool schemas declared
        now; with ``tools``, its example traces' read-only calls also run live."""
        from skill_library.governance import tool_schemas

        return tool_schemas.reverify_named(self, name, tools)

    def tool_schema_digests(self, name: str, version: int | None = None) -> dict[str, str]:
        """``{tool: sha256}`` of the tool schemas ``name`` v``version`` (default: the
        pointer's) was verified against."""
        from skill_library.governance import tool_schemas

        return tool_schemas.digests(self, name, self._store.get(name, version).version)

    def resume(self, name: str, *, actor: "Actor | str | None" = None, reason: str = "") -> Skill:
        """An approver returns the suspended version of ``name`` (a tool schema change it
        failed to re-verify against) to active. Audited."""
        from skill_library.governance import tool_schemas

        return tool_schemas.resume(self, name, actor=actor, reason=reason)

    @property
    def policy(self) -> Policy:
        """The tenant's policy (``Policy()``, auto_approve ``read_only``, when none is stored)."""
        from skill_library.governance import workflow

        return workflow.policy(self)

    def set_policy(self, policy: Policy, *, actor: "Actor | str | None" = None) -> Policy:
        """Store ``policy`` as the tenant's (``skill.admin``; audited)."""
        from skill_library.governance import workflow

        return workflow.set_policy(self, policy, actor=actor)

    def propose(self, skill: Skill, *, actor: "Actor | str | None" = None, reason: str = "") -> Skill:
        """Store ``skill`` as a draft, the next version of its name: never fetched until it
        is evaluated, approved and promoted (``skill.propose``)."""
        from skill_library.governance import workflow

        return workflow.propose(self, skill, actor=actor, reason=reason)

    def reject(self, name: str, version: int, *, actor: "Actor | str | None" = None, reason: str) -> Skill:
        """Reject a draft or evaluated version: kept for audit, never fetched."""
        from skill_library.governance import workflow

        return workflow.reject(self, name, version, actor=actor, reason=reason)

    def approve(self, name: str, version: int, *, actor: "Actor | str | None" = None, reason: str = "") -> Skill:
        """Approve an evaluated version (``skill.approve``, a ``user`` actor, not its
        proposer, its latest evaluation passed)."""
        from skill_library.errors import LifecycleError
        from skill_library.governance import evaluation, workflow

        problem = evaluation.approval_problem(self, name, version)
        if problem is not None:
            raise LifecycleError(problem)
        return workflow.approve(self, name, version, actor=actor, reason=reason)

    def approve_many(self, items: "Sequence[str | tuple[str, int]] | None" = None, *,
                     actor: "Actor | str | None" = None, reason: str = "") -> "builtins.list[Decision]":
        """:meth:`approve` each version (a name alone: its version waiting for approval;
        ``None``: every evaluated version learning held); each refusal is kept on its own
        :class:`~skill_library.governance.bulk.Decision`, in order."""
        from skill_library.governance import bulk

        return bulk.approve_many(self, bulk.held(self) if items is None else items, actor=actor, reason=reason)

    def promote_many(self, items: "Sequence[str | tuple[str, int]]", *,
                     actor: "Actor | str | None" = None) -> "builtins.list[Decision]":
        """:meth:`promote` each version (a name alone: its newest approved one); one
        :class:`~skill_library.governance.bulk.Decision` each, refusals included."""
        from skill_library.governance import bulk

        return bulk.promote_many(self, items, actor=actor)

    def start_canary(self, name: str, version: int, *, actor: "Actor | str | None" = None,
                     share: float | None = None, cohort: str | None = None) -> Skill:
        """Start a canary of an approved version for ``share`` of sessions or a ``cohort``
        (:meth:`canaries` lists the running ones)."""
        from skill_library.governance import workflow

        return workflow.canary(self, name, version, actor=actor, share=share, cohort=cohort)

    def canary(self, name: str, version: int, *, actor: "Actor | str | None" = None,
               share: float | None = None, cohort: str | None = None) -> Skill:
        """Deprecated alias of :meth:`start_canary` (warns ``DeprecationWarning``; removed
        in the next release; docs/architecture.md#deprecations)."""
        deprecated("canary()", "start_canary()")
        return self.start_canary(name, version, actor=actor, share=share, cohort=cohort)

    def promote(self, name: str, version: int, *, actor: "Actor | str | None" = None) -> Skill:
        """Make an approved (or canary) version the active one; the active one before it is
        superseded."""
        from skill_library.governance import workflow

        return workflow.promote(self, name, version, actor=actor)

    def rollback(self, name: str, *, actor: "Actor | str | None" = None, to_version: int | None = None) -> Skill:
        """Flip the active pointer back to the previous released version (or
        ``to_version``) at once; the rolled-back version is retired."""
        from skill_library.governance import workflow

        return workflow.rollback(self, name, actor=actor, to_version=to_version)

    def diff(self, name: str, v1: int, v2: int) -> str:
        """What changed from version ``v1`` to ``v2``: code, ``when``, tools, parameters."""
        from skill_library.governance import workflow

        return workflow.diff(self, name, v1, v2)

    def delete(self, name: str, *, actor: "Actor | str | None" = None) -> AuditEvent:
        """Remove ``name`` entirely (versions, outcomes, traces, examples, index entries);
        admin only; leaves one audit event, which it returns."""
        from skill_library.governance import workflow

        return workflow.delete(self, name, actor=actor)

    def audit(self, name: str | None = None) -> builtins.list[AuditEvent]:
        """The audit events of ``name`` (default: every event of the tenant), oldest first."""
        from skill_library.governance import workflow

        return workflow.audit_events(self, name)

    def needs_human(self, name: str, version: int) -> builtins.list[str]:
        """Why a human must approve this version (empty: the policy may approve it)."""
        from skill_library.governance import rules

        return rules.needs_human(self, self._store.get(name, version))

    def review_queue(self) -> builtins.list[Skill]:
        """The versions waiting for a person's decision, oldest first: draft and evaluated
        (approve or reject), quarantined by ``system`` (a failure burst or a reliably
        negative uplift: lift the quarantine or retire) and suspended by a tool schema
        change (resume or retire)."""
        from skill_library.governance import workflow

        return workflow.review_queue(self)

    # -- skills -------------------------------------------------------------------------
    def add(self, skill: Skill, *, verified: bool = False, actor: "Actor | str | None" = None) -> AddResult:
        """Store ``skill`` as a new active version (version 1 for a new name).

        The direct path of the library's local administrator (the OS user, an admin actor):
        audited like every transition; :meth:`propose` is the governed path for everyone
        else. A hand-written skill starts with no outcomes (reliability 0.5);
        ``verified=True`` counts one success: when the skill's ``provenance.trace_ids``
        name a trace, it must be a stored trace a verifier judged a success (else
        ``ValueError``), and the success is credited to it; without one the success is the
        local administrator's assertion, recorded as such in the audit event (the CLI's
        ``--verified`` always needs ``--trace``). When another active skill's ``when`` is more than 0.9
        cosine-similar, nothing is stored and the result names it in ``duplicate_of``.
        ``actor`` (default: the library's ``actor=``, else the local administrator) must
        hold ``skill.admin``.
        """
        return ingest.add_one(self, skill, verified=verified, actor=actor)

    def add_many(
        self,
        skills: Sequence[Skill],
        *,
        verified: bool = False,
        progress: bool = False,
        actor: "Actor | str | None" = None,
    ) -> list[AddResult]:
        """:meth:`add` for many skills at once, with batched embedding and index writes.

        Duplicates are checked against the index and against earlier skills of the same
        batch; results come back in input order. Every skill is checked before any is
        stored (a refused one stores nothing). Embedding overlaps the checks and the
        writes (:mod:`skill_library.ingest`).
        """
        with ProgressBar(progress, "adding skills", len(skills)) as bar:
            return ingest.add_many_checked(self, skills, verified=verified, actor=actor, advance=bar.advance)

    def get(self, name: str, version: int | None = None) -> Skill:
        """A skill's active version (or ``version``) with its outcome counts (an old name of
        a skill renamed by :meth:`redact_stored` resolves, with a ``DeprecationWarning``)."""
        return redaction.get(self, name, version)

    def list(self, *, status: SkillStatus | None = None) -> list[Skill]:
        """The current version of every skill (optionally only those with ``status``)."""
        if status is not None and status not in get_args(SkillStatus):
            raise ValueError(
                f"status must be one of {', '.join(get_args(SkillStatus))}, got {status!r}"
            )
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

    def retire(self, name: str, *, actor: "Actor | str | None" = None) -> Skill:
        """Retire a skill (its active or quarantined version): it stays in the records but
        is never fetched again. ``actor`` (default: the local administrator) needs
        ``skill.approve``; audited."""
        from skill_library.governance import workflow

        return workflow.retire(self, name, actor=actor)

    def reindex(self, *, progress: bool = False, force: bool = False) -> int:
        """Rebuild the vector index from the records; returns how many skills it holds.

        Refuses when the records are damaged (:class:`RecordStoreCorruptError`) or older
        than the index (:class:`RecordsBehindIndexError`): rebuilding from them would lose
        skills. ``force=True`` rebuilds from the records as they are. Example traces that
        lack a task vector (a library learned before prototypes) are embedded first, so
        every skill with enough of them gets its prototype (skill_library.prototypes)."""
        with self.context.index.locked():
            prototypes.backfill(self._store, self.embedder, [s.name for s in self._store.list(status="active")])
            with ProgressBar(progress, "embedding skills", len(self.context.index.expected_entries())) as bar:
                return self.context.index.rebuild(progress=bar.advance, force=force)

    # -- fetch and feedback -------------------------------------------------------------
    def plan(
        self,
        task: str,
        *,
        k: int = 3,
        tools: Iterable[str] | None = None,
        min_reliability: float | None = None,
    ) -> "Plan":
        """The skills that together cover a compound ``task``, in order, each with the part
        of the task it covers and its parameters; a single step when one skill covers it
        all (:mod:`skill_library.planning` states the method and its limits)."""
        from skill_library import planning

        return planning.plan(self, task, k=k, tools=tools, min_reliability=min_reliability)

    def run_plan(
        self,
        plan: "Plan",
        args: Sequence[Mapping[str, Any] | None],
        tools: Mapping[str, Callable[..., Any]] | None = None,
        **options: Any,
    ) -> "PlanRun":
        """Run a :meth:`plan`'s steps in order, each with its own arguments, each a run of
        its own skill (recorded and judged as :meth:`run` does; ``options`` go to every
        step); the first failing step stops the plan (``PlanRun.stopped_at``)."""
        from skill_library import planning

        return planning.run_plan(self, plan, args, tools, **options)

    @telemetry.traced("fetch")
    def fetch(
        self,
        task: str,
        k: int = 2,
        *,
        min_reliability: float | None = None,
        min_similarity: float | None = None,
        tools: Iterable[str] | None = None,
        kinds: Sequence[SkillKind] | None = None,
        subject: str | None = None,
        state: str | None = None,
        session: str | None = None,
        cohort: str | None = None,
        args: Mapping[str, Any] | None = None,
        explain: bool = False,
        abstain: bool = True,
        plan: bool = False,
        read_tools: Mapping[str, Callable[..., Any]] | None = None,
    ) -> "FetchResult":
        """The ``k`` best skills for ``task``, each at most once, as a
        :class:`~skill_library.abstention.FetchResult` (a list, flagged ``abstained`` /
        ``ambiguous`` with a ``reason``: the library's calibrated floor, the margin between
        look-alikes, which returns every match too close to call even past ``k``, and
        parameters the task cannot supply; ``abstain=False``: no flags, at most ``k``).
        ``plan=True`` also sets the result's ``plan`` (:meth:`plan`: for a compound task,
        the skills that together cover it, in order, each with its part).

        Ranked by :mod:`skill_library.ranking`: similarity less value fit, evidence (a
        log prior on verified successes), bindability (``args``: the values the caller has,
        by parameter name; else the task's values by shape), specificity and reliability
        penalties; ``explain=True`` sets each match's ``explanation`` (the terms of its
        ``score``). docs/fetch.md#ranking.

        A skill qualifies when it is active, its reliability is at least
        ``min_reliability`` (default: the library's), the cosine similarity of ``task`` to
        its best-matching text (its ``when`` or one of its masked example tasks) is at
        least ``min_similarity`` (default :data:`DEFAULT_MIN_SIMILARITY`; pass -1 for
        none), and, when ``tools`` is given, every tool it and the skills it calls need is
        among them. Ordered by similarity less the value-fit penalties (the task lacks
        values of the shapes the skill's parameters took, or holds values it takes none
        of: :mod:`skill_library.value_fit`), ties by reliability then name; ``similarity``
        stays the plain cosine. Procedures (kind ``instruction``) qualify by confidence
        instead of reliability.

        With ``subject`` and ``state`` (a skill name or a product state), the skill the
        subject's usage pattern predicts next (:data:`skill_library.fetching.PREFETCH_MIN_N` transitions back it)
        is added after the matches, flagged ``prefetch=True``, when it is fetchable and not
        already among them.

        With ``session`` (or a named ``cohort``), a skill with a canary comes back as its
        canary version for the canary's share of sessions (a deterministic hash of the
        session id) or its cohort, as the active version otherwise; :meth:`run`,
        :meth:`feedback` and :meth:`dispatch` given the same ``session`` use that version
        (skill_library.governance.canary). With ``session`` and the tenant's uplift holdout
        on (:meth:`configure_uplift`), a skill held out for this session is left out with its
        look-alikes and named in ``result.held_back`` (docs/uplift.md).

        With ``read_tools`` (the caller's read-only tool callables) and ``args``, the top
        candidates' preconditions are checked in the sandbox (read-only calls only) and the
        ones that do not apply move behind the rest (``Match.applies``; docs/learning.md).
        """
        return fetching.fetch(self, task, k, min_reliability=min_reliability, min_similarity=min_similarity,
                              tools=tools, kinds=kinds, subject=subject, state=state, session=session,
                              cohort=cohort, args=args, explain=explain, abstain=abstain, plan=plan,
                              read_tools=read_tools)

    def calibration(self) -> "Calibration":
        """fetch's abstention calibration for this library: the similarity floor and
        look-alike margin from leave-one-out over its example tasks, with the expected
        precision and recall (skill_library.abstention; cached until the index changes)."""
        return abstention.calibration(self)

    @telemetry.traced("feedback")
    def feedback(
        self,
        name: str,
        succeeded: "bool | OutcomeKind | str",
        *,
        version: int | None = None,
        trace_id: str | None = None,
        session: str | None = None,
        cohort: str | None = None,
        wrong_skill: bool = False,
        reason: str | None = None,
    ) -> Skill:
        """Append one outcome for ``name`` (default: its active version, or with ``session``
        the version :meth:`fetch` or :meth:`run` gave that session). ``succeeded`` is a bool
        (True: ``success``, False: ``failure``) or an :class:`OutcomeKind` (``"misuse"``,
        ``"not_applicable"``, ...), kept with ``reason``; only success and failure count
        toward reliability and the quarantine rule (docs/outcomes.md). ``wrong_skill=True``
        says the agent fetched the wrong workflow: counted against retrieval
        (:meth:`retrieval_misses`), not the skill; with the ``trace_id`` of a run whose
        outcome was recorded, that outcome moves out of the skill's record. On a procedure
        this is :meth:`record_procedure_outcome`. A code skill whose recent outcomes fail is
        quarantined (skill_library.patterns.reliability); a success never lifts that. An
        outcome of a skill with a canary may roll the canary back (governance.canary)."""
        return honest_outcomes.feedback(self, name, succeeded, version=version, trace_id=trace_id, session=session,
                                 cohort=cohort, wrong_skill=wrong_skill, reason=reason)

    def configure_uplift(self, *, share: float = holdout.UPLIFT_HOLDOUT_SHARE, side_effects: bool = False,
                         skills: Iterable[str] | None = None, actor: "Actor | str | None" = None) -> "UpliftSettings":
        """Opt the tenant in to uplift measurement: ``share`` of sessions (within [0, 0.5];
        0: off) get no skill of a measured workflow from fetch; skills with side effects only
        with ``side_effects=True``; only ``skills`` when named (``skill.admin``; audited).
        docs/uplift.md."""
        return holdout.configure(self, share=share, side_effects=side_effects, skills=skills, actor=actor)

    def uplift_settings(self) -> "UpliftSettings":
        """The tenant's uplift holdout (share 0: off)."""
        return holdout.settings(self)

    def record_session_outcome(
        self, session: str, outcome: "bool | OutcomeKind | str", *, skills: Iterable[str] | None = None,
        cost: Mapping[str, float] | None = None, reason: str | None = None,
    ) -> dict[str, str]:
        """Record ``session``'s task outcome (a bool or an :class:`OutcomeKind`) for the skills
        fetch served it or held back from it (or ``skills``), with its ``cost`` (``tool_calls``,
        ``tokens``, ``seconds``); returns skill -> arm. May suppress a skill whose uplift is
        reliably negative (docs/uplift.md)."""
        return holdout.record_session_outcome(self, session, outcome, skills=skills, cost=cost, reason=reason)

    def uplift(self, name: str, version: int | None = None) -> "Uplift":
        """Task success with and without ``name`` (held-back sessions), the difference with a
        95% Newcombe interval, n per arm, cost differences, the verdict (docs/uplift.md)."""
        return holdout.uplift(self, name, version)

    def outcome_counts(self, name: str, version: int | None = None) -> dict[str, int]:
        """How many outcomes of each kind (success, failure, misuse, not_applicable,
        wrong_skill) version ``version`` (default: the active one) of ``name`` has."""
        return self._store.outcome_counts(name, version)

    def retrieval_misses(self, name: str) -> int:
        """How many times ``name`` was reported fetched for a task it does not do
        (``feedback(..., wrong_skill=True)``): retrieval's count, not the skill's."""
        return honest_outcomes.retrieval_misses(self, name)

    def _check_quarantine(self, skill: Skill) -> Skill:  # kept for branches in flight
        return honest_outcomes.check_quarantine(self, skill)

    def lift_quarantine(self, name: str, *, actor: "Actor | str | None" = None) -> Skill:
        """An approver (``skill.approve``; default: the local administrator) lifts the
        quarantine of ``name``: it is active and fetched again. Audited."""
        return honest_outcomes.lift_quarantine(self, name, actor=actor)

    def reverify(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        verifier: Callable[[SkillRun], bool],
        actor: "Actor | str | None" = None,
        **run_options: Any,
    ) -> SkillRun:
        """Run a quarantined skill once under ``verifier``; a pass lifts the quarantine
        (as ``actor``, default the system actor: a passed re-verification is evidence)."""
        return honest_outcomes.reverify(self, name, args, tools, verifier=verifier, actor=actor, **run_options)

    # -- procedures, patterns and transparency: delegates to skill_library.procedures/.patterns
    def add_procedure(
        self, title: str, trigger: str, description: str, *, confidence: float = DEFAULT_CONFIDENCE,
        name: str | None = None, actor: str | None = None,
    ) -> Skill:
        """Store an active procedure (a versioned ``instruction`` record; name from the title)."""
        return self.procedures.add(title, trigger, description, confidence=confidence, name=name, actor=actor)

    def record_procedure_outcome(self, name: str, positive: "bool | OutcomeKind | str") -> Skill:
        """One application of a procedure: confidence +0.08 (at most 1) or -0.15 (at least 0);
        an :class:`OutcomeKind` other than success/failure is logged and moves nothing."""
        self.procedures.record_outcome(name, positive)
        return self._store.get(name)

    def build_system_prompt(
        self, base: str, *, task: str | None = None, threshold: float = PROMPT_THRESHOLD,
        limit: int = PROMPT_LIMIT,
    ) -> str:
        """``base`` plus the active procedures at or above ``threshold`` (relevant to ``task``)."""
        return self.procedures.build_system_prompt(
            base, task=task, threshold=threshold, limit=limit,
            excluded_subjects=self.patterns.opted_out_subjects(),
        )

    def extract_procedures(
        self, messages: Sequence[Mapping[str, Any]], *, actor: str | None, subject: str | None = None,
        **options: Any,
    ) -> "Extraction":
        """At most three procedures a chat model finds in a finished session, stored as drafts."""
        return self.procedures.extract(messages, actor=actor, subject=subject, **options)

    def explain(self, subject: str) -> dict[str, Any]:
        """Everything the library inferred about ``subject`` and what each may influence."""
        from skill_library.patterns.transparency import explain

        return explain(self, subject)

    def forget(self, subject: str) -> dict[str, Any]:
        """Erase ``subject`` (a user id or a value such as an email) everywhere: its traces,
        examples, outcome links, patterns, procedures and index entries; what was derived from
        them is re-derived, later learning of the same traces says ``forgotten``. Returns
        what was removed (``found`` False: nothing was known). See skill_library.erasure."""
        from skill_library.patterns.transparency import forget

        return forget(self, subject)

    def redact_stored(self) -> "RedactionReport":
        """Redact versions stored before the masking pass that hold personal data: a redacted
        new version, the old texts erased (audited without the content), renamed skills'
        old names kept as aliases for a release. See skill_library.redaction."""
        return redaction.redact_stored(self)

    def opt_out(self, subject: str) -> None:
        """Stop recording and using anything about ``subject``."""
        self.patterns.opt_out(subject)

    # -- learning -----------------------------------------------------------------------
    @property
    def sandbox(self) -> "Sandbox":
        """The sandbox skills run in: this tenant's own (its own zygote and workers, so one
        tenant's CPU-bound run never makes another's wait), started on first use and closed
        with the library (a tenant view's with the view)."""
        if self._sandbox is None:
            from sandbox import Sandbox

            self._sandbox = Sandbox(workers=1)
        return self._sandbox

    def default_generalizer(self) -> "Generalizer":
        """The generalizer this library was set to use (offline dataflow unless ``"llm"``)."""
        return self.resolve_generalizer(self.generalizer)

    def resolve_generalizer(self, generalizer: "GeneralizerName | Generalizer | None") -> "Generalizer":
        """A generalizer from a name, an instance, or ``None`` (the library's setting).

        ``"llm"`` needs an endpoint from the ``OPENAI_*`` settings (else :class:`LLMError`);
        environment variables alone never select it.
        """
        return learning.resolve_generalizer(generalizer, self.generalizer)

    @telemetry.traced("learn")
    def learn(
        self,
        trace: Trace | Mapping[str, Any],
        *,
        generalizer: "GeneralizerName | Generalizer | None" = None,
        verifier: Callable[..., Any] | None = None,
        limits: "Limits | None" = None,
    ) -> LearnResult:
        """Turn a verified successful trace into a skill, or into evidence for one.

        The candidate is replayed against the trace in the sandbox before anything is
        stored; ``verifier`` is an optional extra live check. One skill per workflow: a
        trace an existing skill reproduces (or whose code equals it) is ``merged`` as
        evidence; a trace of a learned workflow that its skill does not reproduce gives a
        ``revised`` version that replays every example trace; otherwise the candidate is
        ``saved`` as a new skill (see :mod:`skill_library.induction.admission`).
        ``duplicate`` means a reliable skill for the same task exists and nothing was
        stored; ``rejected`` gives reasons (a malformed or unverified trace stores nothing).
        ``trace`` may also be a mapping of trace fields or ``{"messages": [...], "task":
        ..., "outcome": ...}`` (an OpenAI transcript).
        ``generalizer`` is a name (``"dataflow"``, ``"llm"``) or an instance (default: the
        library's setting); ``limits`` are the sandbox limits of the replay (for a long
        trace, raise ``max_tool_calls``).
        """
        return self.learn_many([trace], generalizer=generalizer, verifier=verifier, limits=limits)[0]

    @telemetry.traced("learn_many")
    def learn_many(
        self,
        traces: Iterable[Trace | Mapping[str, Any]],
        *,
        generalizer: "GeneralizerName | Generalizer | None" = None,
        verifier: Callable[..., Any] | None = None,
        limits: "Limits | None" = None,
        progress: bool = False,
    ) -> builtins.list[LearnResult]:
        """:meth:`learn` for many traces, in input order, with batched embedding.

        Traces are taken :data:`LEARN_BATCH` at a time: each is generalized and replayed,
        then each is admitted (merged, revised or saved) in turn under the write lock, so
        later traces of a batch merge into skills its earlier traces made. Their task texts
        and masked example texts are embedded on a thread of their own meanwhile, the next
        batches' tasks ahead (:class:`skill_library.learning.EmbedAhead`).
        """
        items = list(traces)
        chosen = self.resolve_generalizer(generalizer)
        with ProgressBar(progress, "learning traces", len(items)) as bar:
            results = learning.learn_all(self, items, chosen, verifier, limits, advance=bar.advance)
        learning.after_learning(self, results)  # re-mine preconditions (look-alikes' new traces)
        return results

    def verify_all(self, names: Sequence[str] | None = None) -> builtins.list["SkillCheck"]:
        """Replay every stored example trace of each active learned skill (or of ``names``)
        with its current version, off the write path: a revision checked on a sample
        (``settings.REVISION_SAMPLE``) that broke an unsampled trace shows up here, in
        ``SkillCheck.broken`` (see :func:`skill_library.induction.revision.verify_all`)."""
        from skill_library.induction import revision

        return revision.verify_all(self, names)

    # private names kept for code written against them (branches in flight); the concept
    # modules use ``library.context`` (skill_library.context)
    @property
    def _index(self) -> SyncedIndex:
        return self.context.index

    @property
    def _text_vectors(self) -> StoredVectors:
        return self.context.vectors

    @property
    def _session_versions(self) -> "OrderedDict[tuple[str, str], int]":
        return self.context.routes.sessions

    def _sync_index(
        self, index: VectorIndex, skill: Skill, *, known: Mapping[str, Sequence[float]] | None = None
    ) -> None:
        self.context.sync(index, [skill], known=known)

    def _sync_index_many(self, index: VectorIndex, names: Sequence[str], known: dict[str, Any]) -> None:
        self.context.sync(index, names, known=known)

    def examples(self, name: str) -> builtins.list[Example]:
        """The example tasks of ``name`` (masked), oldest first; ``indexed`` ones are fetched by."""
        self._store.get(name)  # raises for an unknown name
        return self._store.examples([name])[name]

    def prototype_traces(self, name: str) -> builtins.list[str]:
        """The trace ids whose task vectors' mean is ``name``'s prototype index entry
        (skill_library.prototypes); [] while it has fewer than a block of them."""
        examples = self.examples(name)
        vectored = prototypes.vectored(self._store, self.embedder.model_name, {name: examples})
        return prototypes.traces_of(examples, vectored)

    # -- running ------------------------------------------------------------------------
    @telemetry.traced("run")
    def run(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        version: int | None = None,
        tool_schemas: Mapping[str, dict[str, Any]] | None = None,
        limits: "Limits | None" = None,
        verifier: Callable[[SkillRun], bool] | None = None,
        record: bool = True,
        subject: str | None = None,
        session: str | None = None,
        cohort: str | None = None,
        _allow_quarantined: bool = False,
    ) -> SkillRun:
        """Run the active version of ``name`` (or ``version``) in the sandbox with its dependencies.

        Only the tools the skill (and its dependencies) declare are reachable, and a tool
        schema that does not say otherwise admits only the arguments it lists. The calls
        it makes come back as a new, stored :class:`Trace`. A run that raised is judged
        (``run.outcome_kind``, ``run.outcome_reason``: docs/outcomes.md): ``misuse`` when a
        read-only lookup refused a value the caller passed, ``not_applicable`` when it stopped
        on a ``NotApplicable`` precondition, else (a state-changing call raising, a limit hit)
        a ``failure``; a success is recorded by ``verifier`` (when given) or later
        through :meth:`feedback`. ``record=False`` writes nothing (no trace, no outcome),
        for evaluating a frozen library. Calling it wrongly (a declared tool missing from
        ``tools``, arguments that break the parameter schema) raises
        :class:`SkillUsageError` before the run and records nothing. With ``subject`` and
        ``session`` the invocation is also a transition of the subject's usage pattern
        (from the skill run before it in the session), which next-skill prefetch reads.

        Without ``version``, a ``session`` (or ``cohort``) runs the version :meth:`fetch`
        gave that session: a canary's, or the active one (skill_library.governance.canary);
        only ``active`` and ``canary`` versions run. The run and its outcome record the
        version that ran (``SkillRun.version``).
        """
        name = redaction.resolve(self, name)  # an old name of a renamed skill (deprecated)
        return execution.run(
            self, name, args, tools, version=version, tool_schemas=tool_schemas, limits=limits,
            verifier=verifier, record=record, subject=subject, session=session, cohort=cohort,
            allow_quarantined=_allow_quarantined,
        )

    # kept for branches in flight: skill_library.governance.canary.session_version and
    # skill_library.outcomes.after_outcome
    def _session_version(self, name: str, session: str | None, cohort: str | None) -> int | None:
        from skill_library.governance import canary

        return canary.session_version(self, name, session=session, cohort=cohort)

    def _after_outcome(self, name: str) -> None:
        honest_outcomes.after_outcome(self, name)

    # -- integrations: thin delegates to skill_library.integrations ---------------------
    def render(self, matches: Sequence[Match], *, max_tokens: int = 800) -> str:
        """The planner's prompt block for ``matches``, cut to ``max_tokens`` (estimated as
        characters / 4): see :func:`skill_library.integrations.prompt_block.render`."""
        from skill_library.integrations import prompt_block

        examples = prompt_block.recorded_examples(matches, self._store.get_trace)
        return prompt_block.render(matches, max_tokens=max_tokens, examples=examples)

    def as_openai_tools(self, matches: Sequence[Match], *, api: str = "chat") -> builtins.list[dict[str, Any]]:
        """OpenAI function tools (``api="chat"`` or ``"responses"``) for the code skills."""
        from skill_library.integrations.openai_tools import as_openai_tools

        return as_openai_tools(matches, api=api)  # type: ignore[arg-type]

    def dispatch(
        self, tool_call: Any, tools: Mapping[str, Callable[..., Any]] | None = None, **run_options: Any
    ) -> dict[str, Any]:
        """Run the skill a model called; returns the ``tool`` message (``.run`` is the run)."""
        from skill_library.integrations.openai_tools import dispatch

        return dispatch(self, tool_call, tools, **run_options)

    # -- evaluation and canaries: delegates to skill_library.governance ----------------
    def evaluate(
        self, name: str, version: int, suite: "Suite | str | os.PathLike[str]", tools: "ToolsFactory", *,
        actor: "Actor | str | None" = None,
    ) -> "Evaluation":
        """Run ``version`` and the active version side by side on ``suite`` (a fresh world
        per task from ``tools``); store and return the :class:`Evaluation`. A pass moves a
        draft to ``evaluated``; a critical regression fails it whatever the average."""
        from skill_library.governance import evaluation

        return evaluation.evaluate(self, name, version, suite, tools, actor=actor)

    def evaluations(self, name: str, version: int | None = None) -> builtins.list["Evaluation"]:
        """The stored evaluations of ``name`` (or of one version), newest last."""
        from skill_library.governance import evaluation

        return evaluation.evaluations(self, name, version)

    def canaries(self) -> builtins.list["CanaryState"]:
        """The running canaries: share, cohort, both versions' counts, p-value, decision."""
        from skill_library.governance import canary

        return canary.states(self)

    def import_draft(self, skill: Skill, *, actor: "Actor | str | None" = None) -> Skill:
        """Store ``skill`` as an unverified draft version: never indexed, fetched or run
        (:meth:`propose` as ``actor``, default the local administrator)."""
        if skill.successes or skill.failures:
            raise ValueError(f"successes/failures: a draft starts with no outcomes; {skill.name!r} has some")
        return self.propose(skill, actor=actor, reason="imported")


# moved to skill_library.opening (the names kept here for code that imports them)
INDEX_TOKEN_ENV = opening.INDEX_TOKEN_ENV
_is_sqlite = opening.is_sqlite
_index_server = opening.index_server
_check_folder = opening.check_folder

settings.forward(__name__, "LEARN_BATCH", "ADD_BATCH", "DUPLICATE_SIMILARITY")
