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

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sandbox import Sandbox
    from skill_library.context import TenantContext
    from skill_library.embeddings import Embedder
    from skill_library.governance.actors import ActorRegistry
    from skill_library.governance.policy import Policy
    from skill_library.governance.tools import ToolSpec
    from skill_library.models import Skill, SkillRun
    from skill_library.patterns import Patterns
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


class Learning(Admitting, Protocol):
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
