"""What the concept modules need from an open library, as protocols (issue 24).

A concept module never imports the facade (``skill_library.library``), not even for an
annotation: each function takes the narrow object it uses, the tenant's
:class:`~skill_library.context.TenantContext` itself, or one of the protocols below, each
naming exactly the parts its callers read. ``SkillLibrary`` (and a tenant view) satisfies
every one of them structurally, so the facade passes ``self``; a test may pass anything
with the same parts. Each protocol adds to the one it names, and a function that calls
another takes the protocol that covers both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sandbox import Sandbox
    from skill_library.abstention import FetchResult
    from skill_library.context import TenantContext
    from skill_library.embeddings import Embedder
    from skill_library.governance.actors import Actor, ActorRegistry
    from skill_library.governance.policy import Policy
    from skill_library.governance.tools import ToolSpec
    from skill_library.models import Skill, SkillRun
    from skill_library.patterns import Patterns
    from skill_library.planning import Plan
    from skill_library.procedures import Procedures


class Tenant(Protocol):
    """One tenant's working parts: its record store, vectors, index and canary routes."""

    @property
    def context(self) -> TenantContext: ...


class Ruled(Tenant, Protocol):
    """A tenant, and the tools the library object was told only read state
    (``read_only_tools=``, as tool specs): what the approval rules read."""

    def constructor_tool_specs(self) -> dict[str, ToolSpec]: ...


class Governed(Ruled, Protocol):
    """:class:`Ruled`, and the tenant's actor registry (a caller's ``actor=`` is resolved
    there): what the lifecycle's transitions read."""

    @property
    def actors(self) -> ActorRegistry: ...


class Canaried(Governed, Protocol):
    """:class:`Governed`, and the tenant's policy (a canary's minimum outcomes and alpha)."""

    @property
    def policy(self) -> Policy: ...


class Executing(Protocol):
    """What runs one skill version: its dependencies (by name, an old name resolved), the
    tools that only read state, and the tenant's sandbox."""

    def get(self, name: str, version: int | None = None) -> Skill: ...

    @property
    def read_only_tools(self) -> frozenset[str]: ...

    @property
    def sandbox(self) -> Sandbox: ...


class Running(Executing, Canaried, Protocol):
    """What a recorded run reads and writes: :class:`Executing`, :class:`Canaried` (the
    session's version, the quarantine and canary checks) and the usage patterns."""

    @property
    def patterns(self) -> Patterns: ...


class Evaluating(Executing, Governed, Protocol):
    """What an evaluation reads: it runs versions, moves them, and names the embedder."""

    @property
    def embedder(self) -> Embedder: ...


class Admitting(Governed, Protocol):
    """What admitting a learned version reads: the tools whose outputs are trusted."""

    @property
    def trusted_output_tools(self) -> frozenset[str]: ...


class Recording(Canaried, Protocol):
    """What an outcome reads and writes: :class:`Canaried`, and the procedures (an outcome
    of an instruction skill is a procedure's)."""

    @property
    def procedures(self) -> Procedures: ...


class Reverifying(Governed, Protocol):
    """What re-verifying a quarantined skill needs: a recorded run, and the lifecycle."""

    def run(self, name: str, *args: Any, **options: Any) -> SkillRun: ...


class Dispatching(Tenant, Protocol):
    """What runs the skill a model called: the version (by name) and the recorded run."""

    def get(self, name: str, version: int | None = None) -> Skill: ...

    def run(self, name: str, *args: Any, **options: Any) -> SkillRun: ...


class Ingesting(Governed, Protocol):
    """What adding skills directly reads: the embedder (batches of ``when`` texts)."""

    @property
    def embedder(self) -> Embedder: ...


class Searching(Tenant, Protocol):
    """What the index search under fetch reads (:func:`skill_library.fetching.searched`, also
    learning's related skills): the tenant, its procedures' confidences and the tools that
    only read state."""

    @property
    def procedures(self) -> Procedures: ...

    @property
    def read_only_tools(self) -> frozenset[str]: ...


class Learning(Admitting, Executing, Searching, Protocol):
    """What the learning pipeline reads: the embedder, the sandbox replays run in, the
    tools that only read state and every declared tool, and fetch's reliability floor (the
    related skills a candidate may call)."""

    @property
    def embedder(self) -> Embedder: ...

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def read_only_tools(self) -> frozenset[str]: ...

    @property
    def min_reliability(self) -> float: ...

    def tool_specs(self) -> dict[str, ToolSpec]: ...


