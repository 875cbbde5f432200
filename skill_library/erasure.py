"""Erasure: ``forget(subject)`` removes a person's traces everywhere, and keeps them out.

A *subject* is a user id (the subject of usage patterns and procedures) or an identifying
value such as an email. :func:`forget` finds, in the library's tenant:

- every trace holding the value (in its task, params, calls' arguments, results or errors,
  as a whole word, case-insensitive, after Unicode normalization): the trace row, its task
  vector, the examples made from it, the links of outcomes to it (``outcomes.trace_id``;
  the outcome row stays, so a skill's success and failure counts stay) and its id in the
  versions' provenance are removed;
- the subject's usage patterns (transitions, marks, open sessions) and procedures (those
  added for the subject, and any whose text names the value);
- any other row whose text still names the value (an audit event's evidence, an
  evaluation body, a version's texts written before the masking pass): the value is
  replaced by ``(forgotten)`` in place;

then re-derives what was derived from the erased traces (the skills' examples, which of
them are indexed, their index entries and prototypes) and compacts storage so that the
deleted bytes are gone from the files too: on SQLite a WAL checkpoint and ``VACUUM`` of
``records.db``, and for a folder index Chroma's applied log entries purged and its file
vacuumed; on PostgreSQL a ``VACUUM`` of the touched tables.

A *tombstone* of each erased trace is kept: the SHA-256 of a per-library random salt and
the trace's content identity (:meth:`~skill_library.models.Trace.content_id`) and stored
id. Learning a trace whose tombstone exists says ``forgotten`` and stores nothing. The
tombstone cannot be read back into the trace: without the trace in hand it tells nothing.

What remains: aggregate counts (a version's successes and failures, its outcome rows
without their trace link), skills and their code (the masking pass kept personal values out
of them), and one audit event saying that a subject was forgotten, with counts, never whose
(docs/privacy.md, "Erasure").
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from skill_library.errors import SkillLibraryError
from skill_library.models import LearnResult, Trace, utc_now
from skill_library.privacy import _norm
from skill_library.storage.privacy_rows import SALT_KEY as SALT_KEY
from skill_library.storage.privacy_rows import digest as _digest
from skill_library.storage.privacy_rows import opt_out_key as opt_out_key
from skill_library.storage.privacy_rows import opt_out_keys as opt_out_keys
from skill_library.storage.privacy_rows import salt as _salt
from skill_library.storage.privacy_tables import aliases_table, tombstones_table
from skill_library.storage.tables import (
    examples_table,
    outcomes_table,
    profiles_table,
    task_vectors_table,
    traces_table,
    vectors_table,
    versions_table,
)

if TYPE_CHECKING:
    from skill_library.protocols import Erasing, Tenant
    from skill_library.record_store import SQLRecordStore

#: A subject shorter than this (after stripping) is refused: it would match too much.
MIN_SUBJECT_CHARS = 2
#: What a value left in a row that cannot be deleted is replaced by.
FORGOTTEN_MARK = "(forgotten)"
#: Traces read per batch while looking for a subject's.
SCAN_BATCH = 500
#: Tries of the final WAL checkpoint (another reader may hold it back), and the pause between.
CHECKPOINT_TRIES = 50
CHECKPOINT_PAUSE_SECONDS = 0.1

class ForgetError(SkillLibraryError, ValueError):
    """A forget call was wrong: an empty or too short subject."""


@dataclass
class ForgetReport:
    """What :func:`forget` removed (``found`` False: nothing was known, nothing removed)."""

    subject: str
    found: bool = False
    traces: int = 0
    examples: int = 0
    outcome_links: int = 0
    transitions: int = 0
    procedures: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)  # skills whose examples/index were re-derived
    index_entries: int = 0
    opt_out_kept: bool = False
    scrubbed: dict[str, int] = field(default_factory=dict)  # table -> rows the value was replaced in
    #: table -> rows that still name the subject in a key, a skill name or an actor column
    #: (a skill named after the subject: ``redact_stored()`` renames it; an actor: ``actors remove``)
    left: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data (what the CLI prints as JSON and the console shows)."""
        return asdict(self)

    def summary(self) -> str:
        """One line for people: what was removed, or that nothing was known."""
        if not self.found:
            return f"nothing is known about {self.subject}: nothing was removed"
        scrubbed = sum(self.scrubbed.values())
        return (f"forgot {self.subject}: {self.traces} trace(s), {self.examples} example(s), "
                f"{self.outcome_links} outcome link(s), {self.transitions} transition(s), "
                f"{len(self.procedures)} procedure(s), {self.index_entries} index entr(y/ies) removed; "
                f"{len(self.skills)} skill(s) re-derived; {scrubbed} other row(s) scrubbed; "
                f"{self.tombstones} tombstone(s) kept"
                + (f"; still named in keys or names of: {', '.join(sorted(self.left))} (see docs/privacy.md)"
                   if self.left else ""))


