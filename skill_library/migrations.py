"""The schema steps moved to :mod:`skill_library.storage.migrations` (no SQL outside
``storage/``); this name stays for callers: it *is* that module (same object, so setting
an attribute here sets it there)."""

import sys

from skill_library.storage import migrations as _moved
from skill_library.storage.migrations import MIGRATIONS as MIGRATIONS
from skill_library.storage.migrations import applied_version as applied_version
from skill_library.storage.migrations import migrations_table as migrations_table
from skill_library.storage.migrations import upgrade as upgrade

sys.modules[__name__] = _moved
