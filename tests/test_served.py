"""skill_library.served: a library kept open, answering fetches on a Unix socket (real library,
real model, real sockets)."""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest

from skill_library import served
from skill_library.models import Skill


def _skill(name: str, when: str) -> Skill:
    code = f'def {name}(item: str) -> dict:\n    """{when}"""\n    return {{"item": item}}\n'
    return Skill.from_function(code, when=when)


@pytest.fixture
def server(library):
    library.add(_skill("water_plants", "Water the plants in the garden."), verified=True)
    library.add(_skill("order_paper", "Order printer paper for the office."), verified=True)
    key = served.deployment_key(library.path)
    with served.Server(library, served.socket_path(library.path), key) as srv:
        srv.start()
        yield srv


def _fetch(server, task: str, **options):
    return served.request(server.path, {"op": "fetch", "deployment": server.key, "task": task, **options})


def test_a_served_fetch_answers_what_the_library_answers(server, library):
    answer = _fetch(server, "the garden plants need water", k=2, min_reliability=0.0)
    direct = library.fetch("the garden plants need water", k=2, min_reliability=0.0)
    assert answer["ok"] is True
    assert [m["name"] for m in answer["matches"]] == [m.skill.name for m in direct]
    assert answer["matches"][0]["name"] == "water_plants"
    assert answer["matches"][0]["similarity"] == pytest.approx(direct[0].similarity, abs=1e-6)
    assert answer["abstained"] == direct.abstained and answer["ambiguous"] == direct.ambiguous


def test_the_socket_is_private_to_its_user(server):
    mode = stat.S_IMODE(os.stat(server.path).st_mode)
    assert stat.S_ISSOCK(os.stat(server.path).st_mode) and mode == 0o600


def test_a_request_for_another_deployment_is_refused_so_the_client_falls_back(server, tmp_path):
    answer = served.request(server.path, {"op": "fetch", "deployment": served.deployment_key(tmp_path / "other"),
                                          "task": "water the plants"})
    assert answer["ok"] is False and answer["wrong_library"] is True


def test_bad_requests_are_answers_naming_the_problem(server):
    assert "needs 'task'" in _fetch(server, None)["error"]  # type: ignore[arg-type]
    assert "wrong type" in _fetch(server, "water", k="two")["error"]
    assert "unknown op 'drop'" in served.request(server.path, {"op": "drop", "deployment": server.key})["error"]
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(str(server.path))
    raw.sendall(b"not json\n")
    reply = json.loads(raw.makefile().readline())
    raw.close()
    assert reply["ok"] is False and "not JSON" in reply["error"]
    # the server survives all of it
    assert _fetch(server, "order paper", min_reliability=0.0)["matches"][0]["name"] == "order_paper"


def test_an_oversized_request_is_refused_without_reading_it_all(server):
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.connect(str(server.path))
    try:
        raw.sendall(b"x" * (served.MAX_REQUEST_BYTES + 70000))
    except OSError:
        pass  # the server may close before everything is sent
    reply = json.loads(raw.makefile().readline())
    raw.close()
    assert reply["ok"] is False and "at most" in reply["error"]


def test_no_server_means_none_and_the_caller_does_the_work(tmp_path):
    assert served.request(tmp_path / "serve.sock", {"op": "ping"}) is None
    assert served.request(None, {"op": "ping"}) is None
    (tmp_path / "plain").write_text("not a socket")
    assert served.request(tmp_path / "plain", {"op": "ping"}) is None


def test_a_stale_socket_is_replaced_and_a_live_one_is_not(library, server):
    with pytest.raises(served.ServeError, match="already answers"):
        served.Server(library, server.path, server.key)
    stale = library.path / "stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()  # the file stays, nobody listens
    with served.Server(library, stale, server.key) as again:
        again.start()
        assert served.request(stale, {"op": "ping"})["ok"] is True
    assert not stale.exists()