class Vocabularied(Tenant, Protocol):
    """What reading a task's intent needs (:mod:`skill_library.intent`): the tenant, the
    tools that only read state and every declared tool (their names and descriptions hold
    the library's verbs)."""

    @property
    def read_only_tools(self) -> frozenset[str]: ...

    def tool_specs(self) -> dict[str, ToolSpec]: ...


class Deciding(Protocol):
    """What the bulk decisions call (:mod:`skill_library.governance.bulk`): the review
    queue, a skill's history and the audited approve/promote transitions."""

    def review_queue(self) -> list[Skill]: ...

    def history(self, name: str) -> list[Skill]: ...

    def approve(self, name: str, version: int, *, actor: Actor | str | None = None,
                reason: str = "") -> Skill: ...

    def promote(self, name: str, version: int, *, actor: Actor | str | None = None) -> Skill: ...


class Planning(Protocol):
    """What planning calls (:mod:`skill_library.planning`): fetch, for each step's skills,
    and run, for each step."""

    def fetch(self, task: str, *args: Any, **options: Any) -> FetchResult: ...

    def run(self, name: str, *args: Any, **options: Any) -> SkillRun: ...


class Verifying(Tenant, Protocol):
    """What re-verifying stored skills reads (:mod:`skill_library.induction.revision`): the
    tenant, its sandbox and the tools that only read state."""

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def read_only_tools(self) -> frozenset[str]: ...


class Calibrating(Tenant, Protocol):
    """What abstention's calibration reads (:mod:`skill_library.abstention`): the tenant,
    its embedder (the model the stored vectors are keyed by) and the fetch floor."""

    @property
    def embedder(self) -> Embedder: ...

    @property
    def min_similarity(self) -> float: ...


class Remembering(Tenant, Protocol):
    """A tenant with its procedure and usage-pattern memories (created on first use)."""

    @property
    def procedures(self) -> Procedures: ...

    @property
    def patterns(self) -> Patterns: ...


class Erasing(Remembering, Protocol):
    """What ``forget`` reaches (:mod:`skill_library.erasure`): the tenant, its memories and
    the folder of its index (None on a server), whose files it compacts."""

    @property
    def index_path(self) -> Path | None: ...


class Proceduring(Remembering, Governed, Protocol):
    """What the procedure memory's audited writes need (:mod:`skill_library.procedures`):
    the tenant's memories and actor registry, and the embedder its triggers are embedded with."""

    @property
    def embedder(self) -> Embedder: ...


class Reviewing(Governed, Executing, Protocol):
    """What the governed workflow reads (:mod:`skill_library.governance.workflow`): the
    tenant, its actors, the tools declared to the library object, its ``actor=``, and what
    runs a version (a tool change re-verifies the skills that call it)."""

    @property
    def default_actor(self) -> str | None: ...


class Mining(Tenant, Executing, Protocol):
    """What preconditions need (:mod:`skill_library.induction.preconditions`): the tenant
    (its traces and index) and what runs a version's read-only probe in the sandbox."""


class HoldingOut(Canaried, Protocol):
    """What the uplift holdout reads (:mod:`skill_library.uplift`): the tenant, its actors
    and policy (a suppression is an audited transition) and the tools that only read state."""

    @property
    def read_only_tools(self) -> frozenset[str]: ...


class Rechecking(Reviewing, Protocol):
    """What re-verifying skills after a tool's schema changed needs
    (:mod:`skill_library.governance.tool_schemas`): the governed workflow and what runs a
    version in the sandbox."""


class Redacting(Learning, Executing, Protocol):
    """What redacting stored versions needs (:mod:`skill_library.redaction`): learning's
    parts (a redacted version is learned anew under a free name) and reading a version."""


class Fetching(Searching, Vocabularied, Calibrating, Remembering, HoldingOut, Mining, Protocol):
    """What fetch reads (:mod:`skill_library.fetching`): the tenant's index and records,
    the embedder, its floors, the memories that prefetch and procedures add, and what
    intent, abstention, the canary routes, the holdout and preconditions read."""

    @property
    def min_reliability(self) -> float: ...

    def plan(self, task: str, *args: Any, **options: Any) -> Plan: ...
