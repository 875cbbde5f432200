"""The tenant's erasure salt and the salted keys derived from it (``library_meta``'s
:data:`SALT_KEY` row): an opt-out kept through ``forget`` names its subject by such a key,
and a tombstone is the salted digest of an erased trace's identity
(skill_library.erasure). Read and written on the caller's transaction."""

from __future__ import annotations

import hashlib
import secrets

import sqlalchemy as sa

from skill_library.privacy import _norm
from skill_library.storage.tables import meta_table

#: The ``library_meta`` key of the tenant's tombstone salt.
SALT_KEY = "erasure_salt"


def salt(conn: sa.Connection, tenant: str, *, create: bool) -> str | None:
    """The tenant's salt; made and stored on first use with ``create`` (else None)."""
    found = conn.execute(sa.select(meta_table.c.value).where(meta_table.c.tenant == tenant)
                         .where(meta_table.c.key == SALT_KEY)).scalar()
    if found is None and create:
        found = secrets.token_hex(16)
        conn.execute(meta_table.insert().values(tenant=tenant, key=SALT_KEY, value=found))
    return found


def digest(salt: str, identity: str) -> str:
    """sha256 of ``identity`` salted with ``salt`` (hex)."""
    return hashlib.sha256(f"{salt}:{identity}".encode()).hexdigest()


def _key(salt: str, subject: str) -> str:
    return "forgotten:" + digest(salt, _norm(subject).strip().casefold())[:40]


def opt_out_key(conn: sa.Connection, tenant: str, subject: str) -> str:
    """How an opt-out kept through ``forget`` names its subject: a salted hash."""
    found = salt(conn, tenant, create=True)
    assert found is not None
    return _key(found, subject)


def opt_out_keys(conn: sa.Connection, tenant: str, subject: str) -> list[str]:
    """The hashed opt-out key of ``subject`` when the tenant has a salt (else none)."""
    found = salt(conn, tenant, create=False)
    return [] if found is None else [_key(found, subject)]
