"""The shared index server is never reached unauthenticated (issue 23, servers).

Chroma's Rust server (``chroma run``) has no authenticator, and up to 1.5.9 an
unauthenticated remote-code-execution flaw (CVE-2026-45829). So it binds to loopback and
other hosts reach it through ``skill_library.index_proxy``, which refuses every request
without the bearer token; and the library refuses a non-loopback index URL with no token
instead of warning. Real parts: a real ``chroma run`` behind a real proxy under uvicorn.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time

import httpx
import pytest

from skill_library.index_proxy import MAX_BODY_BYTES, IndexProxy, main
from skill_library.library import SkillLibrary
from skill_library.models import Skill
from skill_library.vector_index import IndexAuthError, InsecureIndexError

TOKEN = secrets.token_urlsafe(32)
WATER = "def water_plants(room):\n    return f'watered {room}'\n"


def _non_loopback_address() -> str | None:
    """An address of this host's own that is not loopback (to serve the proxy on), if any."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        address = probe.getsockname()[0]
        if not address.startswith("127."):
            return address
    return None


@contextlib.contextmanager
def _proxy(upstream: str, host: str = "127.0.0.1"):
    import uvicorn

    with socket.socket() as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(IndexProxy(upstream, TOKEN), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_non_loopback_index_without_a_token_is_refused(tmp_path, monkeypatch, embedder):
    monkeypatch.delenv("SKILLS_INDEX_TOKEN", raising=False)
    for url in ("http://10.1.2.3:8000/lib", "https://chroma.internal/lib", "http://[fd00::5]:8000"):
        with pytest.raises(InsecureIndexError, match="not on loopback and no token is set: set SKILLS_INDEX_TOKEN") \
                as caught:
            SkillLibrary(path=str(tmp_path / "lib"), index=url, embedder=embedder)
        assert len(str(caught.value).splitlines()) == 1
    assert not (tmp_path / "lib").exists() or not any((tmp_path / "lib").iterdir())


def test_without_the_token_no_request_reaches_chroma_with_it_they_pass(chroma_server):
    with _proxy(chroma_server.url) as url, httpx.Client(timeout=30) as http:
        direct = http.get(f"{chroma_server.url}/api/v2/heartbeat")
        assert direct.status_code == 200  # the server itself, on loopback, serves anyone
        refused = {
            "none": http.get(f"{url}/api/v2/heartbeat"),
            "wrong": http.get(f"{url}/api/v2/heartbeat", headers={"Authorization": f"Bearer {TOKEN}x"}),
            "prefix": http.get(f"{url}/api/v2/heartbeat", headers={"Authorization": f"Bearer {TOKEN[:-1]}"}),
            "basic": http.get(f"{url}/api/v2/heartbeat", headers={"Authorization": f"Basic {TOKEN}"}),
            "chroma header": http.get(f"{url}/api/v2/heartbeat", headers={"X-Chroma-Token": TOKEN}),
            "create": http.post(f"{url}/api/v2/tenants", json={"name": "intruder"}),
            "twice": http.get(f"{url}/api/v2/heartbeat", headers=[("Authorization", f"Bearer {TOKEN}"),
                                                                   ("Authorization", "Bearer other")]),
        }
        assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 401)
        assert refused["none"].json() == {"error": "AuthorizationError", "message": "the index server needs the "
                                          "bearer token (SKILLS_INDEX_TOKEN / index_token=)"}
        assert refused["none"].headers["www-authenticate"].startswith("Bearer")
        # nothing the refused requests asked for happened on the server
        assert http.get(f"{chroma_server.url}/api/v2/tenants/intruder").status_code != 200
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get(f"{url}/api/v2/heartbeat", headers=good).status_code == 200
        assert http.get(f"{url}/docs", headers=good).status_code == 404  # only the API is forwarded
        big = http.post(f"{url}/api/v2/heartbeat", headers=good, content=b"x" * (MAX_BODY_BYTES + 1))
        assert big.status_code == 413


def test_a_library_reaches_the_index_through_the_proxy_only_with_the_token(chroma_server, tmp_path, embedder,
                                                                           monkeypatch):
    monkeypatch.delenv("SKILLS_INDEX_TOKEN", raising=False)
    host = _non_loopback_address() or "127.0.0.1"
    name = f"proxied_{secrets.token_hex(4)}"
    with _proxy(chroma_server.url, host=host) as url:
        with SkillLibrary(path=str(tmp_path / "lib"), index=f"{url}/{name}", index_token=TOKEN,
                          embedder=embedder) as lib:
            lib.add(Skill.from_function(WATER, when="water the plants in a room"), verified=True)
            assert lib.fetch("water my plants")[0].skill.name == "water_plants"
        # the collection was written through the proxy, on the real server
        with httpx.Client(timeout=30) as http:
            listed = http.get(f"{chroma_server.url}/api/v2/tenants/default_tenant/databases/default_database/"
                              "collections").json()
        assert name in {c["name"] for c in listed}
        if host != "127.0.0.1":  # beyond loopback, no token is no library
            with pytest.raises(InsecureIndexError):
                SkillLibrary(path=str(tmp_path / "other"), index=f"{url}/{name}", embedder=embedder)
        with SkillLibrary(path=str(tmp_path / "third"), index=f"{url}/{name}", index_token="w" * 40,
                          embedder=embedder) as wrong:
            with pytest.raises(IndexAuthError, match="refused this library's token: set SKILLS_INDEX_TOKEN") \
                    as caught:  # a wrong token is refused by the proxy, at once (no reconnect wait)
                wrong.fetch("water my plants")
        assert "w" * 40 not in str(caught.value) and len(str(caught.value).splitlines()) == 1


def test_the_proxy_guards_only_a_loopback_upstream_with_a_strong_token(monkeypatch, capsys):
    with pytest.raises(ValueError, match="is not loopback"):
        IndexProxy("http://10.0.0.7:8000", TOKEN)
    with pytest.raises(ValueError, match="at least 32 printable characters"):
        IndexProxy("http://127.0.0.1:8000", "short")
    assert TOKEN not in repr(IndexProxy("http://127.0.0.1:8000", TOKEN))
    monkeypatch.delenv("SKILLS_INDEX_TOKEN", raising=False)
    assert main(["--listen", "127.0.0.1:0"]) == 2
    assert "needs a token: set SKILLS_INDEX_TOKEN" in capsys.readouterr().err
