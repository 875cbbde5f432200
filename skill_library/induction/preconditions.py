"""Preconditions mined from contrasting traces (issue 21 item 3; docs/learning.md).

Two workflows that open with the same read-only calls and then act differently (unlock an
account vs reset its password; grant access directly vs ask a contractor's manager) are
told apart by what those reads returned: the account's status, the employee's role. Each
stays its own skill; each records, as a precondition, a condition over the read results
that holds in **every** trace of the skill and fails in at least one trace of its
look-alike. A condition is data, never code (:class:`~skill_library.models.Condition`:
tool, occurrence, result path, op, value), rendered to words for the description
("Applies when the employee's status is locked.") and checked in the run before the first
state-changing call (:class:`Guard`): a failed one stops the run before anything changed,
recorded as ``not_applicable``.

Mining (:func:`mine`) is deliberately cautious, because a wrong precondition refuses the
skill's own tasks:

* only values that read as categories: booleans, small integers, short strings without
  digits or ``@`` (never ids, emails, amounts), and not a value the trace's caller passed;
  list and object sizes (``len_eq``) too;
* a value set of at most :data:`MAX_VALUES` values, each seen twice in the skill's traces
  when there are several;
* a significance test against chance: with ``k`` of the look-alike's ``m`` traces meeting
  the condition, the chance that all ``n`` traces of the skill meet it by luck is about
  ``((k + 1) / (m + 2)) ** n``; it must be under :data:`ALPHA` divided by the number of
  conditions tried for the pair (a skill learned from one trace never gets a condition:
  one trace cannot tell a category from a coincidence).

:func:`refresh` re-mines a library (after ``learn``/``learn_many``: a look-alike's new
traces can add, change or remove a condition), stores the conditions with the active
version (its provenance, no new version) and writes the derived ``when`` with the
condition sentence, re-indexed.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.models import Condition, Trace

if TYPE_CHECKING:
    from skill_library.protocols import Mining

#: chance level a condition must beat (divided by the conditions tried for a pair)
ALPHA = 0.01
#: most values an ``in`` condition may list
MAX_VALUES = 3
#: longest string value a condition may name (characters)
MAX_VALUE_CHARS = 40
#: largest integer a condition may name (bigger ones are amounts and ids, not categories)
MAX_INT_VALUE = 1000
#: deepest result path looked at
MAX_DEPTH = 4
#: most traces of one skill read when mining (the newest)
MAX_TRACES_PER_SKILL = 60
#: most conditions one skill keeps (one per look-alike told apart, deduplicated)
MAX_CONDITIONS = 3
#: how the description's condition sentence starts (describe.with_conditions)
SENTENCE_START = "Applies when "
#: the words of a read tool's name that say how it reads, not what (``get_employee``)
READ_VERBS = frozenset("get find list fetch read lookup look up search show check query retrieve load by "
                       "details detail info information record".split())

#: tool, occurrence, path, "value" | "len", the read's subject (:func:`read_subjects`)
Key = tuple[str, int, tuple[str, ...], str, str]


# -- what a trace read before it acted ---------------------------------------------------------
#: the ``occurrence`` of a condition on the read of what the first state-changing call acts on
TARGET = -1


def _values(arguments: Mapping[str, Any]) -> set[str]:
    """The scalar argument values of a call (list items too), as JSON."""
    out: set[str] = set()
    for value in arguments.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, int)) and not isinstance(item, bool) and item != "":
                out.add(json.dumps(item))
    return out


def target_reads(reads: Sequence[tuple[str, Mapping[str, Any], Any]],
                 acting: Mapping[str, Any]) -> dict[tuple[str, int], Any]:
    """Per read tool, the result of its last call before the change that was given a value
    the first state-changing call is also given (the order it cancels, the employee it
    unlocks), keyed (tool, :data:`TARGET`)."""
    wanted = _values(acting)
    found: dict[tuple[str, int], Any] = {}
    for tool, arguments, result in reads:
        if wanted & _values(arguments):
            found[(tool, TARGET)] = result
    return found


def reads_before_acting(calls: Sequence[Any], read_only: frozenset[str]) -> dict[tuple[str, int], Any] | None:
    """The results of the read-only calls made before the first state-changing call, by
    (tool, occurrence), plus (tool, :data:`TARGET`) for the read of what that call acts on;
    None when the calls never act (nothing to guard)."""
    seen: Counter[str] = Counter()
    reads: dict[tuple[str, int], Any] = {}
    made: list[tuple[str, Mapping[str, Any], Any]] = []
    for call in calls:
        if getattr(call, "kind", "tool") != "tool" or call.name not in read_only:
            if getattr(call, "kind", "tool") == "tool":
                reads.update(target_reads(made, call.arguments))
            return reads
        if call.error is None:
            reads[(call.name, seen[call.name])] = call.result
            made.append((call.name, call.arguments, call.result))
        seen[call.name] += 1
    return None


def _scalars(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string and integer in a result (list items and nested objects too), as JSON."""
    if isinstance(value, dict) and depth < MAX_DEPTH:
        for item in value.values():
            yield from _scalars(item, depth + 1)
    elif isinstance(value, list) and depth < MAX_DEPTH:
        for item in value:
            yield from _scalars(item, depth + 1)
    elif isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
        yield json.dumps(value)


