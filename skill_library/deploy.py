"""Moving a folder library into a shared deployment (``skills migrate --to URL``).

The records are copied row by row, table by table, in one transaction on the destination,
which must hold no skill yet; outcome ids are renumbered in their original order (the
copy itself is the storage layer's: :mod:`skill_library.storage.copying`). The
index is not copied: it is rebuilt on the destination from the records, with the stored
vectors of the index texts (:mod:`skill_library.text_vectors`), so no model is loaded
unless a text has no stored vector. Every tenant's rows are copied, and each tenant's
index is built. The tables of procedures and usage patterns
(:mod:`skill_library.storage.pattern_tables`) are copied too, ids kept (a pattern's marks
name transition ids), and so are erasure's tombstones and redaction's aliases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skill_library.errors import DestinationNotEmptyError as DestinationNotEmptyError
from skill_library.record_store import SQLRecordStore
from skill_library.storage.copying import COPY_BATCH as COPY_BATCH
from skill_library.storage.copying import copy_records as copy_records


@dataclass
class CopyReport:
    """What :func:`copy_folder_library` copied."""

    rows: dict[str, int] = field(default_factory=dict)
    indexed: int | None = None


def copy_folder_library(
    folder: Path, records: str, index: str | None = None, *, index_token: str | None = None
) -> CopyReport:
    """Copy the library in ``folder`` into the record store at ``records`` and, when
    ``index`` is given, build that server index (each tenant's collection) from the copied
    records; ``indexed`` counts the skills indexed over all tenants."""
    source = SQLRecordStore.in_folder(Path(folder), create=False)
    try:
        source.check_integrity()
        destination = SQLRecordStore(records, create=True)
        try:
            report = CopyReport(rows=copy_records(source, destination))
            tenants = destination.tenants()
        finally:
            destination.close()
    finally:
        source.close()
    if index is not None:
        from skill_library.library import SkillLibrary

        with SkillLibrary(records=records, index=index, index_token=index_token) as library:
            report.indexed = library.reindex()
            for tenant in tenants:
                if tenant != library.tenant:
                    report.indexed += library.for_tenant(tenant).reindex()
    return report
