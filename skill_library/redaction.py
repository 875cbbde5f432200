"""Redacting versions stored before the masking pass, and the aliases of renamed skills.

``library.redact_stored()`` (``skills redact-stored``) is a library-level step, not a schema
migration: it needs the traces, the masking pass and the index, which a schema migration
(run on opening, with no embedder) does not have. It is idempotent, and reports what it did.

For each skill whose stored texts (name, ``when``, docstring/description, the code's string
constants, its example tasks) hold a value found in the skill's own traces (params, call
arguments, results: :func:`skill_library.privacy.trace_values`) or a common personal-data
shape (:func:`skill_library.privacy.shape_problems`):

- its current version gets a redacted **new version** (values as their role words, shapes
  masked; the code's string constants and docstring redacted, its logic untouched), with the
  old version's status and outcome counts (the aggregate stays); a constant of the code's
  logic that held a personal value is counted (``constants``) and named for review;
- every version that held personal data is **erased**: its ``when`` and description become
  a marker naming the redacted version, its code the redacted code; the examples are
  redacted (params as shapes); derived ``when`` profiles and cached text vectors of the old
  texts are dropped;
- an audit event per skill records the redaction (which versions, which fields, how many
  values), never the content;
- a name that held personal data (``send_note_to_zoe_quill``) gives a **renamed** skill
  (``send_note``); the old name stays an **alias** for a release (:data:`ALIAS_RELEASES`):
  ``get``, ``run`` and ``skills show`` by the old name resolve to the new one with a
  ``DeprecationWarning``; the old name's versions are retired and erased.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library import privacy
from skill_library.errors import SkillNotFoundError
from skill_library.models import Skill, Trace
from skill_library.storage import redaction_rows
from skill_library.storage.interface import unit_of_work
from skill_library.storage.redaction_rows import RedactionRows

if TYPE_CHECKING:
    from skill_library.protocols import Redacting

#: An alias of a renamed skill resolves for this many releases after the one that made it.
ALIAS_RELEASES = 1
#: The ``when`` and description of an erased version (``{name}``/``{version}``: the redacted one).
ERASED_TEXT = "(erased: this version held personal data; redacted as {name} v{version})"

def _release() -> str:
    from importlib import metadata as meta

    try:
        return meta.version("skill-library")
    except meta.PackageNotFoundError:  # pragma: no cover - a source checkout without install
        return "0"


# -- aliases ------------------------------------------------------------------------------
def resolve(library: "Redacting", name: str) -> str:
    """``name``, or the skill an alias of it names (with a ``DeprecationWarning``)."""
    store = unit_of_work(library.context.store, "redaction")
    row = redaction_rows.alias_of(store, name)
    if row is None:
        return name
    warnings.warn(f"skill {name!r} was renamed to {row[0]!r} (its name held personal data; "
                  f"redacted in release {row[1]}); the old name is an alias for {ALIAS_RELEASES} "
                  f"release, use {row[0]!r}", DeprecationWarning, stacklevel=3)
    return str(row[0])


def aliases(library: "Redacting") -> dict[str, str]:
    """Every alias of the tenant: old name -> new name."""
    store = unit_of_work(library.context.store, "redaction")
    return redaction_rows.aliases(store)


# -- finding personal data ----------------------------------------------------------------
def _values(traces: list[Trace], vocabulary: set[str]) -> dict[str, str]:
    """The values of ``traces`` that may identify someone: value -> its role in words."""
    found: dict[str, str] = {}
    for trace in traces:
        for value, role in privacy.trace_values(trace.params, trace.calls).items():
            if len(value) >= privacy.MIN_KNOWN_CHARS and privacy.may_identify(value, vocabulary):
                found.setdefault(value, privacy.role_words(role))
    return found


def _redact_text(text: str, roles: Mapping[str, str]) -> str:
    return privacy.scrub_shapes(privacy._sub_values(privacy._norm(text), roles))


def _holds(text: str, roles: Mapping[str, str]) -> bool:
    return bool(text) and _redact_text(text, roles) != privacy._norm(text)


def constants_changed(code: str, roles: Mapping[str, str]) -> int:
    """How many string constants of ``code`` other than docstrings redaction changes: each is
    a personal value the skill's logic used (the redacted version passes the role words)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return 0
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return sum(1 for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
               and _redact_text(n.value, roles) != n.value)


