"""What a reader must know of a library folder before opening it, importing nothing: the
records file's name and the schema version this code writes.

Shared by the SQL store (``tables``, ``sql_store``), ``skill_library.storage.migrations`` (which
checks that its list of steps is this long) and the CLI's light reads
(``storage.light_reads``, which read a folder only when its schema is exactly this one).
"""

from __future__ import annotations

#: the schema version this code writes: len(skill_library.storage.migrations.MIGRATIONS)
SCHEMA_VERSION = 11
#: the file name of the SQLite records inside a library folder
RECORDS_FILE = "records.db"
