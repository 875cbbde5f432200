"""A candidate skill: what a generalizer proposes before it is verified and stored.

A :class:`Candidate` is mutable and carries what verification needs that a stored
:class:`~skill_library.models.Skill` does not: ``example_args``, the arguments that
reproduce the source trace. :meth:`Candidate.to_skill` turns an accepted candidate into an
immutable skill with its provenance filled in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from skill_library.models import Provenance, Skill, Trace, VerificationReport


class Candidate(BaseModel):
    """A proposed code skill: one function called ``name`` in ``code``.

    ``parameters`` is the JSON Schema object of the function's arguments; ``tools`` are the
    tools it calls and ``depends_on`` the existing skills it calls. ``example_args`` are the
    argument values that reproduce the trace the candidate was learned from (the trace's
    params, or values found in its task text). ``generalizer``, ``model`` and ``usage`` say
    how it was made and at what token cost.
    """

    name: str
    when: str
    description: str = ""
    code: str
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    tools: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    example_args: dict[str, Any] = Field(default_factory=dict)
    generalizer: str
    model: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)

    def fingerprint(self) -> str:
        """A digest of everything that decides how the candidate replays.

        Two candidates with the same fingerprint run the same code with the same arguments
        against the same stubs, so one replay verdict holds for both.
        """
        payload = json.dumps(
            {
                "name": self.name,
                "code": self.code,
                "example_args": self.example_args,
                "depends_on": sorted(self.depends_on),
            },
            sort_keys=True,
            default=repr,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def to_skill(self, *, trace_ids: list[str], created_by: str | None = None) -> Skill:
        """The stored form of this candidate: a version-1 code skill with provenance.

        Raises ``pydantic.ValidationError`` when the candidate is not a valid skill (for
        example, its schema does not match its function's arguments).
        """
        return Skill(
            name=self.name,
            kind="code",
            when=self.when,
            description=self.description,
            code=self.code,
            parameters=self.parameters,
            tools=list(self.tools),
            depends_on=list(self.depends_on),
            provenance=Provenance(
                trace_ids=list(trace_ids),
                generalizer=self.generalizer,
                model=self.model,
                created_by=created_by,
                usage=dict(self.usage),
            ),
        )


Verify = Callable[[Candidate], VerificationReport]


@runtime_checkable
class Generalizer(Protocol):
    """Turns one verified trace into a candidate skill.

    ``related`` are existing skills the candidate may call; ``read_only`` names the tools
    declared to only read state (a skill may call them more or less often than the trace
    did, and need not repeat a read whose result it does not use). ``verify``, when given, replays
    a candidate against the trace; a generalizer may use it to choose between or repair
    candidates. Raises :class:`~skill_library.errors.GeneralizationError` with a clear
    reason when it cannot produce a candidate.
    """

    name: str

    def generalize(
        self,
        trace: Trace,
        *,
        related: Sequence[Skill] = (),
        verify: Verify | None = None,
        read_only: frozenset[str] = frozenset(),
    ) -> Candidate: ...
