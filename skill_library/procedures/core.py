"""Instruction procedures: rules for how the agent acts, written into its system prompt.

A procedure is a versioned skill record of kind ``instruction``: its ``when`` is the
trigger and its ``description`` the directive; its title, confidence and who added it are
kept per version in the ``procedures`` table. Procedures are filtered by confidence, not by
Laplace reliability: an outcome moves it by :data:`SUCCESS_STEP` / :data:`FAILURE_STEP`,
clamped to [0, 1]. Added by the local admin a procedure is active; an extracted one is a
draft (an optimizer proposes, it does not activate).
"""

from __future__ import annotations

import builtins
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from skill_library.deprecation import renamed_argument
from skill_library.errors import SkillLibraryError, SkillNotFoundError
from skill_library.models import COUNTED_KINDS, OutcomeKind, Provenance, Skill
from skill_library.patterns.tables import sql_store
from skill_library.storage.procedures import ProcedureRows

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import openai

    from skill_library.procedures.extract import Extraction
    from skill_library.protocols import Proceduring

TEMPLATES = Path(__file__).with_name("templates")
#: a new procedure's confidence
DEFAULT_CONFIDENCE = 0.6
#: confidence added by a successful application, and taken by a failed one
SUCCESS_STEP = 0.08
FAILURE_STEP = 0.15
#: build_system_prompt: least confidence, and most procedures written into the prompt
PROMPT_THRESHOLD = 0.55
PROMPT_LIMIT = 6
#: with a task, a procedure takes part only when its trigger is at least this cosine-similar
TASK_RELEVANCE_SIMILARITY = 0.3
#: the heading of the prompt's procedures block
HEADING = "LEARNED OPERATIONAL PROCEDURES (apply these in relevant situations):"
#: longest name derived from a title
MAX_DERIVED_NAME = 60
#: confidence values are kept to this many decimals (0.6 + 0.08 is 0.68, not 0.6800000000000001)
CONFIDENCE_DECIMALS = 6

Source = Literal["admin", "extracted"]


class Procedure(BaseModel):
    """A procedure version as the prompt and the CLI see it."""

    name: str
    version: int
    title: str
    trigger: str
    description: str
    confidence: float
    successes: int
    failures: int
    status: str
    actor: str | None = None
    subject: str | None = None
    source: str = "admin"
    created_at: datetime | None = None