def _redact_code(code: str, roles: Mapping[str, str]) -> str:
    """``code`` with its string constants (docstring included) redacted; nothing else changes."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return _redact_text(code, roles)
    lines = code.splitlines(keepends=True)
    spots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno is not None:
            spots.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset or 0))
    # from the end, so earlier offsets stay right (offsets are UTF-8 byte columns)
    for start_line, start_col, end_line, end_col in sorted(set(spots), reverse=True):
        head = lines[start_line - 1].encode()
        tail = lines[end_line - 1].encode()
        segment = (head[start_col:] if start_line != end_line else head[start_col:end_col]).decode()
        middle = "".join(lines[start_line:end_line - 1]) if end_line > start_line else ""
        if end_line != start_line:
            segment = segment + middle + tail[:end_col].decode()
        redacted = _redact_text(segment, roles)
        if redacted == segment:
            continue
        before = head[:start_col].decode()
        after = tail[end_col:].decode()
        lines[start_line - 1:end_line] = [before + redacted + after]
    out = "".join(lines)
    try:
        ast.parse(out)
    except SyntaxError:  # a replacement broke a literal (a quote in a role): keep the code's logic
        return code
    return out


def _name_words(roles: Mapping[str, str]) -> list[list[str]]:
    words = []
    for value in roles:
        parts = [w for w in re.split(r"[^a-z0-9]+", privacy._norm(value).casefold()) if w]
        if parts and (len(parts) > 1 or len(parts[0]) >= privacy.MIN_KNOWN_CHARS):
            words.append(parts)
    return sorted(words, key=len, reverse=True)


def _redacted_name(name: str, roles: Mapping[str, str]) -> str:
    """``name`` less the words of any value it spells (``send_note_to_zoe_quill`` ->
    ``send_note``), and less a trailing connective left behind."""
    tokens = name.split("_")
    for value in _name_words(roles):
        n = len(value)
        i = 0
        while i + n <= len(tokens):
            if tokens[i:i + n] == value:
                del tokens[i:i + n]
            else:
                i += 1
    tokens = [t for t in tokens if not re.fullmatch(r"\d{4,}", t)]
    while tokens and tokens[-1] in {"to", "for", "of", "from", "with", "and", "by", "at"}:
        tokens.pop()
    out = "_".join(t for t in tokens if t)
    return out if re.fullmatch(r"[a-z][a-z0-9_]*", out) else "redacted_skill"


# -- the step -----------------------------------------------------------------------------
@dataclass
class Redacted:
    """One skill redact_stored changed."""

    name: str
    new_name: str
    new_version: int
    erased_versions: list[int]
    fields: list[str]
    values: int
    #: string constants of the code's logic (not docstrings) that held a personal value:
    #: the redacted version passes role words there (review it: ``skills show``)
    constants: int = 0


@dataclass
class RedactionReport:
    """What :func:`redact_stored` did (empty ``skills``: no stored text held personal data)."""

    skills: list[Redacted] = field(default_factory=list)
    examples: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if not self.skills and not self.examples:
            return "no stored text holds personal data: nothing was redacted"
        renamed = [f"{s.name} -> {s.new_name}" for s in self.skills if s.new_name != s.name]
        review = [s.new_name for s in self.skills if s.constants]
        return (f"redacted {len(self.skills)} skill(s) ({sum(len(s.erased_versions) for s in self.skills)} "
                f"version(s) erased), {self.examples} example(s)"
                + (f"; renamed (old names kept as aliases): {', '.join(renamed)}" if renamed else "")
                + (f"; review (their code used a personal value as a constant): {', '.join(review)}"
                   if review else ""))


def redact_stored(library: "Redacting") -> RedactionReport:
    """Redact every stored version and example that holds personal data (module docstring)."""
    from skill_library.governance.actors import SYSTEM_ID
    from skill_library.learning import _renamed, free_name
    from skill_library.text_vectors import embedded_forms, text_digest

    store = unit_of_work(library.context.store, "redaction")
    report = RedactionReport()
    vocabulary = {w for n in library.read_only_tools or () for w in str(n).split("_")}
    touched: set[str] = set()
    with library.context.index.writing() as index:
        with RedactionRows.writing(store) as rows:
            names = rows.names()
            taken = set(names)
            renamed = rows.aliases()
            for name in names:
                if name in renamed:  # redacted already: an alias of its new name
                    continue
                versions = rows.versions(name)
                if not versions or versions[0]["kind"] != "code":
                    continue
                examples = rows.examples(name)
                ids = {i for v in versions for i in v["provenance"].get("trace_ids", [])}
                ids |= {e["trace_id"] for e in examples}
                roles = _values(rows.traces(ids), vocabulary)
                holding = [v for v in versions if any(
                    _holds(v[f], roles) for f in ("when_text", "description"))
                    or (v["code"] and _redact_code(v["code"], roles) != v["code"])]
                new_name = _redacted_name(name, roles) if roles else name
                if new_name != name and new_name in taken:
                    new_name = free_name(library, new_name, sorted(taken))
                # example rows: texts redacted, params kept as shapes only
                for e in examples:
                    text = _redact_text(e["text"], roles)
                    params = privacy.shape_dummy(e["params"])
                    if text != e["text"] or params != e["params"]:
                        rows.set_example(name, e["trace_id"], text=text, params=params)
                        report.examples += 1
                        touched.add(name)
                if not holding and new_name == name:
                    continue
                pointer = rows.active_version(name)
                current = next(v for v in versions if v["version"] == pointer)
                fields = sorted({f for v in holding for f in ("when_text", "description", "code")
                                 if v[f] and (_redact_code(v[f], roles) if f == "code"
                                              else _redact_text(v[f], roles)) != v[f]}
                                | ({"name"} if new_name != name else set()))
                code = _redact_code(current["code"], roles) if current["code"] else current["code"]
                skill = Skill.model_validate({
                    "name": name, "kind": current["kind"], "when": _redact_text(current["when_text"], roles),
                    "description": _redact_text(current["description"], roles), "code": code,
                    "parameters": current["parameters"], "tools": current["tools"],
                    "depends_on": current["depends_on"], "provenance": current["provenance"],
                })
                if new_name != name:
                    skill = _renamed(skill, new_name)
                stored = rows.add_version(skill, status="active" if current["status"] == "active" else "draft",
                                          successes=current["successes"], failures=current["failures"])
                erased = sorted({v["version"] for v in holding} | (
                    {v["version"] for v in versions} if new_name != name else set()))
                marker = ERASED_TEXT.format(name=stored.name, version=stored.version)
                old_texts = set()
                for v in versions:
                    if v["version"] not in erased:
                        continue
                    old_texts.update([v["when_text"], v["description"]])
                    values: dict[str, Any] = {"when_text": marker, "description": marker}
                    if v["code"]:
                        values["code"] = _redact_code(v["code"], roles)
                    if new_name != name:
                        values["status"] = "retired"
                    rows.rewrite_version(name, v["version"], values)
                # every embedded form (phrases too); the rows add the tenant's key to each
                digests = {text_digest(f) for x in old_texts if x for f in embedded_forms(x)}
                rows.forget_derived(name, sorted(digests))
                if new_name != name:
                    # the evidence follows the skill to its new name; the old name is an alias
                    # (older aliases pointing at the old name follow it)
                    rows.rename(name, new_name, _release())
                    taken.add(new_name)
                constants = constants_changed(current["code"], roles) if current["code"] else 0
                evidence = {"erased_versions": erased, "redacted_version": stored.version,
                            "fields": fields, "values": len(roles), "renamed": new_name != name,
                            "constants": constants}
                rows.audit(stored.name, stored.version, None, "redacted", actor=SYSTEM_ID,
                           reason="stored texts held personal data: redacted, the old texts erased",
                           evidence=evidence)
                if new_name != name:
                    rows.audit(name, pointer, current["status"], "retired", actor=SYSTEM_ID,
                               reason="renamed by redaction (its name held personal data); the old name "
                                      "is an alias", evidence=evidence)
                report.skills.append(Redacted(name=name, new_name=stored.name, new_version=stored.version,
                                              erased_versions=erased, fields=fields, values=len(roles),
                                              constants=constants))
                touched.update({name, stored.name})
        library.context.sync(index, sorted(touched), known={})
    return report


def get(library: "Redacting", name: str, version: int | None = None) -> Skill:
    """``library.get`` through the aliases: a renamed skill's old name (unknown, or its
    versions retired by the rename) warns and gives the new skill (``version`` then counts
    in the new skill's versions). A live name costs no alias lookup."""
    try:
        skill = library.context.store.get(name, version)
    except SkillNotFoundError:
        resolved = resolve(library, name)
        if resolved == name:
            raise
        return library.context.store.get(resolved)
    if skill.status != "retired":
        return skill
    resolved = resolve(library, name)
    return skill if resolved == name else library.context.store.get(resolved)
