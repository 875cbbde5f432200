"""The harness's privacy check: a world's true personal values in what the library stores or shows.

Every benchmark run with a library ends with :func:`check_library`: it gathers every text the
library keeps or hands out (each version's name, ``when``, docstring, code and parameter
schema; each stored example; the prompt block ``library.render``; the OpenAI tool
descriptions ``library.as_openai_tools``; an Agent Skills export to a temporary folder; what
``fetch`` returns for the run's test tasks; ``explain`` for a few of the train tasks' people)
and looks in each for the world's ground-truth personal values
(:meth:`~benchmarks.worlds.base.World.personal_values`: its users' names, emails, ids,
addresses, phone numbers, order and payment ids, device tags, and the personal params of the
tasks). It never asks the library's own masker; it compares with what the world knows.

What counts: a value the world holds about a person is personal *wherever it appears*: a
trace's real email in a usage line is a leak even when it only illustrates a parameter.
Example shapes the library makes up (``user@example.com``, ``#W0000000``, ``<email>``) are not
the world's values, so they never count. Not checked: the stored traces themselves (raw
evidence by design, removed by ``forget``), outcome rows, and the review console.

Matching is by tokens (letters and digits; case and accents folded), so ``ana.ruiz@x``,
``Ana Ruiz`` and ``ana_ruiz`` are found whatever separates their parts. A value made of one
word (a first or a last name alone) counts only when it is capitalized in prose, or anywhere
in an identifier (a skill or folder name). A number-only value (a zip code) does not count
inside a decimal number. The report names where each value was found and of what kind, and
shows the text around it with every personal value masked, never the value itself:
:meth:`ValueScanner.redact` is also what keeps the harness's own results files free of them.
"""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from benchmarks.worlds.base import PersonalValue

if TYPE_CHECKING:
    from skill_library import SkillLibrary

#: explain() is asked about this many people of the train tasks
EXPLAIN_SUBJECTS = 3
#: fetch's k when the check fetches for the test tasks
CHECK_FETCH_K = 3
#: characters of masked context shown either side of a leak
CONTEXT_CHARS = 40
#: at most this many leaks are kept per library (the count is always complete)
MAX_LEAKS_KEPT = 200

_TOKEN = re.compile(r"[^\W_]+")


# letters NFKD does not take apart, spelled as ASCII (so "Nørgaard" meets "norgaard")
_SPELLED = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ß": "ss", "æ": "ae", "œ": "oe", "ı": "i", "þ": "th"})


def fold(token: str) -> str:
    """A token as the scanner compares it: case-folded, accents removed, ø ł đ ß æ spelled out."""
    decomposed = unicodedata.normalize("NFKD", token.casefold().translate(_SPELLED))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@dataclass(frozen=True)
class Hit:
    """A personal value found in a text: the span, its kind and whose it is."""

    start: int
    end: int
    kind: str
    owners: frozenset[str]


