"""Shared fixtures: one embedding model per test session, a fresh library per test."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

_CPU_LOG = os.environ.get("SKILLS_TESTS_CPU_LOG")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With ``SKILLS_TESTS_CPU_LOG=FILE``, log each test's CPU seconds (tests/cpu_profile.py)."""
    if not _CPU_LOG:
        yield
        return
    import cpu_profile

    yield from cpu_profile.measure(cpu_profile.CpuLog(_CPU_LOG), item.nodeid)


def pytest_collection_modifyitems(config, items):
    """Start the tests marked ``slow`` or ``bench`` first: ``make test`` runs on two pytest-xdist
    workers with work stealing, and a 60-120 s test started last would leave one worker idle."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None
               and item.get_closest_marker("bench") is None)


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once for the whole session (per pytest-xdist
    worker), one thread; also lent to the processes the tests start (tests/embed_service.py:
    ``process_embedder()`` there costs no torch import and no model load). It remembers the
    vector of each text it embedded (``caching`` there): the model is a pure function of the
    text, and the suite embeds the same texts in test after test."""
    from embed_service import EmbedService, caching

    from skill_library.embeddings import SentenceTransformerEmbedder

    model = caching(SentenceTransformerEmbedder)(threads=1)
    model.embed(["warm up"])
    service = EmbedService(model)
    yield model
    service.close()


@pytest.fixture
def library(tmp_path, embedder):
    """A new, empty SkillLibrary in a temporary folder (closed after the test).

    It opts in to ``Policy(auto_approve="all")``: these tests exercise learning, fetch and
    runs, in which learned skills activate; governance tests (tests/test_governance_*.py)
    open libraries with the default, fail-closed policy."""
    from skill_library.governance import Policy
    from skill_library.library import SkillLibrary

    lib = SkillLibrary(tmp_path / "lib", embedder=embedder, policy=Policy(auto_approve="all"))
    yield lib
    lib.close()


# -- the shared deployment: real PostgreSQL and Chroma servers, started once per session ---
def _stop_on_exit(server) -> None:
    """Stop ``server`` even when the session ends abnormally: at interpreter exit, and on
    SIGTERM (a CI timeout), which would otherwise skip the fixtures' teardown."""
    import atexit
    import signal

    atexit.register(server.stop)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def _terminate(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, _terminate)


def _serve(server_class, missing):
    """Start a throwaway server for the session and stop it at the end, whatever the tests
    did. Without its binaries it fails under ``make test`` and CI and is skipped, with the
    reason, by a bare pytest (tests/missing_parts.py)."""
    from missing_parts import skip_or_fail

    reason = missing()
    if reason:
        skip_or_fail(reason)
    server = server_class()
    _stop_on_exit(server)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL 15 cluster on a loopback port (see :func:`_serve`)."""
    from benchmarks.local_servers import PostgresServer, postgres_missing

    for server in _serve(PostgresServer, postgres_missing):
        if _CPU_LOG:  # the cluster daemonizes (pg_ctl): count its CPU too
            import cpu_profile

            cpu_profile.extra_roots.append(int((server.data / "postmaster.pid").read_text().split()[0]))
        yield server


@pytest.fixture(scope="session")
def chroma_server():
    """A Chroma server (`chroma run`) on a loopback port, restartable on the same data."""
    from benchmarks.local_servers import ChromaServer, chroma_missing

    yield from _serve(ChromaServer, chroma_missing)


class Deployment:
    """Where a test's library lives: a folder, or a fresh database plus a fresh collection."""

    def __init__(self, kind: str, spec: dict) -> None:
        self.kind = kind
        self.spec = spec  # SkillLibrary keyword arguments; picklable for spawned workers

    def open(self, embedder=None, **options):
        """The library of this deployment (opting in to auto-approval, as ``library`` does)."""
        from skill_library.governance import Policy
        from skill_library.library import SkillLibrary

        options.setdefault("policy", Policy(auto_approve="all"))
        return SkillLibrary(**self.spec, embedder=embedder, **options)


_DEPLOYMENTS = iter(range(1, 10**6))


def _shared_deployment(request) -> Deployment:
    pg = request.getfixturevalue("pg_server")
    chroma = request.getfixturevalue("chroma_server")
    name = f"t{os.getpid()}_{next(_DEPLOYMENTS)}"
    return Deployment("shared", {"records": pg.create_database(name), "index": f"{chroma.url}/{name}"})


@pytest.fixture(params=["folder", "shared"])
def deployment(request, tmp_path):
    """Each test that takes it runs twice: on a library folder and on PostgreSQL + Chroma."""
    if request.param == "folder":
        return Deployment("folder", {"path": str(tmp_path / "lib")})
    return _shared_deployment(request)


@pytest.fixture
def shared(request):
    """A fresh shared deployment only: a new database and a new collection on the session's servers."""
    return _shared_deployment(request)