def _identifying(item: str) -> bool:
    """Whether a parameter value (JSON) can say whose record a read is: a string, or an
    integer too large to be a count or a page (``1`` is not the user ``1``)."""
    value = json.loads(item)
    return isinstance(value, str) or abs(value) > MAX_INT_VALUE


def read_subjects(trace: Trace, read_only: frozenset[str]) -> dict[tuple[str, int], str]:
    """Whose record each read before the first state-changing call reads, by (tool,
    occurrence) and (tool, :data:`TARGET`): the names of the trace's parameters whose values
    reach the call's arguments, directly or through an earlier read's result (the employee
    found by ``email`` vs the colleague found by ``colleague_email``), joined by ``+``; ``""``
    when none does. Two skills' reads are compared only when they read the same subject: a
    condition on the colleague's record says nothing about the employee's."""
    owner: dict[str, set[str]] = {}  # a value two parameters share belongs to both
    for name, value in sorted(trace.params.items()):
        for item in _scalars(value):
            if _identifying(item):
                owner.setdefault(item, set()).add(name)
    derived: dict[str, str] = {}
    seen: Counter[str] = Counter()
    out: dict[tuple[str, int], str] = {}
    made: list[tuple[str, Mapping[str, Any], str]] = []
    for call in trace.calls:
        if getattr(call, "kind", "tool") != "tool":
            continue
        if call.name not in read_only:
            wanted = _values(call.arguments)
            for tool, arguments, who in made:  # the target read, as target_reads picks it
                if wanted & _values(arguments):
                    out[(tool, TARGET)] = who
            return out
        given = _values(call.arguments)
        names = {n for v in given if v in owner for n in owner[v]} or {derived[v] for v in given if v in derived}
        who = "+".join(sorted(names))
        if call.error is None:
            out[(call.name, seen[call.name])] = who
            made.append((call.name, call.arguments, who))
            if who:
                for item in _scalars(call.result):
                    derived.setdefault(item, who)
        seen[call.name] += 1
    return out


def _category(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_INT_VALUE
    if isinstance(value, str):
        text = value.strip()
        return 0 < len(text) <= MAX_VALUE_CHARS and "@" not in text and not any(c.isdigit() for c in text)
    return False


def leaves(result: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str, Any]]:
    """(path, kind, value) of a read result: scalar values by their key path (``value``),
    and the size of every list or object (``len``). List items are not entered."""
    if isinstance(result, dict):
        if path:
            yield path, "len", len(result)
        if len(path) < MAX_DEPTH:
            for key, value in result.items():
                if isinstance(key, str):
                    yield from leaves(value, (*path, key))
    elif isinstance(result, list):
        yield path, "len", len(result)
    elif _category(result):
        yield path, "value", result


