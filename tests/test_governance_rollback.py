"""Rollback under load (issue 10): while 4 processes fetch, a rollback commits; no fetch
that starts after it returns the rolled-back version, and no fetch ever returns a draft.

The fetching processes are real processes on the same library folder (forked from the
session's preloaded forkserver, tests/processes.py, so that each does not import the library
anew). They embed nothing: the parent embeds the task with the real model and hands them its
vector (an embedder that returns it), so they do not each load the model on a 2-core machine."""

from __future__ import annotations

import json
import time
from pathlib import Path

from skill_library import Skill, SkillLibrary
from skill_library.governance.actors import os_user
from tests.processes import worker_context

TASK = "count the votes of the club election"
CODE = '''def tally_votes(ballots: list) -> dict:
    """Count the votes of a list of ballots."""
    counts = {}
    for ballot in ballots:
        counts[ballot] = counts.get(ballot, 0) + 1
    return counts
'''


class Fixed:
    """An embedder that returns one vector, the task's, for any text."""

    def __init__(self, vector: list[float], model_name: str) -> None:
        self.vector, self.model_name = vector, model_name

    def embed(self, texts):
        return [self.vector for _ in texts]


def _fetch_until_stopped(folder: str, vector_file: str, out_file: str, stop_file: str, model: str) -> None:
    """A fetching process: fetch, log ``[started_ns, versions]``, until ``stop_file`` exists."""
    embedder = Fixed(json.loads(Path(vector_file).read_text()), model)
    with SkillLibrary(folder, embedder=embedder, create=False) as lib, open(out_file, "w") as out:
        while not Path(stop_file).exists():
            started = time.monotonic_ns()
            got = [m.skill.version for m in lib.fetch("x", k=3, min_reliability=0, min_similarity=-1)
                   if m.skill.name == "tally_votes"]
            out.write(json.dumps([started, got]) + "\n")
            out.flush()


PROCESSES = 4


def test_rollback_while_four_processes_fetch_never_serves_a_draft_or_the_rolled_back_version(tmp_path, embedder):
    folder = tmp_path / "lib"
    admin = os_user()
    with SkillLibrary(folder, embedder=embedder) as lib:
        lib.add(Skill.from_function(CODE, when="count the votes of an election"))
        lib.add(Skill.from_function(CODE.replace("    return counts", "    return dict(counts)"),
                                    when="count the votes of an election"))
        lib.propose(Skill.from_function(CODE.replace("    return counts", "    return {**counts}"),
                                        when="count the votes of an election"), actor=admin)
        assert [s.status for s in lib.history("tally_votes")] == ["superseded", "active", "draft"]
        vector_file = tmp_path / "vector.json"
        vector_file.write_text(json.dumps([float(x) for x in embedder.embed([TASK])[0]]))
        stop = tmp_path / "stop"
        outs = [tmp_path / f"fetch{n}.jsonl" for n in range(PROCESSES)]
        context = worker_context()
        procs = [context.Process(target=_fetch_until_stopped, args=(str(folder), str(vector_file), str(out),
                                                                   str(stop), embedder.model_name))
                 for out in outs]
        for proc in procs:
            proc.start()
        try:
            deadline = time.monotonic() + 120
            while not all(o.exists() and o.read_text().count("\n") >= 5 for o in outs):
                assert time.monotonic() < deadline, "the fetchers did not start"
                assert all(p.is_alive() for p in procs), "a fetcher died"
                time.sleep(0.1)
            back = lib.rollback("tally_votes", actor=admin)
            committed = time.monotonic_ns()
            assert back.version == 1
            deadline = time.monotonic() + 120
            while not all(sum(json.loads(line)[0] > committed for line in o.read_text().splitlines()) >= 5
                          for o in outs):
                assert time.monotonic() < deadline, "the fetchers stopped fetching"
                time.sleep(0.1)
        finally:
            stop.touch()
            for proc in procs:
                proc.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs)
    before, after = [], []
    for out in outs:
        for line in out.read_text().splitlines():
            started, got = json.loads(line)
            (after if started > committed else before).append(got)
    assert all(3 not in got for got in before + after)  # the draft: never
    assert before and all(got in ([2], [1], []) for got in before)  # [] / [1]: during the rollback
    assert before[0] == [2]
    assert after and all(got == [1] for got in after)  # never v2 once the rollback committed
