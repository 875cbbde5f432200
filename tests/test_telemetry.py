"""Telemetry (issue 26, item 3): fetch, learn, run, feedback and governance transitions emit
OpenTelemetry spans with the GenAI conventions' memory attributes and metrics, through the
API only, nothing before a provider is installed, no personal data in any attribute.
Checked with the SDK's in-memory span exporter and metric reader."""

from __future__ import annotations

import json

import pytest

from skill_library import SkillLibrary, telemetry
from skill_library.governance import Policy, ToolSpec
from skill_library.models import Outcome, ToolCall, Trace

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace",
                                reason="opentelemetry-sdk (the `otel` extra) is not installed")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EMAIL = "ann.smith@example.com"
PERSON = "Ann Smith"
ORDERS_SCHEMA = {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}


def orders_trace(email: str = EMAIL) -> Trace:
    return Trace(task=f"Hi, I'm {PERSON}: list the open orders of {email}", params={"email": email},
                 calls=[ToolCall(name="find_orders", arguments={"email": email},
                                 result=[{"id": "W1234567", "owner": PERSON, "status": "open"}])],
                 result=["W1234567"], outcome=Outcome(success=True, verifier="orders-check"))


@pytest.fixture
def otel():
    spans = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.use(tracer_provider, meter_provider)
    yield spans, reader
    telemetry.use()
    meter_provider.shutdown()
    tracer_provider.shutdown()


@pytest.fixture
def lib(tmp_path, embedder):
    with SkillLibrary(tmp_path / "o", embedder=embedder, policy=Policy(auto_approve="all")) as library:
        library.register_tools({"find_orders": ToolSpec(schema=ORDERS_SCHEMA, side_effects=False)})
        yield library


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[object]]:
    found: dict[str, list[object]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def test_nothing_is_emitted_before_a_provider_is_installed(lib, otel):
    spans, reader = otel
    telemetry.use()  # back to the global API, where this process installed no provider
    assert not telemetry.enabled()
    lib.learn(orders_trace())
    lib.fetch("list the open orders of bob@example.com")
    assert spans.get_finished_spans() == () and metric_points(reader) == {}


def test_operations_emit_spans_with_the_memory_attributes(lib, otel):
    spans, reader = otel
    learned = lib.learn(orders_trace())
    name = learned.skill.name
    found = lib.fetch("Hello, I am Bob Jones: list the open orders of bob.jones@example.org", min_similarity=0.1)
    assert [m.skill.name for m in found] == [name]
    run = lib.run(name, {"email": "bob.jones@example.org"},
                  {"find_orders": lambda email: [{"id": "W7654321", "owner": "Bob Jones", "status": "open"}]})
    lib.feedback(name, True, trace_id=run.trace.id)
    by_op: dict[str, list[object]] = {}
    for span in spans.get_finished_spans():
        by_op.setdefault(span.attributes["skill_library.operation"], []).append(span)
    assert set(by_op) >= {"learn", "fetch", "run", "feedback", "transition"}
    fetch = by_op["fetch"][0].attributes
    assert fetch["gen_ai.operation.name"] == "search_memory" and by_op["fetch"][0].name == "search_memory fetch"
    assert fetch["gen_ai.memory.store.name"] == "skill_library" and fetch["gen_ai.memory.namespace"] == "default"
    assert fetch["gen_ai.memory.search.result.count"] == 1 and fetch["gen_ai.memory.id"] == f"{name}@1"
    assert fetch["gen_ai.memory.search.similarity.threshold"] == 0.1
    assert fetch["skill_library.fetch.top_similarity"] == pytest.approx(found[0].similarity)
    assert fetch["gen_ai.memory.store.id"] == lib.location
    learn = by_op["learn"][0].attributes
    assert (learn["gen_ai.operation.name"], learn["skill_library.learn.status"]) == ("update_memory", "saved")
    ran = by_op["run"][0].attributes
    assert (ran["gen_ai.operation.name"], ran["gen_ai.tool.name"], ran["skill_library.run.outcome"]) == (
        "execute_tool", name, "unjudged")
    assert by_op["feedback"][0].attributes["skill_library.feedback.kind"] == "success"
    moves = [(s.attributes.get("skill_library.transition.to"), s.attributes["skill_library.transition.by"])
             for s in by_op["transition"] if s.attributes.get("gen_ai.memory.id") == f"{name}@1"]
    assert moves == [("draft", "generalizer"), ("evaluated", "system"), ("approved", "system"),
                     ("active", "system")]
    # the transitions are in the learn span's trace (under its learn_many child)
    learn_span, many = by_op["learn"][0], by_op["learn_many"][0]
    assert many.parent.span_id == learn_span.context.span_id
    assert all(s.parent.span_id == many.context.span_id and s.context.trace_id == learn_span.context.trace_id
               for s in by_op["transition"] if s.attributes.get("gen_ai.memory.id") == f"{name}@1")
    points = metric_points(reader)
    durations = {p.attributes["skill_library.operation"] for p in points["skill_library.operation.duration"]}
    assert durations >= {"fetch", "learn", "run", "feedback"}
    assert [p.count for p in points["skill_library.fetch.top_similarity"]] == [1]
    assert {(p.attributes["skill_library.run.outcome"], p.value) for p in points["skill_library.runs"]} == {
        ("unjudged", 1)}
    assert any(p.attributes["skill_library.transition.to"] == "active" for p in points["skill_library.transitions"])


def test_no_attribute_carries_personal_data(lib, otel):
    spans, reader = otel
    name = lib.learn(orders_trace()).skill.name
    lib.fetch(f"{PERSON} here, list the open orders of {EMAIL} please")
    lib.run(name, {"email": EMAIL}, {"find_orders": lambda email: [{"id": "W1234567", "owner": PERSON}]})
    lib.feedback(name, "misuse", reason=f"{PERSON} typed {EMAIL} wrong")
    text = json.dumps([dict(s.attributes) for s in spans.get_finished_spans()]
                      + [[dict(e.attributes or {}) for e in s.events] for s in spans.get_finished_spans()])
    text += json.dumps([dict(p.attributes) for ps in metric_points(reader).values() for p in ps])
    assert spans.get_finished_spans()
    for secret in (EMAIL, "ann.smith", "Ann", "Smith", "W1234567", "typed"):
        assert secret not in text


def test_a_failing_operation_records_its_error_type_only(lib, otel):
    spans, _ = otel
    with pytest.raises(ValueError):
        lib.fetch(" ")
    (span,) = spans.get_finished_spans()
    assert span.attributes["error.type"] == "ValueError" and span.status.status_code.name == "ERROR"
    assert all("task must be" not in json.dumps(dict(e.attributes or {})) for e in span.events)


def test_the_versions_gauge_counts_suspended_and_held_versions(lib, otel):
    _, reader = otel
    name = lib.learn(orders_trace()).skill.name
    lib.register_tools({"find_orders": ToolSpec(schema={**ORDERS_SCHEMA, "required": ["email", "store"],
                                                        "properties": {**ORDERS_SCHEMA["properties"],
                                                                       "store": {"type": "string"}}},
                                                side_effects=False)})
    assert lib.get(name).status == "suspended"
    gauge = {p.attributes["skill_library.status"]: p.value for p in metric_points(reader)["skill_library.versions"]
             if p.attributes["gen_ai.memory.namespace"] == "default"}
    assert gauge == {"quarantined": 0, "suspended": 1, "held": 0}
    moved = [p for p in metric_points(reader)["skill_library.transitions"]
             if p.attributes["skill_library.transition.to"] == "suspended"]
    assert [p.value for p in moved] == [1]