class ValueScanner:
    """Finds a fixed set of personal values in texts (token sequences, see the module doc)."""

    def __init__(self, values: Iterable[PersonalValue]) -> None:
        # first folded token -> [(folded token sequence, kind, single-word name?)]
        self._by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._owners: dict[tuple[str, ...], set[str]] = {}
        self._values: dict[str, set[str]] = {}
        for v in values:
            tokens = tuple(fold(t) for t in _TOKEN.findall(v.value))
            if not tokens:
                continue
            if tokens not in self._owners:
                self._by_first.setdefault(tokens[0], []).append((tokens, v.kind))
                self._owners[tokens] = set()
            self._owners[tokens].add(v.owner)
            self._values.setdefault(v.value, set()).add(v.owner)
        for candidates in self._by_first.values():
            candidates.sort(key=lambda c: -len(c[0]))  # the longest value first

    def __len__(self) -> int:
        return len(self._owners)

    def owners_of(self, value: str) -> set[str]:
        """Whose value ``value`` is (empty when it is none of the world's)."""
        return set(self._values.get(value, set()))

    def find(self, text: str, *, identifier: bool = False) -> list[Hit]:
        """The personal values in ``text``, longest first where they overlap."""
        matches = list(_TOKEN.finditer(text))
        folded = [fold(m.group()) for m in matches]
        hits: list[Hit] = []
        i = 0
        while i < len(matches):
            found = None
            for tokens, kind in self._by_first.get(folded[i], ()):
                n = len(tokens)
                if tuple(folded[i:i + n]) != tokens:
                    continue
                start, end = matches[i].start(), matches[i + n - 1].end()
                if n == 1 and kind in ("first_name", "last_name") and not identifier:
                    if not matches[i].group()[:1].isupper():
                        continue
                if tokens[0].isdigit() and _inside_number(text, start, end):
                    continue
                found = Hit(start, end, kind, frozenset(self._owners[tokens]))
                i += n
                break
            if found is None:
                i += 1
            else:
                hits.append(found)
        return hits

    def redact(self, text: str, *, identifier: bool = False) -> str:
        """``text`` with every personal value replaced by ``‹kind›``."""
        out, last = [], 0
        for hit in self.find(text, identifier=identifier):
            out += [text[last:hit.start], f"‹{hit.kind}›"]
            last = hit.end
        return "".join(out) + text[last:]

    def redact_json(self, value: Any) -> Any:
        """A JSON value with every string (and key) redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(k) if isinstance(k, str) else k: self.redact_json(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_json(v) for v in value]
        return value


def _inside_number(text: str, start: int, end: int) -> bool:
    """A digit run that is part of a decimal number (``0.62791``), not a value of its own."""
    before = text[max(0, start - 2):start]
    after = text[end:end + 2]
    return (len(before) == 2 and before[1] == "." and before[0].isdigit()) or (
        len(after) == 2 and after[0] == "." and after[1].isdigit())


@dataclass
class Leak:
    """One personal value in a stored or shown text: where, of what kind, in what context."""

    library: str
    where: str
    kind: str
    start: int
    context: str


@dataclass
class PrivacyReport:
    """What the check looked at and what it found."""

    values: int = 0
    texts: int = 0
    leaks: int = 0
    kept: list[Leak] = field(default_factory=list)
    by_place: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.leaks == 0 and not self.errors

    def add(self, other: "PrivacyReport") -> None:
        self.values = max(self.values, other.values)
        self.texts += other.texts
        self.leaks += other.leaks
        self.kept += other.kept[: max(0, MAX_LEAKS_KEPT - len(self.kept))]
        for key, n in other.by_place.items():
            self.by_place[key] = self.by_place.get(key, 0) + n
        for key, n in other.by_kind.items():
            self.by_kind[key] = self.by_kind.get(key, 0) + n
        self.errors += other.errors

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "values_checked": self.values, "texts_checked": self.texts, "leaks": self.leaks,
                "by_place": dict(sorted(self.by_place.items())), "by_kind": dict(sorted(self.by_kind.items())),
                "errors": list(self.errors), "first_leaks": [asdict(k) for k in self.kept]}

    def lines(self, limit: int = 20) -> list[str]:
        """The report as text lines (locations and kinds, never values)."""
        if self.ok:
            return [f"privacy check passed: none of {self.values} personal values in {self.texts} stored or "
                    "shown texts"]
        out = [f"PRIVACY CHECK FAILED: {self.leaks} personal value(s) found in {self.texts} stored or shown "
               f"texts (checked against {self.values} true values of the world)"]
        if self.by_place:
            out.append("  by place: " + ", ".join(f"{k} {n}" for k, n in sorted(self.by_place.items())))
            out.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items())))
        out += [f"  error: {e}" for e in self.errors]
        for leak in self.kept[:limit]:
            out.append(f"  {leak.library}: {leak.where} @{leak.start}: a {leak.kind} in «{leak.context}»")
        if self.leaks > limit:
            out.append(f"  ... {self.leaks - min(limit, len(self.kept))} more (results.json: privacy)")
        return out


@dataclass(frozen=True)
class Text:
    """One text the library stores or shows, and where it comes from."""

    place: str  # the kind of text: when, docstring, code, example, prompt_block, ...
    where: str  # its location: "skill revoke_access v2: when"
    text: str
    identifier: bool = False
    # values of these owners do not count here (explain shows a subject their own data)
    allowed_owners: frozenset[str] = frozenset()


def library_texts(library: "SkillLibrary", *, queries: Sequence[str] = (), subjects: Sequence[str] = (),
                  scanner: ValueScanner | None = None) -> Iterator[Text]:
    """Every text ``library`` stores or shows (see the module doc)."""
    from skill_library.models import Match

    current = library.list()
    for skill in current:
        for version in library.history(skill.name):
            label = f"skill {version.name} v{version.version}"
            yield Text("name", f"{label}: name", version.name, identifier=True)
            dumped = version.model_dump(mode="json")
            for key, place in (("when", "when"), ("description", "docstring"), ("code", "code"),
                               ("parameters", "parameters")):
                value = dumped.get(key)
                if value:
                    yield Text(place, f"{label}: {key}", value if isinstance(value, str) else _json(value))
            rest = {k: v for k, v in dumped.items()
                    if k not in ("name", "when", "description", "code", "parameters", "provenance")}
            rest["provenance"] = {k: v for k, v in (dumped.get("provenance") or {}).items() if k != "trace_ids"}
            yield Text("record", f"{label}: other fields", _json(rest))
        for i, example in enumerate(library.examples(skill.name)):
            yield Text("example", f"skill {skill.name}: example {i}", _json(example.model_dump(mode="json")))
    active = [s for s in current if s.status == "active"]
    own = [Match(skill=s, similarity=1.0, reliability=s.reliability, score=1.0) for s in active]
    if own:
        yield Text("prompt_block", "render(every active skill)", library.render(own, max_tokens=10**6))
        yield Text("openai_tools", "as_openai_tools(every active skill)", _json(library.as_openai_tools(own)))
        yield Text("openai_tools", "as_openai_tools(every active skill, api=responses)",
                   _json(library.as_openai_tools(own, api="responses")))
    from skill_library.integrations.agent_skills import export_library

    with tempfile.TemporaryDirectory(prefix="privacy-export-") as folder:
        export_library(library, folder)
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file():
                relative = path.relative_to(folder).as_posix()
                yield Text("agent_skills_export", f"export {relative}", path.read_text(encoding="utf-8"))
                yield Text("agent_skills_export", f"export path {relative}", relative, identifier=True)
    for i, query in enumerate(queries):
        matches = library.fetch(query, k=CHECK_FETCH_K)
        yield Text("fetch", f"fetch(test task {i})", _json([m.model_dump(mode="json") for m in matches]))
        if matches:
            yield Text("prompt_block", f"render(fetch(test task {i}))", library.render(matches))
    for i, subject in enumerate(subjects):
        owners = frozenset(scanner.owners_of(subject)) if scanner is not None else frozenset()
        yield Text("explain", f"explain(train person {i})", _json(library.explain(subject)), allowed_owners=owners)


def check_library(library: "SkillLibrary", scanner: ValueScanner, *, label: str, queries: Sequence[str] = (),
                  subjects: Sequence[str] = ()) -> PrivacyReport:
    """Look for ``scanner``'s values in every text of ``library`` (see :func:`library_texts`)."""
    report = PrivacyReport(values=len(scanner))
    try:
        for text in library_texts(library, queries=queries, subjects=subjects, scanner=scanner):
            report.texts += 1
            for hit in scanner.find(text.text, identifier=text.identifier):
                if hit.owners <= text.allowed_owners:
                    continue
                report.leaks += 1
                report.by_place[text.place] = report.by_place.get(text.place, 0) + 1
                report.by_kind[hit.kind] = report.by_kind.get(hit.kind, 0) + 1
                if len(report.kept) < MAX_LEAKS_KEPT:
                    report.kept.append(Leak(label, text.where, hit.kind, hit.start, _context(scanner, text, hit)))
    except Exception as exc:  # a check that cannot finish must not pass
        report.errors.append(scanner.redact(f"{label}: the check could not finish: {type(exc).__name__}: {exc}")[:300])
    return report


