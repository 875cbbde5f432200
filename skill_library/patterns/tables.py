"""The tables of usage-pattern memory and instruction procedures: defined in the storage
layer (:mod:`skill_library.storage.pattern_tables`, created by schema step 11) and
re-exported here for the code written against this module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skill_library.storage.pattern_tables import (
    TENANT_TABLES,
    marks_table,
    opt_outs_table,
    procedures_table,
    reliability_events_table,
    sessions_table,
    states_table,
    transitions_table,
)

if TYPE_CHECKING:
    from skill_library.storage.interface import RecordStore, UnitOfWork

__all__ = [
    "TENANT_TABLES",
    "marks_table",
    "opt_outs_table",
    "procedures_table",
    "reliability_events_table",
    "sessions_table",
    "sql_store",
    "states_table",
    "transitions_table",
]


def sql_store(store: "RecordStore") -> "UnitOfWork":
    """``store`` as the unit of work procedures and usage patterns write their tables in
    (skill_library.storage.interface.UnitOfWork; the tables exist: every store is migrated
    when it opens)."""
    from skill_library.storage.interface import unit_of_work

    return unit_of_work(store, "procedures and usage patterns")
