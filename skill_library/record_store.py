"""The record store: the source of truth for skills, outcomes and traces.

Its implementation is in the storage layer: :class:`SQLRecordStore` in
:mod:`skill_library.storage.sql_store`, the interface in :mod:`skill_library.storage.interface`,
the tables in :mod:`skill_library.storage.tables`. This module re-exports the names callers
import from here (``__all__``); ``IN_QUERY_BATCH`` and ``SQLITE_BUSY_TIMEOUT_MS`` read and
write :mod:`skill_library.settings`.
"""

from __future__ import annotations

from skill_library import settings
from skill_library.storage.interface import UnitOfWork, unit_of_work
from skill_library.storage.sql_store import (
    EMPTY_FILE_CHECKS,
    EMPTY_FILE_WAIT_SECONDS,
    PG_CONFLICT_RETRIES,
    RECORDS_FILE,
    SCHEMA_VERSION,
    TENANT_TABLES,
    WRITE_LOCK_FILE,
    RecordStore,
    SQLRecordStore,
    counted_outcome,
    delete_text_vectors,
    examples_table,
    meta_table,
    metadata,
    outcomes_table,
    profiles_table,
    skills_table,
    task_vectors_table,
    traces_table,
    vectors_table,
    versions_table,
)

__all__ = [
    "EMPTY_FILE_CHECKS",
    "EMPTY_FILE_WAIT_SECONDS",
    "PG_CONFLICT_RETRIES",
    "RECORDS_FILE",
    "SCHEMA_VERSION",
    "TENANT_TABLES",
    "WRITE_LOCK_FILE",
    "RecordStore",
    "SQLRecordStore",
    "UnitOfWork",
    "counted_outcome",
    "delete_text_vectors",
    "examples_table",
    "meta_table",
    "metadata",
    "outcomes_table",
    "profiles_table",
    "skills_table",
    "task_vectors_table",
    "traces_table",
    "unit_of_work",
    "vectors_table",
    "versions_table",
]

settings.forward(__name__, "IN_QUERY_BATCH", "SQLITE_BUSY_TIMEOUT_MS")