def _context(scanner: ValueScanner, text: Text, hit: Hit) -> str:
    """The text around ``hit`` with every personal value in the whole text masked first (so a
    cut never leaves half a value readable)."""
    pieces, last, start, end = [], 0, 0, 0
    for other in scanner.find(text.text, identifier=text.identifier):
        pieces.append(text.text[last:other.start])
        at = sum(len(p) for p in pieces)
        marker = f"‹{other.kind}›"
        if other.start == hit.start:
            start, end = at, at + len(marker)
        pieces.append(marker)
        last = other.end
    redacted = "".join(pieces) + text.text[last:]
    piece = redacted[max(0, start - CONTEXT_CHARS):end + CONTEXT_CHARS]
    return " ".join(piece.split())


def explain_subjects(tasks: Sequence[Any], scanner: ValueScanner, n: int = EXPLAIN_SUBJECTS) -> list[str]:
    """Up to ``n`` emails of the train tasks' people (the subjects ``explain`` is asked about)."""
    seen: list[str] = []
    for task in tasks:
        for name, value in task.params.items():
            if "email" in name and isinstance(value, str) and value not in seen and scanner.owners_of(value):
                seen.append(value)
                if len(seen) == n:
                    return seen
    return seen


def markdown_lines(privacy: dict[str, Any], limit: int = 20) -> list[str]:
    """A report's privacy section from :meth:`PrivacyReport.to_json` (kinds and places, never values)."""
    if privacy["ok"]:
        return [f"Passed: none of {privacy['values_checked']} personal values in {privacy['texts_checked']} "
                "stored or shown texts."]
    out = [f"**FAILED**: {privacy['leaks']} personal value(s) in {privacy['texts_checked']} stored or shown texts "
           f"(checked against {privacy['values_checked']} true values).", "",
           "By place: " + ", ".join(f"{k} {n}" for k, n in privacy["by_place"].items()) + ".",
           "By kind: " + ", ".join(f"{k} {n}" for k, n in privacy["by_kind"].items()) + ".", ""]
    out += [f"- error: {e}" for e in privacy["errors"]]
    out += [f"- {leak['library']}: {leak['where']} @{leak['start']}: a {leak['kind']} in «{leak['context']}»"
            for leak in privacy["first_leaks"][:limit]]
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
