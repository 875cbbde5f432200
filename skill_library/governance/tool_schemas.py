"""Skills bound to the tool schemas they were verified against (issue 26, item 2).

Each stored version records, per tool it calls, the digest of the schema it was verified
against (:data:`tool_bindings_table`): the declared :class:`~skill_library.governance.tools.
ToolSpec`'s schema (source ``declared``), else, for a tool nobody declared, the schema seen
in its traces (``traces``: the argument names and JSON types its recorded calls passed).

When ``register_tools`` changes the schema of a tool a version is bound to, or removes the
tool (``specs[name] = None``), every active or canary version calling it is ``suspended`` in
the same transaction that stores the new schema (so no fetch serves it once
``register_tools`` returns), audited with the reason; a canary keeps its canary row and
returns to ``canary``. It is then re-verified by replaying its stored example
traces: every recorded call of a changed tool has its arguments validated by the new
schema (the replay uses recorded results, so the arguments are what it checks). A pass
returns the version to ``active`` (audited, by ``system``) bound to the new digest; a
failure leaves it suspended for a person, with the errors and the diff of the schema in the
audit event; ``SkillLibrary.resume`` (``skill.approve``) or ``retire`` is that person's call.
With the caller's tool callables, :func:`live_check` also runs the version once per example
trace with its read-only tools live and every other call stubbed by its recorded result.

A schema that is not valid JSON Schema is refused at ``register_tools`` with the path of
the error (:func:`check_schema`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.models import Skill, utc_now
from skill_library.storage import tool_binding_rows as rows_of
from skill_library.storage import tool_digests as digests_of
from skill_library.storage.tool_binding_rows import trace_bodies as trace_bodies
from skill_library.storage.tool_digests import DECLARED as DECLARED
from skill_library.storage.tool_digests import TRACES as TRACES
from skill_library.storage.tool_digests import Binding as Binding
from skill_library.storage.tool_digests import digest as digest
from skill_library.storage.tool_digests import seen_schema as seen_schema
from skill_library.storage.tool_digests import trace_calls as trace_calls
from skill_library.storage.transactions import Connection

if TYPE_CHECKING:
    from skill_library.governance.tools import ToolSpec
    from skill_library.protocols import Rechecking, Ruled

#: the status of a version taken out of fetch because a tool it calls changed or went away
SUSPENDED = "suspended"
#: the statuses a schema change suspends: the versions fetch serves (a canary to its share)
SERVED = ("active", "canary")


@dataclass
class Reverification:
    """What re-verification made of the versions a ``register_tools`` call suspended (and
    of those held suspended before that call a redeclared tool): ``suspended`` lists them
    all, ``reactivated`` the ones that passed, ``held`` the others with their problems."""

    suspended: list[tuple[str, int]] = field(default_factory=list)
    reactivated: list[tuple[str, int]] = field(default_factory=list)
    held: dict[tuple[str, int], list[str]] = field(default_factory=dict)


# -- digests and schemas ----------------------------------------------------------------
def check_schema(tool: str, schema: Mapping[str, Any]) -> None:
    """Refuse ``schema`` unless it is valid JSON Schema (its ``$schema`` draft, else
    2020-12): ``ValueError`` naming the tool and the path of the error in the schema."""
    from jsonschema import exceptions, validators

    try:
        validators.validator_for(schema, default=validators.Draft202012Validator).check_schema(schema)
    except exceptions.SchemaError as exc:
        where = exc.json_path if list(exc.path) else "$ (the top level)"
        raise ValueError(
            f"tool {tool!r}: the schema is not valid JSON Schema at {where}: {exc.message}; "
            "fix that part of the schema and register it again"
        ) from None


def bindings_of(skill: Skill, specs: Mapping[str, "ToolSpec"],
                calls: Sequence[Mapping[str, Any]]) -> list[Binding]:
    """The binding of every tool ``skill`` calls: its declared schema under ``specs``, else
    the schema seen in ``calls`` (its traces' calls)."""
    return digests_of.bindings(skill, _schemas(specs), calls)


def _schemas(specs: Mapping[str, "ToolSpec"]) -> dict[str, dict[str, Any]]:
    return {name: dict(spec.schema_) for name, spec in specs.items()}


# -- storing ------------------------------------------------------------------------------
def record(conn: Connection, tenant: str, skills: Sequence[Skill], specs: Mapping[str, "ToolSpec"],
           extra_calls: Sequence[Mapping[str, Any]] = ()) -> None:
    """Store the bindings of the stored versions ``skills`` on ``conn`` (inside the
    transaction that stored them): declared schemas under ``specs``, else the schemas seen
    in their traces (``provenance.trace_ids`` read on ``conn``, plus ``extra_calls``)."""
    digests_of.record(conn, tenant, skills, _schemas(specs), extra_calls)


def record_for(conn: Connection, library: "Ruled", skills: Sequence[Skill]) -> None:
    """:func:`record` under ``library``'s tool specs as stored on ``conn``."""
    from skill_library.governance import tools as tool_store

    tenant = library.context.tenant
    record(conn, tenant, skills, {**library.constructor_tool_specs(), **tool_store.load(conn, tenant)})


def load(conn: Connection, tenant: str, keys: Iterable[tuple[str, int]] | None = None
         ) -> dict[tuple[str, int], dict[str, Binding]]:
    """The bindings of ``tenant``'s versions (of ``keys`` only, when given), by version."""
    wanted = None if keys is None else set(keys)
    names: list[str] | None = None
    if wanted is not None:
        names = sorted({n for n, _ in wanted})
        if not names:
            return {}
    found: dict[tuple[str, int], dict[str, Binding]] = {}
    for row in rows_of.binding_rows(conn, tenant, names):
        key = (row["name"], int(row["version"]))
        if wanted is None or key in wanted:
            found.setdefault(key, {})[row["tool"]] = Binding(row["tool"], row["digest"], row["source"],
                                                             dict(row["schema"] or {}))
    return found


def rebind(conn: Connection, tenant: str, name: str, version: int, bindings: Iterable[Binding]) -> None:
    """Replace ``name`` v``version``'s bindings of the tools in ``bindings`` (after it was
    re-verified against them)."""
    now = utc_now()
    for b in bindings:
        rows_of.replace_binding(conn, tenant, name, version, tool=b.tool, digest=b.digest, source=b.source,
                                schema=b.schema, now=now)


def purge(conn: Connection, tenant: str, name: str) -> None:
    """Delete every binding of ``name`` (the skill is deleted)."""
    rows_of.delete_bindings(conn, tenant, name)


def digests(library: "Rechecking", name: str, version: int) -> dict[str, str]:
    """``{tool: digest}`` of the schemas ``name`` v``version`` was verified against."""
    from skill_library.governance.lifecycle import unit_of

    with unit_of(library).transaction(write=False) as conn:
        bound = load(conn, library.context.tenant, [(name, version)]).get((name, version), {})
    return {tool: b.digest for tool, b in sorted(bound.items())}


# -- a schema change ------------------------------------------------------------------------
def changed_tools(old: Mapping[str, "ToolSpec"], new: Mapping[str, "ToolSpec | None"]) -> dict[str, str]:
    """``{tool: why}`` for each tool of ``new`` whose schema differs from ``old``'s or
    which ``new`` removes (None)."""
    found = {}
    for tool, spec in new.items():
        if spec is None:
            if tool in old:
                found[tool] = "removed"
        elif tool in old and digest(old[tool].schema_) != digest(spec.schema_):
            found[tool] = "schema changed"
    return found


def affected(conn: Connection, tenant: str, new: Mapping[str, "ToolSpec | None"],
             changed: Mapping[str, str]) -> dict[tuple[str, int], list[str]]:
    """The served (active and canary) versions bound to a tool of ``changed`` (or, for a
    tool declared for the first time with a schema, bound to a different schema seen in
    traces), with those tools."""
    active = rows_of.code_versions_with_status(conn, tenant, SERVED)
    declared = {t: s for t, s in new.items() if s is not None}
    bound = load(conn, tenant, [(n, v) for n, v, _ in active])
    found: dict[tuple[str, int], list[str]] = {}
    for name, version, tools in active:
        mine = bound.get((name, version), {})
        hits = []
        for tool in dict.fromkeys([*tools, *mine]):
            binding = mine.get(tool)
            if tool in changed:
                hits.append(tool)
            elif tool in declared and binding is not None and declared[tool].schema_ \
                    and binding.digest != digest(declared[tool].schema_):
                hits.append(tool)  # a schema seen in traces, now declared differently
        if hits:
            found[(name, version)] = hits
    return found


def suspended_calling(conn: Connection, tenant: str, tools: Iterable[str]) -> list[tuple[str, int]]:
    """The suspended versions of ``tenant`` that call one of ``tools`` (a new declaration
    of the tool re-verifies them: a schema put back, or fixed, returns them to active)."""
    wanted = set(tools)
    rows = rows_of.code_versions_with_status(conn, tenant, [SUSPENDED], code_only=False)
    return [(n, v) for n, v, tools in rows if wanted & set(tools)]


def suspend(conn: Connection, library: "Rechecking", hits: Mapping[tuple[str, int], list[str]],
            new: Mapping[str, "ToolSpec | None"], changed: Mapping[str, str]) -> None:
    """Move every version of ``hits`` from active (or canary) to suspended on ``conn`` (the
    transaction that stores the new schemas), audited by ``system`` with the reason. A
    canary keeps its ``canaries`` row, so that passing re-verification returns it to its
    share of sessions; routing serves only a version whose status is ``canary``."""
    bound = load(conn, library.context.tenant, hits)
    status = statuses(conn, library.context.tenant, hits)
    moves: dict[str, list[tuple[str, int, str, dict[str, Any]]]] = {}
    for (name, version), tools in sorted(hits.items()):
        why = "; ".join(f"tool {t!r} {changed.get(t, 'declared with a schema')}" for t in tools)
        mine = bound.get((name, version), {})
        evidence = {"tools": {t: {"from": mine[t].digest if t in mine else None,
                                  "to": _digest_or_none(new.get(t))} for t in tools}}
        moves.setdefault(status[(name, version)], []).append(
            (name, version, f"{why}: out of fetch until re-verified against the new schema", evidence))
    for from_status, group in sorted(moves.items()):
        move_many(conn, library, group, from_status, SUSPENDED)


def statuses(conn: Connection, tenant: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The status of each version of ``keys``."""
    return rows_of.version_statuses(conn, tenant, keys)


def canaries_of(conn: Connection, tenant: str, names: Iterable[str]) -> set[tuple[str, int]]:
    """The (name, version) of each canary row of ``names``: a suspended version with one was
    a canary when it was suspended, and returns to canary."""
    return rows_of.canary_keys(conn, tenant, names)


def _digest_or_none(spec: "ToolSpec | None") -> str | None:
    return None if spec is None else digest(spec.schema_)


def move_many(conn: Connection, library: "Rechecking", moves: Sequence[tuple[str, int, str, dict[str, Any]]],
              from_status: str, to_status: str) -> None:
    """Move the versions of ``moves`` (name, version, reason, evidence) from
    ``from_status`` to ``to_status`` as ``system`` on ``conn``: a few statements for all
    of them (the lifecycle's table and permission apply; the active pointer must already
    name each version moved to active), one audit event each."""
    from skill_library.errors import LifecycleError
    from skill_library.governance import audit
    from skill_library.governance.actors import require
    from skill_library.governance.lifecycle import REQUIRED, TRANSITIONS

    if not moves:
        return
    if to_status not in TRANSITIONS.get(from_status, frozenset()):
        raise LifecycleError(f"a version cannot move from {from_status} to {to_status}")
    system = library.actors.resolve("system")
    require(system, REQUIRED[to_status], f"move versions from {from_status} to {to_status}")
    tenant = library.context.tenant
    keys = [(n, v) for n, v, _, _ in moves]
    for start in range(0, len(keys), rows_of.BATCH):
        part = keys[start:start + rows_of.BATCH]
        found = rows_of.version_statuses(conn, tenant, part)
        wrong = [f"{n!r} v{v} is {found.get((n, v), 'gone')}" for n, v in part if found.get((n, v)) != from_status]
        if wrong:
            raise LifecycleError(f"expected {from_status} versions: {', '.join(wrong[:5])}")
        if to_status == "active":
            pointers = rows_of.pointers(conn, tenant, {n for n, _ in part})
            moved = [f"{n!r} v{v}" for n, v in part if pointers.get(n) != v]
            if moved:
                raise LifecycleError(f"the active pointer moved on: {', '.join(moved[:5])}")
        rows_of.write_statuses(conn, tenant, part, to_status, utc_now())
    audit.write_many(conn, tenant, [{"name": n, "version": v, "from_status": from_status, "to_status": to_status,
                                     "reason": reason, "evidence": evidence} for n, v, reason, evidence in moves],
                     actor=system.id)


_NONE = Binding("", "", "", {})


def replay(calls_by_trace: Mapping[str, Sequence[Mapping[str, Any]]], tool: str,
           schema: Mapping[str, Any] | None) -> list[str]:
    """The problems of replaying the recorded calls of ``tool`` against ``schema`` (None:
    the tool was removed): one line per invalid call ([]: every call passes)."""
    from jsonschema import validators

    problems = []
    validator = None
    if schema is not None:
        validator = validators.validator_for(schema, default=validators.Draft202012Validator)(schema)
    for trace_id, calls in sorted(calls_by_trace.items()):
        for i, call in enumerate(calls):
            if call.get("name") != tool or call.get("kind", "tool") != "tool":
                continue
            if validator is None:
                problems.append(f"trace {trace_id} call {i + 1}: tool {tool!r} was removed")
                continue
            for error in validator.iter_errors(call.get("arguments") or {}):
                where = error.json_path if list(error.path) else "the arguments"
                problems.append(f"trace {trace_id} call {i + 1} ({tool}): {where}: {_no_values(error)}")
                break
    return problems


def _no_values(error: Any) -> str:
    """A validation error's kind without the offending value (which may be personal data)."""
    if error.validator == "required":
        return str(error.message).split(" is a required property")[0].strip("'\"") + " is required"
    return f"fails {error.validator!r} ({json.dumps(error.validator_value, default=str)[:120]})"


def schema_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """A unified diff of two schemas' indented JSON (``None``: absent)."""
    def lines(schema: Mapping[str, Any] | None) -> list[str]:
        if schema is None:
            return []
        return json.dumps(schema, sort_keys=True, indent=2, default=str).splitlines(keepends=True)

    return "".join(difflib.unified_diff(lines(old), lines(new), "verified against", "registered now"))


def reverify(library: "Rechecking", suspended: Sequence[tuple[str, int]],
             specs: Mapping[str, "ToolSpec"], tools: Mapping[str, Callable[..., Any]] | None = None
             ) -> Reverification:
    """Re-verify the ``suspended`` versions against the tenant's tool ``specs`` now: replay
    their example traces' calls of the tools whose schema they are not bound to; the ones
    that pass become active again (by ``system``, audited, rebound), the others stay
    suspended with the problems and the schema diff in an audit event. Two write
    transactions for all of them, then one index sync.

    With ``tools`` (the caller's tool callables), a version whose replay passes is also
    run once per example trace in the sandbox (:func:`live_check`): its read-only calls go
    live to ``tools``, every other call gets its recorded result; a run that fails holds
    the version with the reason."""
    from skill_library.governance import audit
    from skill_library.governance.lifecycle import unit_of

    store = unit_of(library)
    tenant = library.context.tenant
    result = Reverification(suspended=list(suspended))
    if not suspended:
        return result
    skills = store.get_many(list(suspended))
    with store.transaction(write=False) as conn:
        bound = load(conn, tenant, suspended)
        examples = _example_ids(conn, tenant, {n for n, _ in suspended})
        wanted = {t for key in suspended if key in skills
                  for t in [*skills[key].provenance.trace_ids, *examples.get(key[0], [])]}
        bodies = trace_bodies(conn, tenant, wanted)
    calls = {t: list(b.get("calls") or []) for t, b in bodies.items()}
    verdicts: dict[tuple[str, int], tuple[list[Binding], list[str], str]] = {}
    for key in suspended:
        skill = skills.get(key)
        if skill is None or skill.status != SUSPENDED:
            continue
        ids = list(dict.fromkeys([*skill.provenance.trace_ids, *examples.get(key[0], [])]))
        mine = {t: calls[t] for t in ids if t in calls}
        problems: list[str] = []
        rebound: list[Binding] = []
        diffs = []
        for tool in dict.fromkeys([*skill.tools, *bound.get(key, {})]):
            spec = specs.get(tool)
            old = bound.get(key, {}).get(tool)
            now_digest = digest(spec.schema_) if spec is not None and spec.schema_ else None
            if old is not None and (now_digest == old.digest or (old.source == TRACES and now_digest is None
                                                                 and spec is not None)):
                continue  # still what it was verified against
            if spec is None and old is None:
                continue  # never bound, never declared: nothing to check
            schema = None if spec is None else dict(spec.schema_)
            if not any(c.get("name") == tool for cs in mine.values() for c in cs):
                problems.append(f"no stored example trace calls {tool!r}: nothing to replay")
            problems.extend(replay(mine, tool, schema))
            diffs.append(schema_diff(None if old is None else old.schema, schema))
            if schema is not None:
                rebound.append(Binding(tool, digest(schema), DECLARED, schema))
        if tools and not problems and rebound:
            problems.extend(live_check(library, skill, {t: bodies[t] for t in ids if t in bodies}, specs, tools))
        verdicts[key] = (rebound, problems, "".join(diffs))
    system = library.actors.resolve("system")

    def work(conn: Connection) -> None:
        held: list[dict[str, Any]] = []
        passed: list[tuple[str, int, str, dict[str, Any]]] = []
        for (name, version), (rebound, problems, diff) in sorted(verdicts.items()):
            traces = len(set(skills[(name, version)].provenance.trace_ids) | set(examples.get(name, [])))
            if problems:
                held.append({"name": name, "version": version, "from_status": SUSPENDED, "to_status": SUSPENDED,
                             "reason": f"re-verification failed ({len(problems)} problem(s)): held for a person "
                                       "(resume it with `library.resume(name)` or retire it)",
                             "evidence": {"problems": problems[:50], "diff": diff}})
                continue
            rebind(conn, tenant, name, version, rebound)
            live = " and its run with the caller's read-only tools live succeeded" if tools else ""
            passed.append((name, version,
                           f"re-verified: the recorded calls of {traces} example trace(s) are valid under "
                           f"the new schema{live}", {"tools": {b.tool: b.digest for b in rebound}, "diff": diff,
                                                     "live": bool(tools)}))
        audit.write_many(conn, tenant, held, actor=system.id)
        canaries = canaries_of(conn, tenant, {n for n, _, _, _ in passed})  # back to their share
        move_many(conn, library, [p for p in passed if (p[0], p[1]) not in canaries], SUSPENDED, "active")
        move_many(conn, library, [p for p in passed if (p[0], p[1]) in canaries], SUSPENDED, "canary")
        result.held.clear()
        result.held.update({(e["name"], e["version"]): e["evidence"]["problems"] for e in held})
        result.reactivated[:] = [(n, v) for n, v, _, _ in passed]

    with library.context.index.writing() as index:
        store.retrying(work)
        library.context.sync(index, sorted({n for n, _ in result.reactivated}), known={})
    return result


def _example_ids(conn: Connection, tenant: str, names: Iterable[str]) -> dict[str, list[str]]:
    return rows_of.example_trace_ids(conn, tenant, names)


def resume(library: "Rechecking", name: str, *, actor: Any, reason: str) -> Skill:
    """A person (``skill.approve``) returns a suspended version of ``name`` to active (a
    suspended canary to canary, its share of sessions). With several suspended versions
    (an active one and a canary), the newest."""
    from skill_library.errors import SkillLibraryError
    from skill_library.governance.lifecycle import transition, unit_of

    suspended = [s for s in library.context.store.history(name) if s.status == SUSPENDED]
    if not suspended:
        raise SkillLibraryError(f"skill {name!r} has no suspended version; nothing to resume")
    version = suspended[-1].version
    with unit_of(library).transaction(write=False) as conn:
        was_canary = (name, version) in canaries_of(conn, library.context.tenant, [name])
    return transition(library, name, version, "canary" if was_canary else "active", actor=actor,
                      reason=reason or "resumed by an approver after a tool schema change")


# -- the live read-only check -----------------------------------------------------------------
class NotRecorded(Exception):
    """A stubbed call the example trace did not make (the run took another path)."""


def _recorded(tool: str, calls: Sequence[Mapping[str, Any]]) -> Callable[..., Any]:
    """A stub of ``tool`` answering each call with the recorded result of the trace's
    unused call with the same arguments; a call the trace did not make raises."""
    import copy

    from skill_library.induction.verify import same_value

    mine = [c for c in calls if c.get("name") == tool and not c.get("error")]
    used = [False] * len(mine)

    def stub(**arguments: Any) -> Any:
        for i, call in enumerate(mine):
            if not used[i] and same_value(call.get("arguments") or {}, arguments):
                used[i] = True
                return copy.deepcopy(call.get("result"))
        raise NotRecorded(f"the example trace has no call of {tool!r} with these arguments")

    stub.__name__ = tool
    return stub


def live_check(library: "Rechecking", skill: Skill, traces: Mapping[str, Mapping[str, Any]],
               specs: Mapping[str, "ToolSpec"], tools: Mapping[str, Callable[..., Any]]) -> list[str]:
    """The problems of running ``skill`` once per stored example trace (``traces``: raw
    trace dicts by id) in the sandbox with its read-only tools live: a tool declared
    read-only (``side_effects=False``, or in ``read_only_tools=``) that ``tools`` holds is
    called for real; every other tool, and so every state-changing one, is a stub answering
    with the trace's recorded result. A run that fails (the code raised on what a live read
    returned, e.g. a missing key it uses; a live read raised; it took a path the trace did
    not record) is a problem naming the trace, the error's type and line; a message is kept
    only for a missing key or index (never a value the run saw)."""
    from skill_library.errors import SkillUsageError
    from skill_library.execution import closure, execute

    _, declared = closure(library, skill)
    read_only = {t for t in declared if (t in specs and not specs[t].side_effects) or t in library.read_only_tools}
    live = sorted(t for t in read_only if t in tools)
    if not live:
        return []  # none of its reads was given: nothing to check live
    schemas = {t: dict(specs[t].schema_) for t in declared if t in specs and specs[t].schema_}
    names = list((skill.parameters or {}).get("properties", {}))
    problems: list[str] = []
    ran = 0
    for trace_id, body in sorted(traces.items()):
        calls = list(body.get("calls") or [])
        params = dict(body.get("params") or {})
        mapping = {t: (tools[t] if t in live else _recorded(t, calls)) for t in declared}
        try:
            run = execute(library, skill, {k: params[k] for k in names if k in params}, mapping,
                          tool_schemas=schemas)
        except SkillUsageError:
            continue  # its parameters do not fit the version's: not an example to run it on
        ran += 1
        if run.ok:
            continue
        error = run.error
        kind = error.type if error is not None else (run.limit or "error")
        where = f" at line {error.line}" if error is not None and error.line else ""
        keep = error is not None and error.type in ("KeyError", "IndexError")
        failed_live = [c for c in run.trace.calls if c.name in live and c.error]
        cause = (f"; the live call of {failed_live[0].name!r} failed" if failed_live else "")
        if any(c.name not in live and (c.error or "").startswith("the example trace has no call")
               for c in run.trace.calls):
            cause = "; it made a call the trace did not record (a live read sent it another way)"
        problems.append(f"trace {trace_id}: the run with live {', '.join(live)} failed: {kind}{where}"
                        + (f" ({error.message[:80]})" if keep and error is not None else "") + cause)
    if not ran:
        problems.append("no stored example trace fits the version's parameters: nothing to run live")
    return problems


def reverify_named(library: "Rechecking", name: str,
                   tools: Mapping[str, Callable[..., Any]] | None = None) -> Reverification:
    """``SkillLibrary.reverify_tools``: re-verify the suspended versions of ``name`` against
    the tool schemas declared now (with ``tools``, the live read-only check too)."""
    from skill_library.errors import SkillLibraryError
    from skill_library.governance.workflow import tool_specs

    keys = [(s.name, s.version) for s in library.context.store.history(name) if s.status == SUSPENDED]
    if not keys:
        raise SkillLibraryError(f"skill {name!r} has no suspended version; nothing to re-verify")
    return reverify(library, keys, tool_specs(library), tools)