def _passed(trace: Trace) -> set[str]:
    """The caller's values of a trace (casefolded strings): a condition never names them."""
    out: set[str] = set()

    def add(value: Any) -> None:
        if isinstance(value, str):
            out.add(value.strip().casefold())
        elif isinstance(value, (list, tuple)):
            for item in value:
                add(item)

    for value in trace.params.values():
        add(value)
    return out


def _observations(trace: Trace, read_only: frozenset[str]) -> dict[Key, Any] | None:
    reads = reads_before_acting(trace.calls, read_only)
    if reads is None:
        return None
    passed = _passed(trace)
    subjects = read_subjects(trace, read_only)
    out: dict[Key, Any] = {}
    for (tool, occurrence), result in reads.items():
        who = subjects.get((tool, occurrence), "")
        for path, kind, value in leaves(result):
            if kind == "value" and isinstance(value, str) and value.strip().casefold() in passed:
                continue
            out[(tool, occurrence, path, kind, who)] = value
    return out


# -- mining ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Candidate:
    condition: Condition
    chance: float
    fails: int

    def rank(self) -> tuple[float, int, bool, int, bool]:
        c = self.condition
        return (self.chance, -self.fails, c.op != "eq", len(c.path), c.occurrence != TARGET)


def _separating(own: list[dict[Key, Any]], other: str, theirs: list[dict[Key, Any]]) -> list[_Candidate]:
    """The conditions that hold in every one of ``own`` (a skill's traces), fail in at least
    one of ``theirs`` (``other``'s) and beat chance (module doc), best first."""
    if len(own) < 2 or not theirs:
        return []
    keys = set(own[0]).intersection(*own[1:])
    found: list[_Candidate] = []
    tried = 0
    for key in sorted(keys, key=repr):
        tool, occurrence, path, kind, _ = key
        values = [o[key] for o in own]
        counts = Counter(json.dumps(v, sort_keys=True) for v in values)
        if len(counts) > (1 if kind == "len" else MAX_VALUES):
            continue
        if len(counts) > 1 and min(counts.values()) < 2:
            continue
        seen = [json.dumps(t[key], sort_keys=True) for t in theirs if key in t]
        if not seen:
            continue
        tried += 1
        meet = sum(s in counts for s in seen)
        if meet == len(seen):
            continue
        chance = ((meet + 1) / (len(seen) + 2)) ** len(own)
        ordered = sorted({json.dumps(v, sort_keys=True): v for v in values}.items())
        if kind == "len":
            condition = Condition(tool=tool, occurrence=occurrence, path=list(path), op="len_eq", value=values[0])
        elif len(ordered) == 1:
            condition = Condition(tool=tool, occurrence=occurrence, path=list(path), op="eq", value=ordered[0][1])
        else:
            condition = Condition(tool=tool, occurrence=occurrence, path=list(path), op="in",
                                  value=[v for _, v in ordered])
        found.append(_Candidate(condition, chance, len(seen) - meet))
    bar = ALPHA / max(tried, 1)
    return sorted((c for c in found if c.chance <= bar), key=_Candidate.rank)


def _opening(observed: list[dict[Key, Any]]) -> str | None:
    """The first read tool of a skill's traces (the most common one)."""
    firsts = Counter(k[0] for o in observed for k in o if k[1] == 0)
    return firsts.most_common(1)[0][0] if firsts else None


