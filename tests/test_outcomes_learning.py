"""Idempotent learning (issue 21 item 5): a trace without an id is known by the hash of its
task, params, calls and outcome, so the same traces learned twice add nothing and each
says ``duplicate``."""

from __future__ import annotations

import json

from skill_library.models import Outcome, ToolCall, Trace

STOCK: dict[str, int] = {}


def trace(item: str, n: int, **fields) -> Trace:
    return Trace(task=f"restock {n} {item} on the fruit shelf", params={"item": item, "count": n},
                 calls=[ToolCall(name="restock", arguments={"item": item, "count": n},
                                 result={"item": item, "stock": n})],
                 outcome=Outcome(success=True, verifier="shelf-audit"), **fields)


def as_dict(t: Trace) -> dict:
    body = t.model_dump(mode="json")
    del body["id"], body["created_at"]  # a file's trace: no id
    return body


def test_a_traces_id_is_the_hash_of_its_content():
    one, again = trace("pear", 3), trace("pear", 3)
    assert one.id == again.id == one.content_id() == one.identified().id
    assert trace("pear", 4).content_id() != one.content_id()
    failed = one.model_copy(update={"outcome": Outcome(success=False, verifier="shelf-audit")})
    assert failed.content_id() != one.content_id()
    given = trace("pear", 3, id="mine-1")
    assert given.identified().id == "mine-1"  # an id the caller gave is kept


def test_learning_the_same_file_twice_adds_nothing_and_says_duplicate(library, tmp_path):
    items = [as_dict(trace("pear", 3)), as_dict(trace("apple", 2)), as_dict(trace("plum", 5))]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items))
    first = library.learn_many([json.loads(line) for line in path.read_text().splitlines()])
    assert [r.status for r in first] == ["saved", "merged", "merged"]
    name = first[0].skill.name
    before = library.get(name)
    traces_before = len(library.traces(name))
    again = library.learn_many([json.loads(line) for line in path.read_text().splitlines()])
    assert [r.status for r in again] == ["duplicate"] * 3
    assert all(r.duplicate_of == name and "was learned before" in r.reasons[0] for r in again)
    after = library.get(name)
    assert (after.version, after.successes, after.failures) == (before.version, before.successes, 0) == (1, 3, 0)
    assert len(library.traces(name)) == traces_before == 3
    assert len(library.context.store.examples([name])[name]) == 3


def test_a_trace_repeated_within_one_batch_counts_once(library):
    results = library.learn_many([as_dict(trace("pear", 3)), as_dict(trace("pear", 3))])
    assert [r.status for r in results] == ["saved", "duplicate"]
    assert library.get(results[0].skill.name).successes == 1


def test_an_openai_transcript_learned_twice_is_a_duplicate(library):
    transcript = {
        "task": "restock 3 pear on the fruit shelf", "params": {"item": "pear", "count": 3},
        "outcome": {"success": True, "verifier": "shelf-audit"},
        "messages": [
            {"role": "user", "content": "restock 3 pear on the fruit shelf"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {
                "name": "restock", "arguments": json.dumps({"item": "pear", "count": 3})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"item": "pear", "stock": 3})},
        ],
    }
    assert library.learn(transcript).status == "saved"
    assert library.learn(transcript).status == "duplicate"
