"""Approving and promoting many versions in one call (issue 25, fast paths): each version is
one audited transition, each refusal is reported on its own, and neither opens the vector
index nor loads the embedding model: the index's next open brings the promoted skills in
(index_sync, ``deferring``) with no rebuild warning. Real records, real Chroma, the real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from skill_library import Skill, SkillLibrary
from skill_library.cli import app
from skill_library.governance import Actor, Policy, library_transition, system_actor
from skill_library.index_sync import DEFERRED_FILE, IndexRebuiltWarning

runner = CliRunner()


def code_of(i: int) -> str:
    return f'def count_{i}(items: list) -> int:\n    """Count the items of list {i}."""\n    return len(items) + {i}\n'


def held_library(folder: Path, embedder, n: int = 3) -> None:
    """``n`` proposed and evaluated versions by alice, waiting for another's approval; the
    index opened once (so it exists and is marked) by an active skill of its own."""
    with SkillLibrary(folder, create=True, embedder=embedder, policy=Policy(auto_approve="never")) as lib:
        lib.actors.add(Actor(id="alice", kind="user", permissions=frozenset({"skill.propose"})), by=None)
        for i in range(n):
            lib.propose(Skill.from_function(code_of(i), when=f"count the items of shopping list {i}"),
                        actor="alice")
            library_transition(lib, f"count_{i}", 1, "evaluated", actor=system_actor(),
                               reason="evaluation passed", evidence={"passed": True})
        assert lib.index.count() == 0


def test_approve_many_and_promote_many_move_each_version_and_report_each_refusal(tmp_path, embedder):
    held_library(tmp_path, embedder)
    with SkillLibrary(tmp_path, embedder=embedder) as lib:
        decisions = lib.approve_many(["count_0", ("count_1", 1), ("count_2", 7), "nosuch"], actor=None,
                                     reason="read it")
        assert [(d.name, d.version, d.done) for d in decisions] == [
            ("count_0", 1, True), ("count_1", 1, True), ("count_2", 7, False), ("nosuch", None, False)]
        assert "no version 7" in decisions[2].error and "nosuch" in decisions[3].error
        assert lib.approve_many(None, actor=None)[0].name == "count_2"  # None: every held version
        promoted = lib.promote_many(["count_0", "count_1", "count_2", "count_0"], actor=None)
        assert [d.done for d in promoted] == [True, True, True, False]
        assert "no version approved to promote" in promoted[3].error
        events = [(e.name, e.to_status, e.reason) for e in lib.audit() if e.to_status in ("approved", "active")]
        assert events == [("count_0", "approved", "read it"), ("count_1", "approved", "read it"),
                          ("count_2", "approved", "approved"), ("count_0", "active", "promoted"),
                          ("count_1", "active", "promoted"), ("count_2", "active", "promoted")]
        assert not hasattr(lib._index, "_index") or lib._index._index is None  # never opened
        assert (tmp_path / "chroma" / DEFERRED_FILE).is_file()
    with SkillLibrary(tmp_path, embedder=embedder) as reader:
        with warnings.catch_warnings():
            warnings.simplefilter("error", IndexRebuiltWarning)  # caught up, not rebuilt
            found = reader.fetch("count the items of shopping list 1", k=3, min_reliability=0.0, abstain=False)
        assert {m.skill.name for m in found} >= {"count_1"}
        assert not (tmp_path / "chroma" / DEFERRED_FILE).exists()
        assert {e.split("#")[0] for e in reader.index.entries()} >= {"count_0", "count_1", "count_2"}


def test_a_stale_deferred_note_is_ignored_and_the_index_checked_as_ever(tmp_path, embedder):
    held_library(tmp_path, embedder, n=1)
    with SkillLibrary(tmp_path, embedder=embedder) as lib:
        lib.approve("count_0", 1, actor=None)
        lib.promote("count_0", 1, actor=None)
    note = tmp_path / "chroma" / DEFERRED_FILE
    data = json.loads(note.read_text())
    note.write_text(json.dumps({**data, "mark": data["mark"] - 1}))  # from another index state
    with SkillLibrary(tmp_path, embedder=embedder) as reader:
        with pytest.warns(IndexRebuiltWarning, match="out of step"):
            found = reader.fetch("count the items of shopping list 0", k=1, min_reliability=0.0, abstain=False)
            assert [m.skill.name for m in found] == ["count_0"]
    assert not note.exists()


PROBE = """
import sys, time
from skill_library.cli import app
started = time.perf_counter()
for args in {commands!r}:
    try:
        app(args, prog_name="skills")
    except SystemExit as exc:
        print("EXIT", exc.code, file=sys.stderr)
heavy = sorted(m for m in ("torch", "sentence_transformers", "chromadb") if m in sys.modules)
# a decision opens the records and governance, nothing of learning or fetch (issue 25 fast paths)
unused = sorted(m for m in ("skill_library.learning", "skill_library.fetching", "skill_library.induction",
                            "skill_library.erasure", "jinja2", "sqlalchemy.dialects.postgresql") if m in sys.modules)
