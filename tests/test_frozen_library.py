"""The benchmark's test phase sees a frozen library: runs record nothing, writes raise."""

from __future__ import annotations

import pytest

from benchmarks.frozen_library import FrozenLibrary, FrozenLibraryError
from skill_library.models import Skill

CODE = 'def boom(n: int) -> int:\n    """Fail on purpose."""\n    return explode(n=n)\n'


def explode(n: int) -> int:
    raise RuntimeError(f"exploded {n}")


def test_frozen_view_runs_without_recording(library):
    library.add(Skill.from_function(CODE, when="make something explode", tools=["explode"]), verified=True)
    frozen = FrozenLibrary(library)
    assert [m.skill.name for m in frozen.fetch("make it explode", k=1)] == ["boom"]
    run = frozen.run("boom", {"n": 3}, {"explode": explode})
    assert not run.ok and "exploded 3" in run.error.message
    skill = library.get("boom")
    assert (skill.successes, skill.failures) == (1, 0)  # unchanged: nothing recorded
    with pytest.raises(KeyError):
        library.context.store.get_trace(run.trace.id)
    for write in (frozen.learn, frozen.feedback, frozen.add, frozen.retire, frozen.reindex):
        with pytest.raises(FrozenLibraryError, match="frozen"):
            write("boom")
    # the same run through the library itself records the failure and the trace
    recorded = library.run("boom", {"n": 4}, {"explode": explode})
    assert library.get("boom").failures == 1
    assert library.context.store.get_trace(recorded.trace.id).outcome.success is False
