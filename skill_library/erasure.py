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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_library.errors import SkillLibraryError
from skill_library.models import LearnResult, Trace
from skill_library.privacy import _norm
from skill_library.storage import chroma_file
from skill_library.storage.erasure_rows import UNSWEPT_COLUMNS as UNSWEPT_COLUMNS
from skill_library.storage.erasure_rows import UNSWEPT_TABLES as UNSWEPT_TABLES
from skill_library.storage.erasure_rows import ErasureRows
from skill_library.storage.interface import UnitOfWork, unit_of_work
from skill_library.storage.privacy_rows import SALT_KEY as SALT_KEY
from skill_library.storage.privacy_rows import opt_out_key as opt_out_key
from skill_library.storage.privacy_rows import opt_out_keys as opt_out_keys

if TYPE_CHECKING:
    from skill_library.protocols import Erasing, Tenant

#: A subject shorter than this (after stripping) is refused: it would match too much.
MIN_SUBJECT_CHARS = 2
#: What a value left in a row that cannot be deleted is replaced by.
FORGOTTEN_MARK = "(forgotten)"

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
    store = unit_of_work(library.context.store, "forget")
    dead = ErasureRows(store).tombstoned({n: _identities(t) for n, t in traces.items()})
    return {n: LearnResult(status="forgotten", reasons=[
        "this trace was erased by forget(subject) at its subject's request: it is never learned again"])
        for n in traces if n in dead}


# -- forget ---------------------------------------------------------------------------
def _check_subject(subject: object) -> str:
    text = str(subject if subject is not None else "").strip()
    if len(text) < MIN_SUBJECT_CHARS:
        raise ForgetError(f"forget needs a subject of at least {MIN_SUBJECT_CHARS} characters (a user id "
                          f"or an identifying value such as an email), got {subject!r}")
    return text


def forget(library: "Erasing", subject: str) -> ForgetReport:
    """Erase ``subject`` from ``library``'s tenant (see the module docstring); the report
    says what was removed. An unknown subject removes nothing and says so."""
    from skill_library.induction import admission
    from skill_library.text_vectors import embedded_forms, text_digest

    subject = _check_subject(subject)
    match = Matcher(subject)
    report = ForgetReport(subject=subject)
    store = unit_of_work(library.context.store, "forget")
    patterns = library.patterns
    with library.context.index.writing() as index:
        rows = ErasureRows(store)
        traces = rows.matching_traces(lambda task, body: match.text(task) or match.any(body))
        ids = sorted(traces)
        # patterns and procedures of the subject, by the subject column and by their text
        report.transitions = patterns.forget_matching(match.any)
        report.procedures = library.procedures.forget_matching(subject, match.any, index)
        opted = patterns.opted_out(subject)
        dead = {i for trace in traces.values() for i in _identities(trace)} | set(ids)
        erased = rows.erase(ids, dead, match, lambda old: {text_digest(f) for x in old for f in embedded_forms(x)})
        report.examples, report.outcome_links, report.traces = erased.examples, erased.outcome_links, erased.traces
        report.scrubbed, report.left, report.tombstones = erased.scrubbed, erased.left, erased.tombstones
        affected = erased.affected
        report.opt_out_kept = opted
        report.found = bool(ids or report.transitions or report.procedures or report.scrubbed or opted)
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


def _audit(store: UnitOfWork, report: ForgetReport) -> None:
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
    store = unit_of_work(library.context.store, "forget")
    with library.context.index.locked():
        store.compact()
        if library.index_path is not None:
            compact_chroma_folder(library.index_path, match, library.context.index.collection)
            library.context.index.scrub()  # the reopen's HNSW files, past their last element


def compact_chroma_folder(folder: Path, match: Matcher | None = None, collection: str | None = None) -> None:
    """Scrub the subject from Chroma's log entries (``match``), merge its full-text index
    and VACUUM its file, with the folder's client closed meanwhile (the next call opens a
    fresh one)."""
    from skill_library import vector_index

    path = Path(folder).resolve() / "chroma.sqlite3"
    if not path.exists():
        return
    with vector_index.closed_for_maintenance(folder):
        chroma_file.purge(path, match, collection)


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