# -- matching ---------------------------------------------------------------------------
class Matcher:
    """Whether a text or a JSON value names the subject (whole word, case-insensitive)."""

    def __init__(self, subject: str) -> None:
        self.value = _norm(subject).strip().casefold()
        self._re = re.compile(r"(?<!\w)" + re.escape(self.value) + r"(?!\w)")

    def text(self, text: str) -> bool:
        return bool(self._re.search(_norm(text).casefold()))

    def any(self, value: Any) -> bool:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return False
        if isinstance(value, (int, float)):
            return str(value).casefold() == self.value
        if isinstance(value, dict):
            return any(self.text(str(k)) or self.any(v) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return any(self.any(v) for v in value)
        return False

    def scrub(self, value: Any) -> Any:
        """``value`` with every occurrence of the subject replaced by :data:`FORGOTTEN_MARK`."""
        if isinstance(value, str):
            normalized = _norm(value)
            if not self._re.search(normalized.casefold()):
                return value
            return re.sub(r"(?<!\w)" + re.escape(self.value) + r"(?!\w)", FORGOTTEN_MARK, normalized,
                          flags=re.IGNORECASE)
        if isinstance(value, dict):
            return {self.scrub(k) if isinstance(k, str) else k: self.scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and self.any(value):
            return FORGOTTEN_MARK
        return value


# -- tombstones -------------------------------------------------------------------------
def _identities(trace: Trace) -> set[str]:
    return {trace.id, trace.content_id()}


def forgotten(library: "Tenant", traces: "dict[int, Trace]") -> dict[int, LearnResult]:
    """The traces (by position) whose tombstone exists: each a ``forgotten`` result. The
    learn pipeline drops them before anything is generalized or stored."""
    if not traces:
        return {}
    store: "SQLRecordStore" = library.context.store  # type: ignore[assignment]
    with store.transaction(write=False) as conn:
        salt = _salt(conn, store.tenant, create=False)
        if salt is None:
            return {}
        wanted = {n: {_digest(salt, i) for i in _identities(t)} for n, t in traces.items()}
        every = sorted(set().union(*wanted.values()))
        dead = set(conn.execute(sa.select(tombstones_table.c.digest)
                                .where(tombstones_table.c.tenant == store.tenant)
                                .where(tombstones_table.c.digest.in_(every))).scalars())
    return {n: LearnResult(status="forgotten", reasons=[
        "this trace was erased by forget(subject) at its subject's request: it is never learned again"])
        for n, digests in wanted.items() if digests & dead}


# -- forget ---------------------------------------------------------------------------
def _check_subject(subject: object) -> str:
    text = str(subject if subject is not None else "").strip()
    if len(text) < MIN_SUBJECT_CHARS:
        raise ForgetError(f"forget needs a subject of at least {MIN_SUBJECT_CHARS} characters (a user id "
                          f"or an identifying value such as an email), got {subject!r}")
    return text


def _matching_traces(conn: sa.Connection, store: "SQLRecordStore", match: Matcher) -> dict[str, Trace]:
    found: dict[str, Trace] = {}
    last = ""
    while True:
        rows = conn.execute(sa.select(traces_table.c.id, traces_table.c.task, traces_table.c.body)
                            .where(store.tenant_filter(traces_table)).where(traces_table.c.id > last)
                            .order_by(traces_table.c.id).limit(SCAN_BATCH)).all()
        if not rows:
            return found
        for trace_id, task, body in rows:
            if match.text(task) or match.any(body):
                found[trace_id] = Trace.model_validate(body)
        last = rows[-1][0]


def _in(column: Any, values: Sequence[str]) -> Iterator[Any]:
    from skill_library import settings

    ordered = sorted(values)
    for start in range(0, len(ordered), settings.IN_QUERY_BATCH):
        yield column.in_(ordered[start : start + settings.IN_QUERY_BATCH])


def _record_tables() -> list[sa.Table]:
    """Every table with a tenant column the library writes (records, governance, patterns,
    procedures), for the sweep that scrubs what the specific steps left."""
    from skill_library import migrations  # noqa: F401  (registers every table the steps create)
    from skill_library.storage.tables import metadata

    # the tombstones and the aliases of renamed skills are the erasure's own rows
    own = {traces_table.name, tombstones_table.name, aliases_table.name}
    return [t for t in metadata.sorted_tables if "tenant" in t.c and t.name not in own]


#: governance records of who did what (accountability, not a subject's data): never scrubbed
#: (an actor is removed with ``skills actors remove``)
UNSWEPT_TABLES = frozenset({"actors", "tool_specs", "policies", "library_meta", "schema_migrations"})
#: columns never rewritten: keys and names other rows refer to, and who acted
UNSWEPT_COLUMNS = frozenset({"tenant", "name", "actor"})


def _sweep(conn: sa.Connection, tenant: str, match: Matcher, report: ForgetReport) -> set[str]:
    """Replace the value in every remaining row of the tenant that names it (text and JSON
    columns other than keys, names and actors); rows still naming it in such a column are
    counted in ``report.left``. Returns the old texts of versions changed (their vectors are
    dropped from the text cache)."""
    old_texts: set[str] = set()
    inspector_tables = set(sa.inspect(conn).get_table_names())
    for table in _record_tables():
        if table.name not in inspector_tables or table.name in UNSWEPT_TABLES:
            continue
        keys = list(table.primary_key.columns)
        texty = [c for c in table.c if isinstance(c.type, (sa.String, sa.Text, sa.JSON))]
        writable = [c for c in texty if c.name not in UNSWEPT_COLUMNS and not c.primary_key]
        if not texty:
            continue
        columns = list(dict.fromkeys([*keys, *texty]))
        for row in conn.execute(sa.select(*columns).where(table.c.tenant == tenant)).mappings():
            changed = {c.name: match.scrub(row[c.name]) for c in writable
                       if row[c.name] is not None and match.any(row[c.name])}
            if changed:
                if table.name == versions_table.name and "when_text" in changed:
                    old_texts.add(row["when_text"])
                condition = sa.and_(*(k == row[k.name] for k in keys))
                conn.execute(table.update().where(condition).values(**changed))
                report.scrubbed[table.name] = report.scrubbed.get(table.name, 0) + 1
            if any(row[c.name] is not None and match.any(row[c.name]) for c in texty if c not in writable):
                report.left[table.name] = report.left.get(table.name, 0) + 1
    return old_texts


def forget(library: "Erasing", subject: str) -> ForgetReport:
    """Erase ``subject`` from ``library``'s tenant (see the module docstring); the report
    says what was removed. An unknown subject removes nothing and says so."""
    from skill_library.induction import admission
    from skill_library.text_vectors import embedded_keys

    subject = _check_subject(subject)
    match = Matcher(subject)
    report = ForgetReport(subject=subject)
    store: "SQLRecordStore" = library.context.store  # type: ignore[assignment]
    patterns = library.patterns
    with library.context.index.writing() as index:
        with store.transaction(write=False) as conn:
            traces = _matching_traces(conn, store, match)
        ids = sorted(traces)
        # patterns and procedures of the subject, by the subject column and by their text
        report.transitions = patterns.forget_matching(match.any)
        report.procedures = library.procedures.forget_matching(subject, match.any, index)
        opted = patterns.opted_out(subject)
        affected: set[str] = set()
        with store.transaction(write=True) as conn:
            t = store.tenant_filter
            for cond in _in(examples_table.c.trace_id, ids):
                affected.update(conn.execute(sa.select(examples_table.c.name).where(t(examples_table))
                                             .where(cond)).scalars())
                report.examples += conn.execute(examples_table.delete().where(t(examples_table))
                                                .where(cond)).rowcount or 0
            for cond in _in(outcomes_table.c.trace_id, ids):
                affected.update(conn.execute(sa.select(outcomes_table.c.name).where(t(outcomes_table))
                                             .where(cond)).scalars())
                report.outcome_links += conn.execute(outcomes_table.update().where(t(outcomes_table))
                                                     .where(cond).values(trace_id=None)).rowcount or 0
            for cond in _in(task_vectors_table.c.trace_id, ids):
                conn.execute(task_vectors_table.delete().where(t(task_vectors_table)).where(cond))
            for cond in _in(traces_table.c.id, ids):
                report.traces += conn.execute(traces_table.delete().where(t(traces_table))
                                              .where(cond)).rowcount or 0
            # the versions' provenance keeps no link to an erased trace
            erased = set(ids)
            for name, version, provenance in conn.execute(
                    sa.select(versions_table.c.name, versions_table.c.version, versions_table.c.provenance)
                    .where(t(versions_table))).all():
                kept = [i for i in provenance.get("trace_ids", []) if i not in erased]
                if len(kept) != len(provenance.get("trace_ids", [])):
                    affected.add(name)
                    conn.execute(versions_table.update().where(t(versions_table))
                                 .where(versions_table.c.name == name).where(versions_table.c.version == version)
                                 .values(provenance={**provenance, "trace_ids": kept}))
            # a derived when recomputed from examples that named the subject
            conn.execute(profiles_table.delete().where(t(profiles_table))
                         .where(profiles_table.c.name.in_(sorted(affected) or [""])))
            old_texts = _sweep(conn, store.tenant, match, report)
            if old_texts:
                # every embedded form (phrases too), under the tenant's key and the unsalted one
                digests = embedded_keys(store.tenant, [(x, None) for x in old_texts])
                conn.execute(vectors_table.delete().where(vectors_table.c.digest.in_(digests)))
            report.opt_out_kept = opted
            report.found = bool(ids or report.transitions or report.procedures or report.scrubbed or opted)
            if ids:
                salt = _salt(conn, store.tenant, create=True)
                assert salt is not None
                dead = sorted({_digest(salt, i) for trace in traces.values() for i in _identities(trace)}
                              | {_digest(salt, i) for i in ids})
                known = set(conn.execute(sa.select(tombstones_table.c.digest)
                                         .where(tombstones_table.c.tenant == store.tenant)).scalars())
                fresh = [d for d in dead if d not in known]
                if fresh:
                    conn.execute(tombstones_table.insert(),
                                 [{"tenant": store.tenant, "digest": d, "at": utc_now()} for d in fresh])
                report.tombstones = len(fresh)
        # re-derive: each affected skill's examples (which are indexed), index entries, prototype
        for name in sorted(affected):
            remaining = store.examples([name])[name]
            try:
                store.save_evidence(name, examples=admission.choose_indexed(remaining))
            except SkillLibraryError:
                continue  # the skill itself is gone (a procedure forgotten above)
        names = sorted(affected)
        before = index.texts_of_many(names) if names else {}
        library.context.sync(index, names, known={})
        after = index.texts_of_many(names) if names else {}
        report.index_entries += len(set(before) - set(after))
        report.skills = names
        # no index document may still name the subject (a version's text scrubbed above)
        leftover = [i for i, doc in index.documents(list(index.entries())).items() if match.text(doc)]
        if leftover:
            index.delete_ids(leftover)
            report.index_entries += len(leftover)
        if report.found:
            _audit(store, report)
    if report.found:
        compact(library, match)
    return report


def _audit(store: "SQLRecordStore", report: ForgetReport) -> None:
    from skill_library.governance import audit
    from skill_library.governance.actors import SYSTEM_ID

    with store.transaction(write=True) as conn:
        audit.write(conn, store.tenant, audit.SUBJECTS, None, None, "forgotten", actor=SYSTEM_ID,
                    reason="a subject was forgotten at their request",
                    evidence={"traces": report.traces, "examples": report.examples,
                              "outcome_links": report.outcome_links, "transitions": report.transitions,
                              "procedures": len(report.procedures), "skills": len(report.skills),
                              "scrubbed": sum(report.scrubbed.values())})


# -- compaction -------------------------------------------------------------------------
def compact(library: "Erasing", match: Matcher | None = None) -> None:
    """Make deleted rows unrecoverable from the files: SQLite WAL checkpoint and VACUUM (and
    a folder index's applied Chroma log purged and vacuumed); PostgreSQL VACUUM."""
    store = library.context.store
    engine = store.engine  # type: ignore[attr-defined]
    with library.context.index.locked():
        if engine.dialect.name == "sqlite":
            engine.dispose()  # no pooled connection keeps a snapshot that stops the checkpoint
            raw = engine.raw_connection()  # the driver's connection: VACUUM runs outside any BEGIN
            try:
                cursor = raw.driver_connection.cursor()  # type: ignore[union-attr]
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cursor.execute("VACUUM")
                for _ in range(CHECKPOINT_TRIES):  # a reader in flight makes the checkpoint busy
                    busy = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    if not busy:
                        break
                    time.sleep(CHECKPOINT_PAUSE_SECONDS)
                cursor.close()
            finally:
                raw.close()
        elif engine.dialect.name == "postgresql":
            names = [t.name for t in _record_tables()] + [traces_table.name, tombstones_table.name]
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                present = set(sa.inspect(conn).get_table_names())
                for name in names:
                    if name in present:
                        conn.exec_driver_sql(f'VACUUM "{name}"')
        if library.index_path is not None:
            compact_chroma_folder(library.index_path, match, library.context.index.collection)


def compact_chroma_folder(folder: Path, match: Matcher | None = None, collection: str | None = None) -> None:
    """Scrub the subject from Chroma's log entries (``match``), merge its full-text index
    and VACUUM its file, with the folder's client closed meanwhile (the next call opens a
    fresh one)."""
    from skill_library import vector_index

    path = Path(folder).resolve() / "chroma.sqlite3"
    if not path.exists():
        return
    with vector_index.closed_for_maintenance(folder):
        _purge_chroma_file(path, match, collection)


def _purge_chroma_file(path: Path, match: Matcher | None, collection: str | None) -> None:
    import sqlite3

    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        if match is not None and collection is not None:
            # Chroma's log keeps every upsert's document; an entry of a document that names the
            # subject (deleted from the collection above: a later log entry deletes it) keeps
            # its place in the log, with the value scrubbed from its text. Only this tenant's
            # collection's entries: another tenant's are not this forget's to change.
            found = conn.execute("SELECT id FROM collections WHERE name = ?", (collection,)).fetchone()
            topic = f"%/{found[0]}" if found else None
            rows = conn.execute("SELECT seq_id, metadata FROM embeddings_queue WHERE topic LIKE ?",
                                (topic,)).fetchall() if topic else []
            for seq_id, meta in rows:
                if meta and match.text(meta):
                    conn.execute("UPDATE embeddings_queue SET metadata = ? WHERE seq_id = ?",
                                 (json.dumps(match.scrub(json.loads(meta))), seq_id))
        try:  # the full-text index keeps deleted documents' terms until its segments are merged
            conn.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
        except sqlite3.OperationalError:  # a Chroma without that table: nothing to merge
            pass
        conn.execute("VACUUM")
    finally:
        conn.close()


def files_holding(folder: Path, value: str) -> list[str]:
    """The files under ``folder`` whose bytes hold ``value`` (UTF-8, and UTF-16 and
    JSON-escaped forms): what the erasure test greps."""
    forms = {value.encode(), value.encode("utf-16-le"), json.dumps(value)[1:-1].encode()}
    forms |= {f.lower() for f in forms}
    found = []
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file():
            data = p.read_bytes().lower()
            if any(f in data for f in forms):
                found.append(str(p.relative_to(folder)))
    return found
