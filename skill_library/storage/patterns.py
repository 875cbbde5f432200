"""The rows of usage-pattern memory of one tenant (skill_library.patterns): the state space,
the transitions, the drift marks, the open sessions, the opt-outs; and the reliability
events (quarantines and lifts, skill_library.patterns.reliability).

:class:`PatternRows` only stores and reads; what a count means (predicting, drift) is the
concept's. Each method is one transaction, except where it says it runs on the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.models import utc_now
from skill_library.storage import privacy_rows
from skill_library.storage.pattern_tables import (
    marks_table,
    opt_outs_table,
    reliability_events_table,
    sessions_table,
    states_table,
    transitions_table,
)

if TYPE_CHECKING:
    from skill_library.storage.interface import UnitOfWork


class PatternRows:
    """The pattern rows of ``store``'s tenant."""

    def __init__(self, store: "UnitOfWork") -> None:
        self.store = store
        self.tenant = store.tenant
        self._t = store.tenant_filter

    # -- the state space ------------------------------------------------------------------
    def replace_states(self, states: Sequence[dict[str, Any]]) -> None:
        """Replace the tenant's states (each ``name``, ``description``, ``examples``)."""
        with self.store.transaction(write=True) as conn:
            conn.execute(states_table.delete().where(self._t(states_table)))
            if states:
                conn.execute(states_table.insert(), [{"tenant": self.tenant, **s} for s in states])

    def states(self) -> list[dict[str, Any]]:
        """The tenant's states by name: ``name``, ``description``, ``examples``."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute(sa.select(states_table).where(self._t(states_table))
                                .order_by(states_table.c.name)).mappings()
            return [{"name": r["name"], "description": r["description"], "examples": list(r["examples"])}
                    for r in rows]

    # -- opt-outs -------------------------------------------------------------------------
    def opted_out(self, subject: str) -> bool:
        """Whether ``subject`` opted out, by name or by the salted key ``forget`` keeps."""
        with self.store.transaction(write=False) as conn:
            keys = [subject, *privacy_rows.opt_out_keys(conn, self.tenant, subject)]
            return conn.execute(
                sa.select(opt_outs_table.c.subject).where(self._t(opt_outs_table))
                .where(opt_outs_table.c.subject.in_(keys))
            ).first() is not None

    def opted_out_subjects(self) -> frozenset[str]:
        """Every opt-out's subject (or salted key)."""
        with self.store.transaction(write=False) as conn:
            return frozenset(conn.execute(
                sa.select(opt_outs_table.c.subject).where(self._t(opt_outs_table))
            ).scalars())

    def opt_out(self, subject: str) -> None:
        """Add ``subject``'s opt-out (none twice)."""
        with self.store.transaction(write=True) as conn:
            if conn.execute(sa.select(opt_outs_table.c.subject).where(self._t(opt_outs_table))
                            .where(opt_outs_table.c.subject == subject)).first() is None:
                conn.execute(opt_outs_table.insert().values(tenant=self.tenant, subject=subject, at=utc_now()))

    def opt_in(self, subject: str) -> None:
        """Remove ``subject``'s opt-out (by its name)."""
        with self.store.transaction(write=True) as conn:
            conn.execute(opt_outs_table.delete().where(self._t(opt_outs_table))
                         .where(opt_outs_table.c.subject == subject))

    # -- transitions and sessions ---------------------------------------------------------
    def add_transition(self, subject: str, from_state: str, to_state: str, *, session: str,
                       at: datetime | None = None) -> int | None:
        """Append one transition; its id."""
        with self.store.transaction(write=True) as conn:
            result = conn.execute(transitions_table.insert().values(
                tenant=self.tenant, subject=subject, from_state=from_state, to_state=to_state, session=session,
                at=at or utc_now(),
            ))
            key = result.inserted_primary_key
        return int(key[0]) if key else None

    def advance_session(self, subject: str, session: str, state: str) -> str | None:
        """Make ``state`` the last of ``subject``'s ``session``; the one it replaces (None:
        the session's first)."""
        with self.store.transaction(write=True) as conn:
            where = sa.and_(self._t(sessions_table), sessions_table.c.subject == subject,
                            sessions_table.c.session == session)
            last = conn.execute(sa.select(sessions_table.c.last_state).where(where)).scalar()
            conn.execute(sessions_table.delete().where(where))
            conn.execute(sessions_table.insert().values(tenant=self.tenant, subject=subject,
                                                        session=session, last_state=state, at=utc_now()))
        return None if last is None else str(last)

    def sequence(self, subject: str, from_state: str, since: int = 0) -> list[tuple[int, str]]:
        """``(id, to_state)`` of ``subject``'s transitions from ``from_state`` with ids from
        ``since``, in order."""
        with self.store.transaction(write=False) as conn:
            return [(int(r[0]), str(r[1])) for r in conn.execute(
                sa.select(transitions_table.c.id, transitions_table.c.to_state)
                .where(self._t(transitions_table))
                .where(transitions_table.c.subject == subject)
                .where(transitions_table.c.from_state == from_state)
                .where(transitions_table.c.id >= since)
                .order_by(transitions_table.c.id)
            )]

    def pooled(self, from_state: str) -> dict[str, int]:
        """Next state -> transitions from ``from_state`` of every subject who did not opt out."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute(
                sa.select(transitions_table.c.to_state, sa.func.count())
                .where(self._t(transitions_table))
                .where(transitions_table.c.from_state == from_state)
                .where(transitions_table.c.subject.not_in(
                    sa.select(opt_outs_table.c.subject).where(self._t(opt_outs_table))
                ))
                .group_by(transitions_table.c.to_state)
            )
            return {str(r[0]): int(r[1]) for r in rows}

    def from_states(self, subject: str) -> list[str]:
        """Every state ``subject`` has a transition from, sorted."""
        with self.store.transaction(write=False) as conn:
            return sorted(set(conn.execute(
                sa.select(transitions_table.c.from_state).where(self._t(transitions_table))
                .where(transitions_table.c.subject == subject)
            ).scalars()))

    # -- drift marks ----------------------------------------------------------------------
    def marks(self, subject: str, from_state: str) -> tuple[int, int | None]:
        """``(stable_since, emerging_since)`` of (``subject``, ``from_state``); ``(0, None)``
        when none was set."""
        with self.store.transaction(write=False) as conn:
            row = conn.execute(
                sa.select(marks_table.c.stable_since, marks_table.c.emerging_since)
                .where(self._t(marks_table))
                .where(marks_table.c.subject == subject)
                .where(marks_table.c.from_state == from_state)
            ).first()
        return (int(row[0]), row[1]) if row else (0, None)

    def set_marks(self, subject: str, from_state: str, stable: int, emerging: int | None) -> None:
        """Replace the marks of (``subject``, ``from_state``)."""
        with self.store.transaction(write=True) as conn:
            conn.execute(marks_table.delete().where(self._t(marks_table))
                         .where(marks_table.c.subject == subject)
                         .where(marks_table.c.from_state == from_state))
            conn.execute(marks_table.insert().values(
                tenant=self.tenant, subject=subject, from_state=from_state, stable_since=stable,
                emerging_since=emerging,
            ))

    # -- forgetting -----------------------------------------------------------------------
    def forget(self, subject: str) -> int:
        """Delete ``subject``'s transitions, marks and open sessions; the transitions deleted."""
        with self.store.transaction(write=True) as conn:
            n = conn.execute(transitions_table.delete().where(self._t(transitions_table))
                             .where(transitions_table.c.subject == subject)).rowcount
            conn.execute(marks_table.delete().where(self._t(marks_table)).where(marks_table.c.subject == subject))
            conn.execute(sessions_table.delete().where(self._t(sessions_table))
                         .where(sessions_table.c.subject == subject))
        return int(n or 0)

    def forget_matching(self, names: Callable[[Any], bool]) -> int:
        """In one transaction: delete every transition, mark and open session whose subject
        or session id ``names``, and replace each opt-out whose subject it names by the
        subject's salted key; the transitions deleted."""
        with self.store.transaction(write=True) as conn:
            subjects = {s for s in conn.execute(sa.select(transitions_table.c.subject).distinct()
                                                .where(self._t(transitions_table))).scalars() if names(s)}
            subjects |= {s for s in conn.execute(sa.select(sessions_table.c.subject).distinct()
                                                 .where(self._t(sessions_table))).scalars() if names(s)}
            subjects |= {s for s in conn.execute(sa.select(marks_table.c.subject).distinct()
                                                 .where(self._t(marks_table))).scalars() if names(s)}
            sessions = {s for s in conn.execute(sa.select(transitions_table.c.session).distinct()
                                                .where(self._t(transitions_table))).scalars() if names(s)}
            n = 0
            if subjects or sessions:
                n = conn.execute(transitions_table.delete().where(self._t(transitions_table)).where(
                    sa.or_(transitions_table.c.subject.in_(sorted(subjects)),
                           transitions_table.c.session.in_(sorted(sessions))))).rowcount or 0
                conn.execute(marks_table.delete().where(self._t(marks_table))
                             .where(marks_table.c.subject.in_(sorted(subjects))))
                conn.execute(sessions_table.delete().where(self._t(sessions_table)).where(
                    sa.or_(sessions_table.c.subject.in_(sorted(subjects)),
                           sessions_table.c.session.in_(sorted(sessions)))))
            for opted in [s for s in conn.execute(sa.select(opt_outs_table.c.subject)
                                                   .where(self._t(opt_outs_table))).scalars() if names(s)]:
                key = privacy_rows.opt_out_key(conn, self.tenant, opted)
                conn.execute(opt_outs_table.delete().where(self._t(opt_outs_table))
                             .where(opt_outs_table.c.subject.in_([opted, key])))
                conn.execute(opt_outs_table.insert().values(tenant=self.tenant, subject=key, at=utc_now()))
        return int(n)

    # -- reliability events ---------------------------------------------------------------
    def add_reliability_event(self, name: str, version: int, event: str, reason: str, actor: str) -> None:
        """Note a quarantine or a lift of ``name`` v``version``, who acted and why."""
        with self.store.transaction(write=True) as conn:
            conn.execute(reliability_events_table.insert().values(
                tenant=self.tenant, name=name, version=version, event=event, actor=actor, reason=reason,
                at=utc_now(),
            ))

    def reliability_events(self, name: str) -> list[dict[str, Any]]:
        """The quarantines and lifts of ``name``, oldest first (version, event, actor, reason, at)."""
        with self.store.transaction(write=False) as conn:
            rows = conn.execute(sa.select(reliability_events_table)
                                .where(self._t(reliability_events_table))
                                .where(reliability_events_table.c.name == name)
                                .order_by(reliability_events_table.c.id)).mappings()
            return [{k: r[k] for k in ("version", "event", "actor", "reason", "at")} for r in rows]

    def delete_reliability_events(self, conn: sa.Connection, name: str) -> None:
        """Delete the reliability events of ``name``, on the caller's transaction."""
        conn.execute(reliability_events_table.delete().where(self._t(reliability_events_table))
                     .where(reliability_events_table.c.name == name))
