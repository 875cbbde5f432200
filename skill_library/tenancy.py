"""Tenants: one library's stores hold the skills of several tenants, each isolated.

Every record (skill versions, active pointers, outcomes, traces, examples, derived texts,
procedures, usage patterns, index generation) carries a ``tenant`` column, and a record
store bound to a tenant (:meth:`RecordStore.for_tenant`) filters every query by it.
Each tenant has its own Chroma collection (no ``where`` filter on the fetch hot path): the
default tenant keeps the collection a library had before tenants existed, so existing
folders and servers keep working; another tenant's is :func:`collection_name`.
"""

from __future__ import annotations

import re

from skill_library.errors import InvalidTenantError

#: the tenant of a library opened without one, and of every record made before tenants
DEFAULT_TENANT = "default"
#: longest tenant name (it becomes part of a Chroma collection name and of each row key)
TENANT_MAX_LENGTH = 63
#: a tenant name: lowercase letters, digits, ``_`` and ``-``, starting and ending with a
#: letter or digit (so that the derived collection name is valid for Chroma)
TENANT_PATTERN = re.compile(r"[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?")
#: joins an index's base collection name and a tenant name (never inside a tenant name)
COLLECTION_SEPARATOR = ".tenant."
#: environment setting the CLI reads when no ``--tenant`` is given
TENANT_ENV = "SKILLS_TENANT"


def tenant_problem(name: object) -> str | None:
    """What is wrong with ``name`` as a tenant name (None: nothing)."""
    if not isinstance(name, str):
        return f"a tenant name is a string, not {type(name).__name__}"
    if not name:
        return "a tenant name must not be empty"
    if len(name) > TENANT_MAX_LENGTH:
        return f"tenant name {name[:TENANT_MAX_LENGTH]!r}... is longer than {TENANT_MAX_LENGTH} characters"
    if not TENANT_PATTERN.fullmatch(name):
        return (f"tenant name {name!r} is invalid: use lowercase letters, digits, '_' and '-', "
                "starting and ending with a letter or digit")
    return None


def check_tenant(name: object) -> str:
    """``name`` when it is a valid tenant name, else :class:`InvalidTenantError`."""
    problem = tenant_problem(name)
    if problem is not None:
        raise InvalidTenantError(problem)
    assert isinstance(name, str)
    return name


def collection_name(base: str, tenant: str) -> str:
    """The Chroma collection of ``tenant`` in an index whose default collection is ``base``."""
    return base if tenant == DEFAULT_TENANT else f"{base}{COLLECTION_SEPARATOR}{tenant}"
