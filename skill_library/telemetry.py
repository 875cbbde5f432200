"""OpenTelemetry spans and metrics of the library's memory operations (issue 26, item 3).

``fetch``, ``learn``, ``learn_many``, ``run``, ``feedback`` and every governance transition
(each audit event) emit a span named after the GenAI semantic conventions' operation
(``gen_ai.operation.name``: ``search_memory`` for fetch, ``update_memory`` for learn,
feedback and transitions, ``execute_tool`` for a run) with the conventions' memory
attributes where they fit:

============================================  ==============================================
``gen_ai.memory.store.name``                  ``skill_library``
``gen_ai.memory.store.id``                    the library's location (folder or database)
``gen_ai.memory.namespace``                   the tenant
``gen_ai.memory.type``                        ``procedural`` (skills are procedures)
``gen_ai.memory.id``                          ``name@version`` of the skill concerned
``gen_ai.memory.search.result.count``         how many matches fetch returned
``gen_ai.memory.search.similarity.threshold`` fetch's similarity floor, when given
``gen_ai.tool.name``                          the skill a run ran
============================================  ==============================================

and the library's own under ``skill_library.*`` (the top similarity, abstention, a run's
outcome, a transition's statuses). Metrics: ``skill_library.operation.duration`` (s, by
operation), ``skill_library.fetch.top_similarity``, ``skill_library.runs`` (by outcome),
``skill_library.transitions`` (by status reached) and the gauge ``skill_library.versions``
(quarantined, suspended and held-for-a-person versions per tenant).

Everything goes through ``opentelemetry-api``: nothing is emitted until the application
installs a tracer or meter provider (the SDK is the ``otel`` extra; docs/telemetry.md),
and while none is installed each call costs one check. No attribute carries a task, an
argument, a result, a reason or an actor's id; the strings that are kept (skill names,
tenants, locations) go through the masking pass (:mod:`skill_library.privacy`) as well.
"""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from skill_library import privacy

if TYPE_CHECKING:
    from skill_library.context import TenantContext

try:  # opentelemetry-api is a dependency; without it every call is a no-op
    from opentelemetry import context as _context
    from opentelemetry import metrics as _metrics
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - the API ships with chromadb
    _context = None  # type: ignore[assignment]
    _metrics = None  # type: ignore[assignment]
    _trace = None  # type: ignore[assignment]

F = TypeVar("F", bound=Callable[..., Any])


class Observed(Protocol):
    """What the gauges read of an open library (telemetry sits below the concepts, so it
    names its own narrow type): the tenant's context, its name and where its records live."""

    @property
    def context(self) -> TenantContext: ...

    @property
    def tenant(self) -> str: ...

    @property
    def location(self) -> str: ...

#: the instrumentation scope's name
SCOPE = "skill_library"
#: ``gen_ai.operation.name`` of each library operation
OPERATIONS: dict[str, str] = {
    "fetch": "search_memory",
    "learn": "update_memory",
    "learn_many": "update_memory",
    "feedback": "update_memory",
    "transition": "update_memory",
    "run": "execute_tool",
}
#: the statuses the ``skill_library.versions`` gauge counts ("held": waiting for a person)
GAUGED = ("quarantined", "suspended", "held")

_explicit: dict[str, Any] = {}
_instruments: dict[int, dict[str, Any]] = {}
_libraries: "weakref.WeakSet[Observed]" = weakref.WeakSet()