def derived_name(title: str) -> str:
    """``"Quantify the worst case!"`` -> ``quantify_the_worst_case``."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    name = "_".join(words)[:MAX_DERIVED_NAME].strip("_")
    if not name:
        raise ValueError(f"title {title!r} has no letters or digits to derive a name from")
    return name if name[0].isalpha() else f"procedure_{name}"


def step(confidence: float, positive: bool) -> float:
    """The confidence after one outcome: +SUCCESS_STEP (at most 1) or -FAILURE_STEP (at least 0)."""
    moved = confidence + SUCCESS_STEP if positive else confidence - FAILURE_STEP
    return round(min(1.0, max(0.0, moved)), CONFIDENCE_DECIMALS)


class Procedures:
    """The instruction procedures of one library (``library.procedures``)."""

    def __init__(self, library: "Proceduring") -> None:
        self._library = library
        self._store = sql_store(library.context.store)
        #: the procedure rows of this library's tenant (skill_library.storage.procedures)
        self._rows_of = ProcedureRows(self._store)
        import jinja2  # on first use: opening a library for a governance call does not need it

        self._templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
            undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
        )

    # -- writing --------------------------------------------------------------------------
    def add(
        self,
        title: str,
        trigger: str,
        description: str,
        *,
        confidence: float = DEFAULT_CONFIDENCE,
        name: str | None = None,
        actor: str | None = None,
        subject: str | None = None,
        source: Source = "admin",
    ) -> Skill:
        """Store a procedure as the next version of ``name`` (default: from the title):
        active when an admin adds it (``skill.admin``), a draft when it was extracted
        (the extracting actor needs ``skill.propose``; a person approves and promotes it).
        ``actor`` must be registered (None: the library's actor); the step is audited."""
        from skill_library.governance import audit
        from skill_library.governance.actors import require
        from skill_library.governance.workflow import caller_actor

        who = caller_actor(self._library, actor)
        if source == "admin":
            require(who, "skill.admin", "add an active procedure directly")
        else:
            require(who, "skill.propose", "propose an extracted procedure")
        actor = who.id
        for field, value in (("title", title), ("trigger", trigger), ("description", description)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{field}: a procedure needs a non-empty {field}")
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence must be within [0, 1], got {confidence}")
        name = name or derived_name(title)
        try:
            existing = self._store.get(name)
        except SkillNotFoundError:
            existing = None
        if existing is not None and existing.kind != "instruction":
            raise SkillLibraryError(f"{name!r} is a code skill, not a procedure: choose another name")
        skill = Skill(
            name=name, kind="instruction", when=trigger.strip(), description=description.strip(),
            provenance=Provenance(generalizer="hand-written" if source == "admin" else "llm-extracted",
                                  created_by=actor),
        )
        status: Literal["active", "draft"] = "active" if source == "admin" else "draft"
        def write(conn: Any) -> Skill:  # the version, its procedure row and its audit event at once
            stored, _superseded = self._store.insert_version(conn, skill, status=status)
            self._rows_of.insert(conn, stored.name, stored.version, title=title.strip(), confidence=confidence,
                                 actor=actor, subject=subject, source=source)
            audit.write(conn, self._store.tenant, stored.name, stored.version, None, status,
                        actor=actor, reason="procedure added by an admin" if source == "admin"
                        else "procedure extracted from a session: a draft until a person approves it",
                        evidence={"kind": "instruction", "source": source, "confidence": confidence})
            return stored

        with self._library.context.index.writing() as index:
            stored: Skill = self._store.retrying(write)
            if status == "active":
                self._library.context.sync(index, [stored])
        return stored

    def record_outcome(
        self, name: str, outcome: "bool | OutcomeKind | str | None" = None, *, reason: str | None = None,
        positive: "bool | OutcomeKind | str | None" = None,
    ) -> Procedure:
        """One application of procedure ``name`` (its current version): the counts and the
        confidence follow (+0.08 at most 1.0, -0.15 at least 0.0). ``outcome`` is a bool
        (True: success) or an :class:`OutcomeKind`; ``misuse``, ``not_applicable`` and
        ``wrong_skill`` are logged with ``reason`` and move neither counts nor confidence.
        ``positive=`` is the deprecated old name of ``outcome``."""
        given = renamed_argument("record_outcome", "outcome", outcome, "positive", positive)
        if not isinstance(given, (bool, str)):
            raise TypeError(f"outcome must be a bool or an OutcomeKind, got {type(given).__name__}")
        kind = OutcomeKind.of(given)
        skill = self._procedure_skill(name)
        if not kind.counted:
            self._store.record_outcome(name, False, version=skill.version, kind=kind, reason=reason)
            return self.get(name)
        self._rows_of.record_outcome(
            name, skill.version, kind, reason, confidence_after=lambda c: step(c, kind is OutcomeKind.SUCCESS),
            # an instruction skill stored by add(): it starts at the default
            default={"title": name, "confidence": DEFAULT_CONFIDENCE, "actor": skill.provenance.created_by,
                     "source": "admin"})
        return self.get(name)

    # -- reading --------------------------------------------------------------------------
    def _procedure_skill(self, name: str, version: int | None = None) -> Skill:
        skill = self._store.get(name, version)
        if skill.kind != "instruction":
            raise SkillLibraryError(f"{name!r} is a code skill, not a procedure (use feedback())")
        return skill

    def _rows(self, keys: builtins.list[tuple[str, int]] | None = None) -> dict[tuple[str, int], Any]:
        return self._rows_of.rows(keys)

    def _as_procedure(self, skill: Skill, row: Any) -> Procedure:
        return Procedure(
            name=skill.name, version=skill.version, title=row["title"] if row else skill.name,
            trigger=skill.when, description=skill.description,
            confidence=float(row["confidence"]) if row else DEFAULT_CONFIDENCE,
            successes=skill.successes, failures=skill.failures, status=skill.status,
            actor=row["actor"] if row else skill.provenance.created_by,
            subject=row["subject"] if row else None, source=row["source"] if row else "admin",
            created_at=row["created_at"] if row else None,
        )

    def get(self, name: str, version: int | None = None) -> Procedure:
        """Procedure ``name`` (its current version, or ``version``)."""
        skill = self._procedure_skill(name, version)
        return self._as_procedure(skill, self._rows([(skill.name, skill.version)]).get((skill.name, skill.version)))

    def list(self, *, status: str | None = None, subject: str | None = None) -> builtins.list[Procedure]:
        """The current version of every procedure (optionally only ``status`` / ``subject``)."""
        skills = [s for s in self._store.list() if s.kind == "instruction"]
        rows = self._rows()
        out = [self._as_procedure(s, rows.get((s.name, s.version))) for s in skills]
        return [p for p in out if (status is None or p.status == status)
                and (subject is None or p.subject == subject)]

    def confidences(self, names: builtins.list[str]) -> dict[str, float]:
        """The confidence of the current version of each of ``names`` that is a procedure."""
        found = self._store.get_many_active(names)
        rows = self._rows([(s.name, s.version) for s in found.values()])
        return {n: float(rows[(s.name, s.version)]["confidence"]) if (s.name, s.version) in rows
                else DEFAULT_CONFIDENCE for n, s in found.items() if s.kind == "instruction"}

    def confidence_path(self, name: str) -> builtins.list[float]:
        """Confidence of ``name``'s current version before and after each applied session."""
        procedure = self.get(name)
        row = self._rows([(procedure.name, procedure.version)]).get((procedure.name, procedure.version))
        value = float(row["initial_confidence"]) if row else DEFAULT_CONFIDENCE
        path: builtins.list[float] = [value]
        for outcome in self._store.outcome_log(name):
            if outcome["version"] == procedure.version and outcome["kind"] in COUNTED_KINDS:
                value = step(value, outcome["success"])
                path.append(value)
        return path

    # -- the prompt -----------------------------------------------------------------------
    def qualifying(
        self, *, task: str | None = None, threshold: float = PROMPT_THRESHOLD, limit: int = PROMPT_LIMIT,
        excluded_subjects: frozenset[str] = frozenset(),
    ) -> builtins.list[Procedure]:
        """Active procedures at or above ``threshold``, highest confidence first, at most
        ``limit``; with ``task`` only those whose trigger is relevant to it."""
        chosen = [p for p in self.list(status="active")
                  if p.confidence >= threshold and p.subject not in excluded_subjects]
        if task is not None and chosen:
            from skill_library.induction.description import query_text

            query = self._library.embedder.embed([query_text(task)])[0]
            triggers = self._library.context.vectors.embed([p.trigger for p in chosen])
            chosen = [p for p, v in zip(chosen, triggers)
                      if sum(a * b for a, b in zip(query, v)) >= TASK_RELEVANCE_SIMILARITY]
        chosen.sort(key=lambda p: (-p.confidence, p.name))
        return chosen[:limit]

    def build_system_prompt(
        self, base: str, *, task: str | None = None, threshold: float = PROMPT_THRESHOLD,
        limit: int = PROMPT_LIMIT, excluded_subjects: frozenset[str] = frozenset(),
    ) -> str:
        """``base`` (less trailing newlines), then (when any procedure qualifies) a blank line, :data:`HEADING` and the
        qualifying procedures as ``N. Title`` / ``   Trigger: ...`` / ``   Description``."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        procedures = self.qualifying(task=task, threshold=threshold, limit=limit,
                                     excluded_subjects=excluded_subjects)
        return self._templates.get_template("system_prompt.j2").render(
            base=base.rstrip("\n"), procedures=procedures
        ).rstrip("\n")

    # -- extraction -----------------------------------------------------------------------
    def extract(
        self,
        messages: "Sequence[Mapping[str, Any]]",
        *,
        actor: str | None,
        subject: str | None = None,
        client: "openai.OpenAI | None" = None,
        model: str | None = None,
        max_retries: int | None = None,
    ) -> "Extraction":
        """Ask the model (``client``, else the ``OPENAI_*`` endpoint) for at most three
        procedures from a finished session's ``messages``; valid ones that are rules, not
        facts about the user, are stored as drafts (see skill_library.procedures.extract)."""
        from skill_library.llm_endpoint import model_name, openai_client
        from skill_library.procedures import extract

        if subject is not None and self._library.patterns.opted_out(subject):
            return extract.Extraction(rejected=True, reasons=[f"{subject!r} opted out: nothing is extracted"])
        client = client if client is not None else openai_client()
        prompt = extract.messages_for(messages, self._templates)
        retries = extract.EXTRACT_MAX_RETRIES if max_retries is None else max_retries
        items, attempts = extract.ask(client, model_name(model), prompt, self._templates, retries)
        result = extract.Extraction(attempts=attempts)
        if attempts and not items:
            result.rejected = True
            result.reasons = [f"attempt {n}: {' | '.join(p)}" for n, p in enumerate(attempts, start=1)]
            return result
        taken = set(self._store.names())
        for item in items:
            problem = extract.fact_problem(item)
            if problem is None:
                name = derived_name(item["title"])
                if name in taken:
                    skill = self._store.get(name)
                    if skill.kind != "instruction":
                        problem = f"its name {name!r} is taken by a code skill"
            if problem is not None:
                result.refused.append((item, problem))
                continue
            result.drafts.append(self.add(
                item["title"], item["trigger"], item["description"], confidence=float(item["confidence"]),
                actor=actor, subject=subject, source="extracted",
            ))
            taken.add(result.drafts[-1].name)
        return result

    # -- transparency ---------------------------------------------------------------------
    def forget_subject(self, subject: str) -> builtins.list[str]:
        """Delete every procedure extracted for ``subject`` (rows, audit events, index
        entries, text vectors); returns their names."""
        names = self._rows_of.names_for_subject(subject)
        if not names:
            return []
        with self._library.context.index.writing() as index:
            self._delete(names, index)
        return names

    def forget_matching(self, subject: str, names: "Callable[[Any], bool]", index: Any) -> builtins.list[str]:
        """Delete every procedure added for ``subject`` or whose subject, title, trigger or
        steps ``names`` (skill_library.erasure's matcher), under the caller's index write;
        returns their names."""
        found = self._rows_of.matching(subject, names)
        if found:
            self._delete(found, index)
        return found

    def _delete(self, names: "Sequence[str]", index: Any) -> None:
        from skill_library.governance.actors import SYSTEM_ID
        from skill_library.storage.actor_rows import AuditNote

        for name in names:
            index.delete(name)
        # their audit trail names them too; one event says that something was forgotten,
        # never whose or what
        self._rows_of.delete(names, AuditNote("forgotten", SYSTEM_ID,
                                              "a subject's procedures were forgotten at their request",
                                              {"procedures": len(names)}))
        self._store.purge(names)