print("UNUSED", unused, file=sys.stderr)
print("HEAVY", heavy, file=sys.stderr)
"""


def test_the_cli_bulk_forms_report_a_line_per_version_and_load_no_model(tmp_path, embedder):
    held_library(tmp_path, embedder)
    env = dict(os.environ, SKILLS_DIR=str(tmp_path))
    commands = [["approve", "--held"], ["promote", "count_0", "count_1", "1", "count_2", "count_9"]]
    done = subprocess.run([sys.executable, "-c", PROBE.format(commands=commands)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines() == [
        "approved count_0 v1 (approved)", "approved count_1 v1 (approved)", "approved count_2 v1 (approved)",
        "promoted count_0 v1 (active)", "promoted count_1 v1 (active)", "promoted count_2 v1 (active)"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: count_9: no skill named 'count_9'"] or (
        len(errors) == 1 and errors[0].startswith("error: count_9:")), done.stderr
    assert "EXIT 0" in done.stderr and "EXIT 1" in done.stderr  # the refusal sets the exit code
    assert "HEAVY []" in done.stderr, done.stderr
    assert "UNUSED []" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_names_the_library_module_lent_before_still_resolve():
    from skill_library import fetching, library
    from skill_library.induction import validation

    assert library.FETCH_OVERFETCH == fetching.FETCH_OVERFETCH
    assert library.PREFETCH_MIN_N == fetching.PREFETCH_MIN_N
    assert library.check_policy is validation.check_policy
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        library.NOT_A_NAME  # noqa: B018


@pytest.mark.parametrize("args, message", [
    (["approve"], "name the skills to approve"),
    (["approve", "2"], "2 is a version, and names none before it"),
    (["approve", "count_0", "--held"], "names or --held, not both"),
    (["promote"], "name the skills to promote"),
])
def test_bulk_forms_with_nothing_named_say_what_to_write(tmp_path, args, message):
    result = runner.invoke(app, args, env={"SKILLS_DIR": str(tmp_path)})
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_batch_learn_names_the_held_skills_and_the_commands_that_approve_them(tmp_path, embedder):
    """With no tool declared, what is learned is held: the batch output says which versions
    and prints the approve and promote commands to copy."""
    traces = tmp_path / "traces.jsonl"
    lines = []
    for bed, litres in (("rose", 3), ("tulip", 2)):
        lines.append(json.dumps({
            "task": f"pour {litres} litres on the {bed} bed", "params": {"bed": bed, "litres": litres},
            "calls": [{"name": "pour", "arguments": {"bed": bed, "litres": litres}, "result": {"poured": litres}}],
            "outcome": {"success": True, "verifier": "soil-sensor"}}))
    traces.write_text("\n".join(lines) + "\n")
    with SkillLibrary(tmp_path / "lib", create=True, embedder=embedder):
        pass
    result = runner.invoke(app, ["learn", str(traces)], env={"SKILLS_DIR": str(tmp_path / "lib")})
    assert result.exit_code == 0, result.output
    hint = [line for line in result.output.splitlines() if line.startswith("held for review: ")]
    assert len(hint) == 1, result.output
    with SkillLibrary(tmp_path / "lib", embedder=embedder) as lib:
        waiting = [(s.name, s.version) for s in lib.review_queue() if s.status == "evaluated"]
    assert waiting
    named = " ".join(f"{n} {v}" for n, v in waiting)
    assert f"`skills approve {named}` (or `skills approve --held`)" in hint[0]
    assert f"then `skills promote {' '.join(n for n, _ in waiting)}`" in hint[0]


def test_approve_and_promote_are_decided_by_a_running_skills_serve_as_here(tmp_path, embedder):
    """With a ``skills serve`` of the library running, ``skills approve`` / ``promote`` send
    the decisions to it (skill_library.served: each version its own audited transition, made
    by the same OS user); they print what the commands print without a server, refusals
    included, and a server of another library is no answer."""
    from skill_library import served

    served_folder, local_folder = tmp_path / "served", tmp_path / "local"
    for folder in (served_folder, local_folder):
        held_library(folder, embedder, n=2)
    outputs = {}
    with SkillLibrary(served_folder, embedder=embedder) as lib:
        with served.Server(lib, served.socket_path(served_folder), served.deployment_key(served_folder)) as server:
            server.start()
            for label, folder in (("served", served_folder), ("local", local_folder)):
                before = server.requests
                env = {"SKILLS_DIR": str(folder)}
                approved = runner.invoke(app, ["approve", "count_0", "count_1", "7", "nosuch", "--reason", "read"],
                                         env=env)
                promoted = runner.invoke(app, ["promote", "count_0", "--json"], env=env)
                outputs[label] = (approved.exit_code, approved.output, promoted.exit_code, promoted.output)
                assert server.requests == before + (2 if label == "served" else 0), label
        audit = [(e.name, e.to_status, e.reason) for e in lib.audit() if e.to_status in ("approved", "active")]
    assert audit == [("count_0", "approved", "read"), ("count_0", "active", "promoted")]
    served_out, local_out = outputs["served"], outputs["local"]
    assert served_out[0] == local_out[0] == 1  # two refusals: exit 1
    assert served_out[1] == local_out[1]
    assert "approved count_0 v1 (approved)" in served_out[1] and "count_1 v7" in served_out[1]
    served_json, local_json = json.loads(served_out[3]), json.loads(local_out[3])
    assert served_json["status"] == local_json["status"] == "active"
    for record in (served_json, local_json):  # two libraries made at two moments
        record["provenance"].pop("created_at")
    assert {k for k in served_json if served_json[k] != local_json[k]} <= {"created_at", "updated_at"}
    with SkillLibrary(local_folder, embedder=embedder) as other:
        assert [e.to_status for e in other.audit() if e.name == "count_0"][-2:] == ["approved", "active"]