def test_unusable_socket_paths_are_one_clear_error(library, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("mine")
    with pytest.raises(served.ServeError, match="not a socket"):
        served.Server(library, taken, {})
    with pytest.raises(served.ServeError, match="longer than"):
        served.Server(library, tmp_path / ("s" * 120), {})


def test_the_environment_names_a_socket_for_a_shared_deployment(monkeypatch, tmp_path):
    assert served.socket_path(None) is None
    assert served.socket_path(tmp_path) == tmp_path / served.SOCKET_NAME
    monkeypatch.setenv(served.SOCKET_ENV, str(tmp_path / "shared.sock"))
    assert served.socket_path(None) == tmp_path / "shared.sock"


def test_tenants_are_served_their_own_records(server, library):
    acme = library.for_tenant("acme")
    acme.add(_skill("book_flight", "Book a flight for a business trip."), verified=True)
    mine = _fetch(server, "book a flight for the trip", min_reliability=0.0, tenant="acme")
    root = _fetch(server, "book a flight for the trip", min_reliability=0.0)
    assert mine["matches"][0]["name"] == "book_flight"
    assert "book_flight" not in [m["name"] for m in root["matches"]]


def test_skills_fetch_asks_the_server_and_prints_what_it_found(server, library):
    from typer.testing import CliRunner

    from skill_library.cli import app

    before = server.requests
    result = CliRunner().invoke(app, ["fetch", "the garden plants need water", "--min-reliability", "0", "--json"],
                                env={"SKILLS_DIR": str(library.path)})
    assert result.exit_code == 0, result.output
    assert server.requests == before + 1  # answered by the server, not by a library opened here
    assert json.loads(result.output)[0]["name"] == "water_plants"
    shown = CliRunner().invoke(app, ["fetch", "water the plants", "--min-reliability", "0"],
                               env={"SKILLS_DIR": str(library.path)})
    assert shown.exit_code == 0 and "water_plants" in shown.output and server.requests == before + 2
    bad = CliRunner().invoke(app, ["fetch", "water the plants", "--session", "s1", "--cohort", "c"],
                             env={"SKILLS_DIR": str(library.path), "SKILLS_TENANT": "bad tenant!"})
    assert bad.exit_code != 0 and "Traceback" not in bad.output


def test_skills_fetch_without_a_server_does_the_work_itself(library):
    from typer.testing import CliRunner

    from skill_library.cli import app

    library.add(_skill("water_plants", "Water the plants in the garden."), verified=True)
    result = CliRunner().invoke(app, ["fetch", "water the plants", "--min-reliability", "0", "--json"],
                                env={"SKILLS_DIR": str(library.path)})
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["name"] == "water_plants"


class _RenamedModel:
    """The test session's real embedder under another model identity (named so: a server
    must refuse to embed for a model it does not have)."""

    def __init__(self, embedder):
        self.inner = embedder

    @property
    def model_name(self) -> str:
        return "another-model@0000"

    def embed(self, texts):
        return self.inner.embed(texts)


def test_a_served_embedder_gets_the_servers_vectors_in_chunks(server, library):
    texts = [f"water bed number {i}" for i in range(served.EMBED_CHUNK + 3)]
    client = served.ServedEmbedder(library.embedder, server.path, server.key)
    before = server.requests
    vectors = client.embed(texts)
    assert server.requests == before + 2  # two chunks, both answered by the server
    assert client.served == 1 and client.asking is True
    direct = library.embedder.embed(texts[:2] + texts[-1:])
    for got, want in zip(vectors[:2] + vectors[-1:], direct):
        assert got == pytest.approx(want, abs=1e-6)
    assert len(vectors) == len(texts) and client.embed([]) == []


def test_embed_requests_stay_within_the_request_limit():
    long = "x" * (served.MAX_REQUEST_BYTES // 3)
    chunks = served._chunks(["a", long, long, "b", *["c"] * (served.EMBED_CHUNK + 1)])
    assert [len(c) for c in chunks] == [2, served.EMBED_CHUNK, 3]  # by size, then by count
    assert all(len(json.dumps(c)) < served.MAX_REQUEST_BYTES for c in chunks)
    assert sum(chunks, []) == ["a", long, long, "b", *["c"] * (served.EMBED_CHUNK + 1)]


def test_a_server_of_another_model_is_refused_and_the_embedder_falls_back(server, library):
    answer = served.request(server.path, {"op": "embed", "deployment": server.key, "texts": ["water"],
                                          "model": "another-model@0000"})
    assert answer["ok"] is False and answer["wrong_model"] is True and "another-model" in answer["error"]
    client = served.ServedEmbedder(_RenamedModel(library.embedder), server.path, server.key)
    vectors = client.embed(["water the plants"])
    assert client.asking is False and client.served == 0  # this process embedded it, and asks no more
    assert vectors[0] == pytest.approx(library.embedder.embed(["water the plants"])[0], abs=1e-6)


def test_a_served_embedder_with_no_server_embeds_by_itself(library, tmp_path):
    stale = tmp_path / "serve.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(stale))
    listener.close()  # a socket file nobody listens on (a server that died)
    client = served.ServedEmbedder(library.embedder, stale, served.deployment_key(library.path))
    assert client.embed(["order paper"])[0] == pytest.approx(library.embedder.embed(["order paper"])[0], abs=1e-6)
    assert client.asking is False and client.served == 0


def test_cli_commands_that_embed_use_the_running_server(server, library, tmp_path):
    from typer.testing import CliRunner

    from skill_library.cli import app
    from skill_library.cli._common import served_embedder

    assert isinstance(served_embedder(library.path), served.ServedEmbedder)
    assert served_embedder(tmp_path / "no-library-here") is None
    code = tmp_path / "feed.py"
    code.write_text('def feed_fish(tank: str) -> dict:\n    """Feed the fish."""\n    return {"tank": tank}\n')
    before = server.requests
    added = CliRunner().invoke(app, ["add", str(code), "--when", "feed the fish in a tank"],
                               env={"SKILLS_DIR": str(library.path)})
    assert added.exit_code == 0, added.output
    assert server.requests > before  # the new skill's texts were embedded by the server
    assert library.fetch("the fish are hungry", k=1, min_reliability=0.0)[0].skill.name == "feed_fish"


def _skills_subprocess(args: list[str], library, code: str | None = None):
    import subprocess
    import sys

    env = {**os.environ, "SKILLS_DIR": str(library.path)}
    for name in ("SKILLS_RECORDS_URL", "SKILLS_INDEX_URL", "SKILLS_TENANT", "SKILLS_SERVE_SOCKET"):
        env.pop(name, None)
    script = code or "import sys; from skill_library.cli import main; sys.argv[1:] = sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_skills_fetch_with_a_server_running_is_answered_without_typer_and_prints_what_the_full_path_prints(
        server, library):
    from typer.testing import CliRunner

    from skill_library.cli import app

    args = ["fetch", "the garden plants need water", "-k", "2", "--json"]
    before = server.requests
    probe = ("import sys; from skill_library.cli import main; main(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'pydantic', 'sqlalchemy', "
             "'chromadb', 'torch')), file=sys.stderr)")
    quick = _skills_subprocess(args, library, probe)
    assert quick.returncode == 0, quick.stderr
    assert server.requests == before + 1  # the server answered it
    assert quick.stderr.strip().splitlines()[-1] == "[]", quick.stderr  # no typer, pydantic, model, store
    full = CliRunner().invoke(app, args, env={"SKILLS_DIR": str(library.path)})
    assert full.exit_code == 0 and server.requests == before + 2
    assert json.loads(quick.stdout) == json.loads(full.output)
    assert json.loads(quick.stdout)[0]["name"] == "water_plants"
    table = _skills_subprocess(args[:-1], library)
    assert table.returncode == 0 and "water_plants" in table.stdout and server.requests == before + 3


def test_skills_fetch_leaves_the_quick_path_for_anything_but_its_plain_form(server, library, monkeypatch):
    from skill_library.cli import quick

    assert quick._plain_fetch(["fetch", "water the plants", "-k", "3", "--dir", "x", "--json"]) == \
        ("water the plants", 3, quick.Path("x"), True)
    for args in (["fetch"], ["fetch", "  "], ["fetch", "a", "b"], ["fetch", "a", "-k", "0"], ["fetch", "a", "-k"],
                 ["fetch", "a", "--min-reliability", "0"], ["fetch", "a", "--help"], ["list"], []):
        assert quick._plain_fetch(args) is None, args
    monkeypatch.setenv("SKILLS_DIR", str(library.path))
    before = server.requests
    monkeypatch.setenv("SKILLS_TENANT", "bad tenant!")  # the full path words that error
    assert quick.fetch_quickly(["fetch", "water the plants"]) is False and server.requests == before
    monkeypatch.delenv("SKILLS_TENANT")
    monkeypatch.setenv("SKILLS_RECORDS_URL", "sqlite:///elsewhere.db")  # a shared deployment
    assert quick.fetch_quickly(["fetch", "water the plants"]) is False and server.requests == before
    monkeypatch.delenv("SKILLS_RECORDS_URL")
    assert quick.fetch_quickly(["fetch", "water the plants", "--dir", str(library.path / "other")]) is False
    assert quick.fetch_quickly(["fetch", "water the plants", "--json"]) is True and server.requests == before + 1


def test_a_decision_request_with_bad_items_is_an_error_answer_and_changes_nothing(server, library):
    before = [(s.name, s.version, s.status) for s in library.list()]
    for items in ([5], [["water_plants", "1"]], "water_plants", [["water_plants", True]]):
        answer = served.request(server.path, {"op": "approve", "deployment": server.key, "items": items})
        assert answer["ok"] is False and "approve" in answer["error"], items
    answer = served.request(server.path, {"op": "promote", "deployment": server.key, "items": ["nosuch"]})
    [refused] = answer["decisions"]
    assert answer["ok"] is True and refused["skill"] is None and "nosuch" in refused["error"]
    old = served.request(server.path, {"op": "rollback", "deployment": server.key})
    assert old["ok"] is False and old["unknown_op"] is True  # the CLI then decides itself
    assert [(s.name, s.version, s.status) for s in library.list()] == before