def mine(traces: Mapping[str, Sequence[Trace]], read_only: frozenset[str] | set[str], *,
         only: Sequence[str] | None = None) -> dict[str, list[Condition]]:
    """The preconditions of each skill (by name) from its traces and its look-alikes'.

    Look-alikes are the other skills whose traces open with the same read-only tool. For
    each look-alike, the best condition over the reads before the first state-changing call
    that holds in every trace of the skill and fails in at least one of the look-alike's,
    if one beats chance (module doc); the skill's conditions are these, deduplicated, at
    most :data:`MAX_CONDITIONS`, chosen greedily to tell it from as many look-alikes as
    possible with as few conditions as possible. ``only``: mine these skills (the rest are
    look-alikes only). Skills with no condition are left out of the result.
    """
    readers = frozenset(read_only)
    subjects = set(traces if only is None else only)
    observed: dict[str, list[dict[Key, Any]]] = {}
    for name, items in traces.items():
        rows: dict[str, dict[Key, Any]] = {}  # one per caller's values: a repeat is no new evidence
        for t in items:
            found = _observations(t, readers)
            if found is not None:
                rows.setdefault(json.dumps(t.params, sort_keys=True, default=str), found)
        if rows:
            observed[name] = list(rows.values())
    openings = {name: _opening(rows) for name, rows in observed.items()}
    out: dict[str, list[Condition]] = {}
    for name, own in sorted(observed.items()):
        if name not in subjects or openings[name] is None or len(own) < 2:
            continue
        # per look-alike, the conditions that tell the skill from it
        options = {other: _separating(own, other, theirs) for other, theirs in sorted(observed.items())
                   if other != name and openings[other] == openings[name]}
        options = {o: some for o, some in options.items() if some}
        chosen: list[Condition] = []
        while options and len(chosen) < MAX_CONDITIONS:  # greedy cover: fewest conditions
            tally: dict[str, list[Any]] = {}
            for other, separating in options.items():
                for candidate in separating:
                    key = candidate.condition.model_dump_json()
                    entry = tally.setdefault(key, [candidate, [], 0.0])
                    entry[1].append(other)
                    entry[2] += candidate.chance
            best, covered, _ = min(tally.values(), key=lambda e: (-len(e[1]), e[2], e[0].rank()))
            chosen.append(best.condition.model_copy(update={"against": sorted(covered)[0],
                                                            "against_all": sorted(covered)}))
            options = {o: f for o, f in options.items() if o not in covered}
        if chosen:
            out[name] = sorted(chosen, key=lambda c: (c.tool, c.occurrence, c.path))
    return out


# -- checking ----------------------------------------------------------------------------------
_MISSING = object()


