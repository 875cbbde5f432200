"""Governance: actors and permissions, the tenant's policy and tool specs, the lifecycle
of a version (draft -> evaluated -> approved -> canary -> active -> superseded / retired)
and its audit log. One concept per module: ``actors``, ``policy``, ``tools``, ``audit``,
``lifecycle`` (the transition table and the primitive), ``rules`` (who may approve what),
``instructed`` (traces instructed by tool results) and ``workflow`` (the facade's
propose/approve/... calls); ``suite`` (evaluation task sets), ``evaluation`` (candidate vs
active, side by side), ``canary`` (routing by session, automatic rollback) and
``significance`` (the canary's one-sided Fisher test)."""

from skill_library.governance.actors import (
    Actor,
    ActorKind,
    ActorRegistry,
    Permission,
    generalizer_actor,
    local_admin,
    system_actor,
)
from skill_library.governance.audit import AuditEvent
from skill_library.governance.lifecycle import TRANSITIONS, library_transition, transition
from skill_library.governance.policy import Policy
from skill_library.governance.tools import ToolSpec

__all__ = [
    "TRANSITIONS",
    "Actor",
    "ActorKind",
    "ActorRegistry",
    "AuditEvent",
    "Permission",
    "Policy",
    "ToolSpec",
    "generalizer_actor",
    "local_admin",
    "system_actor",
    "library_transition",
    "transition",
]
