"""learn_many's embedding thread (skill_library.learning.EmbedAhead): the real model's
vectors, each text embedded once, a batch's examples before the next batch's tasks, the
embedder's error raised in the caller's thread, and learn_many's results the same with the
thread as without it (real sandbox, model and index)."""

from __future__ import annotations

import threading

import pytest

from skill_library import learning
from skill_library.models import Outcome, ToolCall, Trace


class Recording:
    """The real embedder, recording each call's texts and thread."""

    def __init__(self, embedder, fail_on: str | None = None) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.calls: list[tuple[list[str], str]] = []
        self.fail_on = fail_on

    def embed(self, texts):
        self.calls.append((list(texts), threading.current_thread().name))
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError(f"cannot embed {self.fail_on!r}")
        return self.embedder.embed(texts)


@pytest.mark.parametrize("threaded", [True, False])
def test_vectors_are_the_models_and_each_text_is_embedded_once(embedder, threaded):
    recording = Recording(embedder)
    texts = [f"cancel order number {n} for the customer" for n in range(20)]
    with learning.EmbedAhead(recording, chunk=8, threaded=threaded) as ahead:
        ahead.submit(texts, (0, 0))
        ahead.submit(texts[:5], (1, 0))  # queued already: nothing more
        got = ahead.get([texts[3], texts[17], "a text nobody queued"])
        again = ahead.get([texts[3]])
    expected = embedder.embed([texts[3], texts[17], "a text nobody queued"])
    for mine, theirs in zip(got, expected):
        assert max(abs(a - b) for a, b in zip(mine, theirs)) < 1e-4
    assert again == got[:1]
    embedded = [t for call, _thread in recording.calls for t in call]
    assert sorted(embedded) == sorted(set(embedded))  # once each
    assert all(len(call) <= 8 for call, _thread in recording.calls)
    names = {thread for _call, thread in recording.calls}
    if threaded:
        assert names == {"skill-library-learn-embed"}
    else:
        assert names == {threading.current_thread().name}


def test_a_batchs_examples_come_before_the_next_batchs_tasks(embedder):
    recording = Recording(embedder)
    gate = threading.Event()
    blocked = Recording(embedder)
    blocked.embed = lambda texts: (gate.wait(), recording.embed(texts))[1]  # type: ignore[method-assign]
    with learning.EmbedAhead(blocked, chunk=4) as ahead:
        ahead.submit(["first task"], (0, 0))
        ahead.submit(["task of the next batch"], (1, 0))
        ahead.submit(["example of the first batch"], (0, 1))
        gate.set()
        ahead.get(["task of the next batch"])
    order = [t for call, _thread in recording.calls for t in call]
    assert order.index("example of the first batch") < order.index("task of the next batch")


def test_the_embedders_error_is_raised_in_the_callers_thread(embedder):
    with learning.EmbedAhead(Recording(embedder, fail_on="bad text")) as ahead:
        ahead.submit(["bad text"], (0, 0))
        with pytest.raises(RuntimeError, match="cannot embed 'bad text'"):
            ahead.get(["bad text"])


def restock(item: str, count: int) -> Trace:
    return Trace(
        task=f"restock {count} {item} in the back store", params={"item": item, "count": count},
        calls=[ToolCall(name="check", arguments={"item": item}, result={"item": item, "stock": 0}),
               ToolCall(name="restock", arguments={"item": item, "count": count}, result={"stock": count})],
        outcome=Outcome(success=True, verifier="audit"),
    )


def test_learn_many_gives_the_same_results_with_and_without_the_thread(tmp_path, embedder, monkeypatch):
    from skill_library import SkillLibrary, settings
    from skill_library.governance import Policy

    monkeypatch.setattr(settings, "LEARN_BATCH", 3)  # several batches, so the lookahead runs
    traces = [restock(item, n + 1) for n, item in enumerate(["apple", "pear", "plum", "fig", "kiwi", "lime", "date"])]
    seen = []
    for threaded in (True, False):
        monkeypatch.setattr(learning, "EMBED_THREAD", threaded)
        with SkillLibrary(tmp_path / f"lib{threaded}", embedder=embedder, policy=Policy(auto_approve="all")) as lib:
            results = lib.learn_many(traces)
            seen.append(([(r.status, r.skill.name if r.skill else None) for r in results],
                         [(s.name, s.version, s.successes) for s in lib.list()],
                         [m.skill.name for m in lib.fetch("restock 4 melons in the back store", k=2)]))
    assert seen[0] == seen[1]
    assert [status for status, _name in seen[0][0]] == ["saved"] + ["merged"] * 6