def _at(result: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return _MISSING
        result = result[key]
    return result


def holds(condition: Condition, result: Any) -> bool:
    """Whether ``condition`` holds on the result of its read call (a missing path: no)."""
    found = _at(result, condition.path)
    if found is _MISSING:
        return False
    if condition.op == "len_eq":
        return isinstance(found, (list, dict)) and len(found) == condition.value
    if condition.op == "in":
        return any(_same(found, v) for v in (condition.value or []))
    return _same(found, condition.value)


def _same(found: Any, wanted: Any) -> bool:
    if isinstance(found, bool) or isinstance(wanted, bool):
        return found is wanted
    if isinstance(found, str) and isinstance(wanted, str):
        return found.strip().casefold() == wanted.strip().casefold()
    return bool(found == wanted)


def unmet(conditions: Sequence[Condition], reads: Mapping[tuple[str, int], Any]) -> Condition | None:
    """The first of ``conditions`` that does not hold on ``reads`` (a read that was not made
    counts as not holding), or None when all hold."""
    for condition in conditions:
        key = (condition.tool, condition.occurrence)
        if key not in reads or not holds(condition, reads[key]):
            return condition
    return None


class Refused(Exception):
    """Raised to the skill in place of a state-changing call whose preconditions failed."""


@dataclass
class Guard:
    """Checks a version's preconditions in the run, before its first state-changing call.

    :meth:`wrap` wraps the tools handed to the sandbox: a read-only tool's results before
    the first state-changing call are kept (in the JSON form a trace stores); the first
    state-changing call evaluates the conditions on them and, when one fails, never calls
    the tool: the skill gets an error and every later state-changing call is refused too.
    ``refused`` is then the failed condition and ``message`` the refusal.
    """

    conditions: Sequence[Condition]
    read_only: frozenset[str]
    reads: dict[tuple[str, int], Any] = field(default_factory=dict)
    made: list[tuple[str, Mapping[str, Any], Any]] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)
    acted: bool = False
    refused: Condition | None = None

    @property
    def message(self) -> str | None:
        """``does not apply: <condition>`` once a condition failed."""
        return None if self.refused is None else f"does not apply: {render(self.refused)}"

    def wrap(self, tools: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """The tools, each wrapped to keep reads and check before the first change."""
        return {name: self._wrapped(name, fn) for name, fn in tools.items()}

    def _wrapped(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.read_only:
                try:
                    result = fn(*args, **kwargs)
                except Exception:
                    self.seen[name] += 0 if self.acted else 1
                    raise
                if not self.acted:
                    self.reads[(name, self.seen[name])] = _as_json(result)
                    self.made.append((name, dict(kwargs), self.reads[(name, self.seen[name])]))
                    self.seen[name] += 1
                return result
            if self.refused is None and not self.acted:
                reads = {**self.reads, **target_reads(self.made, _as_json(kwargs) or {})}
                self.refused = unmet(self.conditions, reads)
            if self.refused is not None:
                raise Refused(self.message)
            self.acted = True
            return fn(*args, **kwargs)

        return call


def _as_json(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError, RecursionError):
        return None


# -- words -------------------------------------------------------------------------------------
def _words(name: str) -> list[str]:
    from skill_library.induction.describe import words_of

    return words_of(name)


def subject(tool: str) -> str:
    """What a read tool reads, as a noun: ``get_employee`` -> ``employee``,
    ``get_order_details`` -> ``order details``, ``find_user_id_by_email`` -> ``user id``."""
    words = _words(tool)
    if "by" in words:
        words = words[: words.index("by")]
    kept = [w for w in words if w not in READ_VERBS]
    return " ".join(kept) or " ".join(words)


def _value_words(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return " ".join(value.replace("_", " ").split())
    return json.dumps(value)


def render(condition: Condition) -> str:
    """A condition in words: ``the employee's status is locked``, ``the employee's role is
    staff or manager``, ``the order's items has 1 item``."""
    noun = subject(condition.tool)
    owner = f"the {noun}'" if noun.endswith("s") else f"the {noun}'s"
    what = " ".join(" ".join(_words(p)) or p for p in condition.path) or "result"
    nth = f" (call {condition.occurrence + 1})" if condition.occurrence > 0 else ""
    if condition.op == "len_eq":
        n = condition.value
        return f"{owner} {what}{nth} has {n} item{'s' if n != 1 else ''}" if condition.path else \
            f"{noun}{nth} returns {n} item{'s' if n != 1 else ''}"
    if condition.op == "in":
        values = [_value_words(v) for v in (condition.value or [])]
        said = ", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1 else "".join(values)
    else:
        said = _value_words(condition.value)
    if not condition.path:
        return f"{noun}{nth} returns {said}"
    return f"{owner} {what}{nth} is {said}"


def sentence(conditions: Sequence[Condition]) -> str:
    """The description's sentence: ``Applies when the employee's status is locked.``"""
    if not conditions:
        return ""
    parts = [render(c) for c in conditions]
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{SENTENCE_START}{joined}."


# -- a library ---------------------------------------------------------------------------------
def _evidence(lib: "Mining") -> dict[str, list[Trace]]:
    """The verified traces of each code skill (its examples' and provenance's): an active
    skill's are its own evidence; a held or quarantined one's still show a look-alike."""
    skills = [s for s in lib.context.store.list() if s.kind == "code" and s.status not in ("rejected", "retired")]
    examples = lib.context.store.examples([s.name for s in skills])
    out: dict[str, list[Trace]] = {}
    for skill in skills:
        ids = list(dict.fromkeys([*skill.provenance.trace_ids, *(e.trace_id for e in examples[skill.name])]))
        traces: list[Trace] = []
        for trace_id in ids[-MAX_TRACES_PER_SKILL:]:
            try:
                trace = lib.context.store.get_trace(trace_id)
            except KeyError:
                continue
            if trace.outcome is None or trace.outcome.success:
                traces.append(trace)
        if traces:
            out[skill.name] = traces
    return out


def refresh(lib: "Mining") -> list[str]:
    """Re-mine the preconditions of ``lib``'s active skills; store those that changed with
    their active version and its derived ``when`` (the condition sentence), and re-index
    them. Returns the names whose preconditions changed."""
    from skill_library.induction.describe import with_conditions

    if not lib.read_only_tools:
        return []
    traces = _evidence(lib)
    active = [s for s in lib.context.store.list(status="active") if s.kind == "code"]
    mined = mine(traces, lib.read_only_tools, only=[s.name for s in active])
    changed: list[str] = []
    for skill in active:
        wanted = mined.get(skill.name, [])
        if list(skill.provenance.preconditions) == wanted:
            continue
        when = with_conditions(skill.when, sentence(wanted))
        lib.context.store.set_preconditions(skill.name, skill.version, wanted, when if when != skill.when else None)
        changed.append(skill.name)
    if changed:
        with lib.context.index.writing() as index:
            lib.context.sync(index, changed, known={})
    return changed



# -- fetch: which candidates apply ---------------------------------------------------------------
#: how many of fetch's top matches are probed (each is one sandbox run of read-only calls)
PROBE_TOP = 3
#: what a state-changing tool says in a probe (it is never called)
PROBE_STOP = "precondition probe: state-changing calls are not made"


def probe(lib: "Mining", skill: Any, args: Mapping[str, Any],
          read_tools: Mapping[str, Callable[..., Any]]) -> tuple[bool | None, str | None]:
    """Whether ``skill``'s preconditions hold for ``args``: its code runs in the sandbox with
    the caller's read-only tools (``read_tools``) and every state-changing tool replaced by
    a stub that is never reached or refuses; nothing is recorded. (True, None): they hold;
    (False, "does not apply: ..."); (None, why): it could not tell."""
    applies, why, _ = probe_reads(lib, skill, args, read_tools)
    return applies, why


def probe_reads(lib: "Mining", skill: Any, args: Mapping[str, Any], read_tools: Mapping[str, Callable[..., Any]]
                ) -> tuple[bool | None, str | None, list[tuple[str, Any]]]:
    """:func:`probe`, with the read-only calls the probe made: (tool, result) in order."""
    from skill_library.errors import SkillLibraryError
    from skill_library.execution import closure, execute
    from skill_library.models import NOT_APPLICABLE_ERROR

    if not skill.provenance.preconditions:
        return None, "no preconditions", []
    properties = (skill.parameters or {}).get("properties", {})
    bound = {p: args[p] for p in properties if p in args}
    missing = [p for p in (skill.parameters or {}).get("required", []) if p not in bound]
    if missing:
        return None, f"cannot check: needs {', '.join(missing)}", []
    readers = lib.read_only_tools
    _, declared = closure(lib, skill)
    unread = [t for t in declared if t in readers and t not in read_tools]
    if unread:
        return None, f"cannot check: the read-only tool(s) {', '.join(unread)} were not given", []

    def stub(*_args: Any, **_kwargs: Any) -> Any:
        raise Refused(PROBE_STOP)

    tools = {t: (read_tools[t] if t in readers else stub) for t in declared}
    try:
        run = execute(lib, skill, bound, tools)
    except SkillLibraryError as exc:
        return None, f"cannot check: {exc}", []
    reads = [(c.name, c.result) for c in run.trace.calls if c.kind == "tool" and c.ok and c.name in readers]
    if run.error is not None and run.error.type == NOT_APPLICABLE_ERROR:
        return False, f"does not apply: {run.error.message}", reads
    if any(c.error == PROBE_STOP for c in run.trace.calls):
        return True, None, reads
    return None, ("cannot check: the run stopped before its first change" if not run.ok else
                  "cannot check: the run made no change"), reads


def rank_applicable(lib: "Mining", result: Any, args: Mapping[str, Any],
                    read_tools: Mapping[str, Callable[..., Any]], *, top: int = PROBE_TOP,
                    abstain: bool = True, runners_up: Sequence[Any] = (), reading: Any = None) -> Any:
    """``fetch``'s result with the top ``top`` candidates probed (:func:`probe`); those
    whose preconditions fail move behind the rest (``applies=False`` with the reason).

    A failed top is never silently replaced by an unrelated next match (a skill with no
    preconditions "applies" to anything): the next one becomes the top only when it was
    among the look-alikes too close to call and is the only one of them whose
    preconditions hold (``applies=True``), which also clears the ``ambiguous`` flag;
    otherwise the result abstains, naming the failed condition. A top that applies, or
    could not be checked, keeps its place. ``abstain=False`` (fetch's): only the order
    changes, no flags.
    """
    from skill_library.abstention import FetchResult

    checked: list[Any] = []
    top_reads: list[tuple[str, Any]] = []
    for n, match in enumerate(result):
        if n < top and not match.prefetch:
            applies, why, reads = probe_reads(lib, match.skill, args, read_tools)
            if n == 0:  # what the top read: told_apart checks its look-alike's condition on it
                top_reads = reads
            match = match.model_copy(update={"applies": applies, "applies_reason": why if applies is False else None})
        checked.append(match)
    if abstain and checked and checked[0].applies is False:  # the failed top's look-alike, cut by k
        checked.extend(_mined_against(lib, checked, runners_up, args, read_tools))
    ordered = [m for m in checked if m.applies is not False] + [m for m in checked if m.applies is False]
    out = FetchResult(ordered)
    for name in ("floor", "margin", "plan"):
        setattr(out, name, getattr(result, name, None))
    out.abstained, out.ambiguous = bool(getattr(result, "abstained", False)), bool(getattr(result, "ambiguous", False))
    reasons = [str(getattr(result, "reason", "") or "")]
    if abstain and checked and checked[0].applies is False:
        close = [m for m in checked if m.ambiguous]
        holding = [m for m in close if m.applies is True]
        if out.ambiguous and len(holding) == 1 and all(m.applies is False for m in close if m is not holding[0]):
            winner = holding[0]
            rest = [m.model_copy(update={"ambiguous": False}) for m in ordered if m is not winner]
            out[:] = [winner.model_copy(update={"ambiguous": False}), *rest]
            out.ambiguous = False
            reasons.append(f"look-alikes told apart by their preconditions ({checked[0].applies_reason})")
        elif not out.abstained and (twin := told_apart(checked, top_reads, floor=out.floor,
                                                       reading=reading)) is not None:
            others = [m for m in ordered if m is not twin]
            margin = out.margin or 0.0
            rivals = {m.skill.name for m in others if m.applies is not False and not m.missing
                      and twin.score - m.score < margin}
            if reading is not None and _asked(reading, twin):  # the task names the twin's change
                rivals = {n for n in rivals if _asked(reading, next(m for m in others if m.skill.name == n))}
            out[:] = [twin.model_copy(update={"ambiguous": bool(rivals)}),
                      *(m.model_copy(update={"ambiguous": True}) if m.skill.name in rivals else m for m in others)]
            out.ambiguous = bool(rivals) or (out.ambiguous and any(m.ambiguous and m.applies is not False
                                                                   for m in others))
            reasons.append(f"{twin.skill.name} applies where the nearest match {checked[0].skill.name} "
                           f"{checked[0].applies_reason} (the same read tells them apart)")
            if rivals:
                reasons.append(f"too close to call: {twin.skill.name}, {', '.join(sorted(rivals))} "
                               f"score within {margin:.3f} of each other")
        else:
            out.abstained = True
            reasons.append(f"the nearest match {checked[0].skill.name} {checked[0].applies_reason}")
    out.reason = "; ".join(r for r in reasons if r)
    return out


def _mined_against(lib: "Mining", checked: Sequence[Any], runners_up: Sequence[Any], args: Mapping[str, Any],
                   read_tools: Mapping[str, Callable[..., Any]]) -> list[Any]:
    """The look-alikes the failed top's condition was mined against, probed, when fetch found
    them (``runners_up``: the ranked matches before the cut to ``k``) but did not return them
    (so :func:`told_apart` sees every one of them that applies)."""
    failed = failed_condition(checked[0].skill, checked[0].applies_reason)
    if failed is None or failed.against is None:
        return []
    wanted = (set(failed.against_all) | {failed.against}) - {m.skill.name for m in checked}
    out = []
    for found in runners_up:
        if found.skill.name in wanted and not found.prefetch:
            wanted.discard(found.skill.name)
            applies, why, _ = probe_reads(lib, found.skill, args, read_tools)
            out.append(found.model_copy(update={"applies": applies,
                                                "applies_reason": why if applies is False else None}))
    return out


def failed_condition(skill: Any, reason: str | None) -> Condition | None:
    """Which of ``skill``'s preconditions a probe's ``does not apply: ...`` reason names."""
    said = (reason or "").removeprefix("does not apply: ")
    return next((c for c in skill.provenance.preconditions if render(c) == said), None)


def _asked(reading: Any, match: Any) -> bool:
    """Whether the task asks for one of ``match``'s state-changing verbs (skill_library.intent)."""
    return any(reading.asks_for(v) for v in reading.acting_verbs(match.skill))


def told_apart(checked: Sequence[Any], reads: Sequence[tuple[str, Any]], *,
               floor: float | None = None, reading: Any = None) -> Any | None:
    """The look-alike a failed top's condition was mined against, when the probe says it
    applies and no other of them does; else None.

    The top (``checked[0]``, ``applies=False``) failed a condition on one read (a tool's
    result at a path: the employee's role); the condition was mined to tell the top from
    its look-alikes (``Condition.against_all``: grant access directly vs request a
    contractor's access; unlock vs reset the password and vs re-enable). One of them is
    chosen when it is among the probed candidates, its preconditions hold, it has a
    condition on the same tool and path that holds on **every** result of that tool the
    top's probe read (``reads``: (tool, result); a condition on another record the same tool
    read, a colleague's, does not qualify), and it is the only one so. A skill that merely
    also applies is never a stand-in, and two that both qualify are not told apart: an
    offboarding ticket whose nearest match was "re-enable the account" (the status is
    active) is not handed to the password reset, as the offboarding's condition (active)
    holds on that read as well as the reset's. Only a credible look-alike counts: one that
    clears the calibrated ``floor`` itself (an out-of-scope request that barely reads like
    re-enabling is not handed to an unlock it reads less like), or the condition's first
    (``against``) when the top cleared it (not when the top was answered under the floor);
    one under the floor neither takes the task nor stops another from taking it ("I can't
    get into my account": the reset over the floor, the offboarding under it). When several
    qualify, the one whose state-changing verb the task asks for is chosen, if only one is
    (``reading``, skill_library.intent: "revoke everything and close the account" names the
    offboarding's revoke, not the reset's); :func:`rank_applicable` then counts as its rivals
    within the margin only those whose verb the task asks for too."""
    failed = failed_condition(checked[0].skill, checked[0].applies_reason)
    if failed is None or failed.against is None:
        return None
    results = [result for tool, result in reads if tool == failed.tool]
    if not results:
        return None

    def same_read(condition: Condition) -> bool:
        return (condition.tool, condition.path) == (failed.tool, failed.path) and \
            all(holds(condition, r) for r in results)

    told_from = set(failed.against_all) | {failed.against}

    def credible(m: Any) -> bool:
        # over the floor; under it, only the condition's first look-alike, and only for a top
        # that cleared the floor itself (not one answered under it: skill_library.mentions)
        return floor is None or m.similarity >= floor or (
            m.skill.name == failed.against and checked[0].similarity >= floor)

    twins = [m for m in checked[1:] if m.skill.name in told_from and m.applies is True
             and any(map(same_read, m.skill.provenance.preconditions)) and credible(m)]
    if len(twins) > 1 and reading is not None:  # both apply on the read: the task's verb may say which
        twins = [m for m in twins if _asked(reading, m)]
    return twins[0] if len(twins) == 1 else None  # none, or two that both apply: not told apart
