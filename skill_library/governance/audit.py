"""The audit log, as governance writes and reads it: the events are rows of the storage
layer (:mod:`skill_library.storage.audit`, where this module's names are defined)."""

from skill_library.storage.audit import ACTORS as ACTORS
from skill_library.storage.audit import POLICY as POLICY
from skill_library.storage.audit import SUBJECTS as SUBJECTS
from skill_library.storage.audit import TOOLS as TOOLS
from skill_library.storage.audit import AuditEvent as AuditEvent
from skill_library.storage.audit import read as read
from skill_library.storage.audit import write as write
from skill_library.storage.audit import write_many as write_many