def use(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Emit through these providers instead of the global ones (tests; an application that
    keeps its providers out of the global API). ``use()`` returns to the global ones."""
    _explicit.clear()
    if tracer_provider is not None:
        _explicit["tracer"] = tracer_provider
    if meter_provider is not None:
        _explicit["meter"] = meter_provider
    _instruments.clear()


def _tracer_provider() -> Any:
    if "tracer" in _explicit:
        return _explicit["tracer"]
    if _trace is None:
        return None
    provider = _trace.get_tracer_provider()
    return None if isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)) else provider


def _meter_provider() -> Any:
    if "meter" in _explicit:
        return _explicit["meter"]
    if _metrics is None:
        return None
    provider = _metrics.get_meter_provider()
    name = type(provider).__name__
    return None if name in ("_ProxyMeterProvider", "NoOpMeterProvider") else provider


def enabled() -> bool:
    """Whether a tracer or meter provider is installed (else nothing is emitted)."""
    return _tracer_provider() is not None or _meter_provider() is not None


def _meters(provider: Any) -> dict[str, Any]:
    found = _instruments.get(id(provider))
    if found is not None:
        return found
    meter = provider.get_meter(SCOPE, _version())
    found = {
        "duration": meter.create_histogram("skill_library.operation.duration", unit="s",
                                           description="Duration of a skill library operation"),
        "similarity": meter.create_histogram("skill_library.fetch.top_similarity", unit="1",
                                             description="Cosine similarity of fetch's top match"),
        "runs": meter.create_counter("skill_library.runs", unit="{run}", description="Skill runs by outcome"),
        "transitions": meter.create_counter("skill_library.transitions", unit="{transition}",
                                            description="Governance transitions by the status reached"),
    }
    meter.create_observable_gauge("skill_library.versions", callbacks=[_observe_versions], unit="{version}",
                                  description="Quarantined, suspended and held-for-a-person versions")
    _instruments[id(provider)] = found
    return found


def _tracer(provider: Any) -> Any:
    """The library's tracer from ``provider`` (kept per provider)."""
    key = ("tracer", id(provider))
    found = _tracers.get(key)
    if found is None or found[0] is not provider:
        found = _tracers[key] = (provider, provider.get_tracer(SCOPE, _version()))
    return found[1]


_tracers: dict[tuple[str, int], tuple[Any, Any]] = {}


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        from importlib.metadata import version

        return version("skill-library")
    except Exception:  # not installed (a source checkout)
        return "0"


def watch(library: "Observed") -> None:
    """Count ``library``'s quarantined, suspended and held versions in the gauge (held
    weakly: a closed, collected library drops out)."""
    _libraries.add(library)


def version_counts(library: "Observed") -> dict[str, int]:
    """``{status: n}`` of :data:`GAUGED` in ``library``'s tenant ("held": draft or
    evaluated versions waiting for a person)."""
    from skill_library.storage.governance_rows import status_counts
    from skill_library.storage.interface import UnitOfWork

    counts = dict.fromkeys(GAUGED, 0)
    store = library.context.store
    if not isinstance(store, UnitOfWork):
        return counts
    rows = status_counts(store, ("quarantined", "suspended", "draft", "evaluated"))
    for status, n in rows.items():
        key = "held" if status in ("draft", "evaluated") else str(status)
        counts[key] += int(n)
    return counts


def _observe_versions(options: Any) -> Iterator[Any]:
    from opentelemetry.metrics import Observation

    for library in list(_libraries):
        if getattr(library, "_closed", False):
            continue
        try:
            counts = version_counts(library)
        except Exception:  # a closed store, a database away: no observation this round
            continue
        for status, n in counts.items():
            yield Observation(n, {"gen_ai.memory.namespace": _clean(library.tenant), "skill_library.status": status})


# -- attributes ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _clean(value: str) -> str:
    """A string attribute through the masking pass (shapes, then names)."""
    return privacy.mask_names(privacy.scrub_shapes(str(value)))


def _memory_id(name: Any, version: Any) -> str:
    return _clean(f"{name}@{version}") if version is not None else _clean(str(name))


def _base(library: Any, operation: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": OPERATIONS[operation],
                             "gen_ai.memory.store.name": SCOPE, "gen_ai.memory.type": "procedural",
                             "skill_library.operation": operation}
    tenant = getattr(library, "tenant", None)
    if tenant is not None:
        attrs["gen_ai.memory.namespace"] = _clean(tenant)
    try:
        attrs["gen_ai.memory.store.id"] = _clean(library.location)
    except Exception:  # not a SkillLibrary (a store-level caller)
        pass
    return attrs


def _fetch_attrs(args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.memory.search.result.count": len(result),
                             "skill_library.fetch.k": int(args[2] if len(args) > 2 else kwargs.get("k", 2)),
                             "skill_library.fetch.abstained": bool(getattr(result, "abstained", False))}
    floor = kwargs.get("min_similarity")
    if floor is not None:
        attrs["gen_ai.memory.search.similarity.threshold"] = float(floor)
    if len(result):
        top = result[0]
        attrs["skill_library.fetch.top_similarity"] = float(top.similarity)
        attrs["gen_ai.memory.id"] = _memory_id(top.skill.name, top.skill.version)
        attrs["skill_library.fetch.skills"] = [_memory_id(m.skill.name, m.skill.version) for m in result]
    return attrs


def _learn_attrs(args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"skill_library.learn.status": str(getattr(result, "status", ""))}
    skill = getattr(result, "skill", None)
    if skill is not None:
        attrs["gen_ai.memory.id"] = _memory_id(skill.name, skill.version)
    return attrs


def _learn_many_attrs(args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for item in result or []:
        key = str(getattr(item, "status", ""))
        statuses[key] = statuses.get(key, 0) + 1
    return {"skill_library.learn.traces": len(result or []),
            **{f"skill_library.learn.{k}": n for k, n in sorted(statuses.items()) if k}}


def _run_attrs(args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any) -> dict[str, Any]:
    kind = getattr(result, "outcome_kind", None)
    attrs: dict[str, Any] = {"skill_library.run.outcome": "unjudged" if kind is None else str(kind),
                             "skill_library.run.ok": bool(getattr(result, "ok", False))}
    name = getattr(result, "name", None)
    if name is not None:
        attrs["gen_ai.tool.name"] = _clean(name)
        attrs["gen_ai.memory.id"] = _memory_id(name, getattr(result, "version", None))
    return attrs


def _feedback_attrs(args: tuple[Any, ...], kwargs: Mapping[str, Any], result: Any) -> dict[str, Any]:
    from skill_library.models import OutcomeKind

    given = args[2] if len(args) > 2 else kwargs.get("outcome", kwargs.get("succeeded"))
    try:
        kind = OutcomeKind.of(given).value  # type: ignore[arg-type]
    except Exception:
        kind = "unknown"
    if kwargs.get("wrong_skill"):
        kind = "wrong_skill"
    attrs: dict[str, Any] = {"skill_library.feedback.kind": kind}
    if result is not None:
        attrs["gen_ai.memory.id"] = _memory_id(result.name, result.version)
    return attrs


_EXTRACTORS: dict[str, Callable[[tuple[Any, ...], Mapping[str, Any], Any], dict[str, Any]]] = {
    "fetch": _fetch_attrs, "learn": _learn_attrs, "learn_many": _learn_many_attrs,
    "run": _run_attrs, "feedback": _feedback_attrs,
}


# -- call sites -----------------------------------------------------------------------------
def traced(operation: str) -> Callable[[F], F]:
    """Decorate a ``SkillLibrary`` method as ``operation`` (a key of :data:`OPERATIONS`):
    a span around each call with the operation's attributes, its duration and, for
    fetch and run, the similarity and outcome metrics. The undecorated method stays at
    ``__wrapped__``."""
    if operation not in _EXTRACTORS:
        raise ValueError(f"operation must be one of {sorted(_EXTRACTORS)}, got {operation!r}")
    extract = _EXTRACTORS[operation]

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tracers = _tracer_provider()
            meters = _meter_provider()
            if tracers is None and meters is None:
                return method(*args, **kwargs)
            return _observed(operation, extract, method, args, kwargs, tracers, meters)

        return cast(F, wrapper)

    return decorate


def _observed(operation: str, extract: Callable[..., dict[str, Any]], method: Callable[..., Any],
              args: tuple[Any, ...], kwargs: Mapping[str, Any], tracers: Any, meters: Any) -> Any:
    attrs = _base(args[0] if args else None, operation)
    started = time.perf_counter()
    span = None
    if tracers is not None:
        span = _tracer(tracers).start_span(
            f"{OPERATIONS[operation]} {operation}", kind=_trace.SpanKind.INTERNAL, attributes=attrs)
    token = _context.attach(_trace.set_span_in_context(span)) if span is not None else None
    try:
        result = method(*args, **kwargs)
    except BaseException as exc:
        if span is not None:
            # the type only: a message or stack trace may quote a task, an argument or a result
            span.add_event("exception", {"exception.type": type(exc).__qualname__})
            span.set_status(_trace.Status(_trace.StatusCode.ERROR, type(exc).__name__))
            span.set_attribute("error.type", type(exc).__qualname__)
        _measure(meters, operation, attrs, time.perf_counter() - started, {}, error=type(exc).__qualname__)
        raise
    else:
        found = extract(args, kwargs, result)
        if span is not None:
            span.set_attributes(found)
        _measure(meters, operation, attrs, time.perf_counter() - started, found)
        return result
    finally:
        if token is not None:
            _context.detach(token)
        if span is not None:
            span.end()


def _measure(meters: Any, operation: str, attrs: Mapping[str, Any], seconds: float,
             found: Mapping[str, Any], *, error: str | None = None) -> None:
    if meters is None:
        return
    instruments = _meters(meters)
    keys = {k: attrs[k] for k in ("gen_ai.operation.name", "skill_library.operation", "gen_ai.memory.namespace")
            if k in attrs}
    if error is not None:
        keys["error.type"] = error
    instruments["duration"].record(seconds, keys)
    if "skill_library.fetch.top_similarity" in found:
        instruments["similarity"].record(found["skill_library.fetch.top_similarity"],
                                         {k: v for k, v in keys.items() if k == "gen_ai.memory.namespace"})
    if operation == "run" and error is None:
        outcome = found.get("skill_library.run.outcome", "unjudged")
        instruments["runs"].add(1, {**keys, "skill_library.run.outcome": outcome})


def transitions(tenant: str, events: Iterable[Mapping[str, Any]], actor: str) -> None:
    """Governance transitions just written (audit events: name, version, from_status,
    to_status): a span each (one span for a bulk write of many) and the transition
    counter. ``actor`` is reported by kind only (``system``, ``generalizer``, ``person``)."""
    tracers = _tracer_provider()
    meters = _meter_provider()
    if tracers is None and meters is None:
        return
    events = list(events)
    by = actor if actor in ("system", "generalizer") else "person"
    base: dict[str, Any] = {"gen_ai.operation.name": OPERATIONS["transition"], "gen_ai.memory.store.name": SCOPE,
            "gen_ai.memory.type": "procedural", "skill_library.operation": "transition",
            "gen_ai.memory.namespace": _clean(tenant), "skill_library.transition.by": by}
    if tracers is not None:
        tracer = _tracer(tracers)
        if len(events) == 1:
            e = events[0]
            attrs = {**base, "gen_ai.memory.id": _memory_id(e["name"], e.get("version")),
                     "skill_library.transition.from": str(e.get("from_status") or ""),
                     "skill_library.transition.to": str(e["to_status"])}
        else:
            attrs = {**base, "skill_library.transition.count": len(events),
                     "skill_library.transition.to": sorted({str(e["to_status"]) for e in events})}
        tracer.start_span(f"{OPERATIONS['transition']} transition", kind=_trace.SpanKind.INTERNAL,
                          attributes=attrs).end()
    if meters is not None:
        counter = _meters(meters)["transitions"]
        for e in events:
            if e.get("from_status") == e["to_status"]:
                continue  # an event about a version that stays where it is (held for a person)
            counter.add(1, {"gen_ai.memory.namespace": base["gen_ai.memory.namespace"],
                            "skill_library.transition.to": str(e["to_status"]), "skill_library.transition.by": by})
