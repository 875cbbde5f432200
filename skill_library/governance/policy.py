"""The tenant's policy: when a version may be approved without a human.

``auto_approve``: ``never`` (every version waits for a human), ``read_only`` (the default:
a version whose tools are all declared without side effects is approved automatically
after a passed evaluation; a tool nobody declared counts as having side effects) or
``all`` (every version that passed evaluation is approved automatically: the quickstart,
the examples and the benchmark harness opt in to this explicitly). Whatever the policy, a
version whose trace looks instructed by a tool result is held (skill_library.governance.
instructed). Stored per tenant; a library opened without one uses ``read_only``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from skill_library.storage.transactions import Connection

#: outcomes each side of a canary needs before the significance test may roll it back
#: (E's setting; read by the canary routing)
CANARY_MIN_OUTCOMES = 30
#: significance level of the canary's failure-rate test
CANARY_ALPHA = 0.05

AutoApprove = Literal["never", "read_only", "all"]


class Policy(BaseModel, frozen=True):
    """What a tenant lets through without a human approval (see the module docstring)."""

    auto_approve: AutoApprove = "read_only"
    canary_min_outcomes: int = Field(default=CANARY_MIN_OUTCOMES, ge=1)
    canary_alpha: float = Field(default=CANARY_ALPHA, gt=0.0, lt=1.0)


#: how permissive each auto_approve setting is (a larger number approves more)
BREADTH: dict[str, int] = {"never": 0, "read_only": 1, "all": 2}


def load(conn: Connection, tenant: str) -> Policy | None:
    """The stored policy of ``tenant`` (None: none stored), on ``conn``."""
    from skill_library.storage.policy_rows import load_body

    body = load_body(conn, tenant)
    return None if body is None else Policy.model_validate(body)


def save(conn: Connection, tenant: str, policy: Policy) -> None:
    """Store ``policy`` as ``tenant``'s (replacing any), on ``conn`` (the caller's
    transaction, which writes the audit event of the change too)."""
    from skill_library.storage.policy_rows import save_body

    save_body(conn, tenant, policy.model_dump(mode="json"))
