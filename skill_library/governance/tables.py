"""The governance tables: defined in the storage layer
(:mod:`skill_library.storage.governance_tables`), re-exported here for governance's modules."""

from skill_library.storage.governance_tables import ALL_TABLES as ALL_TABLES
from skill_library.storage.governance_tables import actors_table as actors_table
from skill_library.storage.governance_tables import audit_table as audit_table
from skill_library.storage.governance_tables import canaries_table as canaries_table
from skill_library.storage.governance_tables import evaluations_table as evaluations_table
from skill_library.storage.governance_tables import policies_table as policies_table
from skill_library.storage.governance_tables import tool_specs_table as tool_specs_table
