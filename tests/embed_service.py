"""The session's embedding model, lent to the other processes a test starts.

Loading all-MiniLM-L6-v2 costs a process about 6 CPU seconds (importing torch and
sentence-transformers, reading the weights); the concurrency tests start dozens of processes
that each open a library and embed a few ``when`` texts. Each pytest worker therefore loads
the real model once (conftest.py's ``embedder``) and serves it on a Unix socket in a private
temporary folder (mode 0700); a process under test embeds through :class:`RemoteEmbedder`,
which imports only the standard library. The vectors are the same model's (JSON carries a
float exactly); the processes still open their own library, record store and index client,
take their own locks and write their own rows, which is what those tests are about.

A process started without the service (no ``SKILLS_TESTS_EMBEDDER`` in its environment) loads
the model itself, as before (:func:`process_embedder`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from pathlib import Path
from typing import Any, Sequence

#: ``SOCKET_PATH<TAB>MODEL_NAME`` of the service of the pytest process that started this one
ENV = "SKILLS_TESTS_EMBEDDER"


class RemoteEmbedder:
    """An embedder that asks the test session's model (picklable: a spawned process gets it)."""

    def __init__(self, path: str, model_name: str) -> None:
        self.path = path
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        return self._model_name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(self.path)
            with sock.makefile("rwb") as stream:
                stream.write(json.dumps(list(texts)).encode() + b"\n")
                stream.flush()
                answer = json.loads(stream.readline())
        if isinstance(answer, dict):
            raise RuntimeError(f"the test session's embedder failed: {answer['error']}")
        return answer


def process_embedder() -> Any:
    """For a process a test started: the session's model through its socket when the
    service runs, else the real model loaded here."""
    served = os.environ.get(ENV)
    if served:
        path, model_name = served.split("\t", 1)
        return RemoteEmbedder(path, model_name)
    from skill_library.embeddings import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(threads=1)


class EmbedService:
    """Serves ``embedder`` on a Unix socket, one thread per connection, until :meth:`close`;
    sets :data:`ENV` so that the processes started meanwhile find it."""

    def __init__(self, embedder: Any) -> None:
        self._folder = tempfile.mkdtemp(prefix="embed-")  # mode 0700; short: sun_path is 107 bytes
        self.path = str(Path(self._folder) / "embed.sock")
        model = embedder

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    texts = json.loads(self.rfile.readline())
                    answer: Any = model.embed(texts)
                except Exception as exc:  # reported to the client, which raises it
                    answer = {"error": f"{type(exc).__name__}: {exc}"}
                try:
                    self.wfile.write(json.dumps(answer).encode() + b"\n")
                except OSError:  # the client was killed meanwhile (a test's SIGKILL)
                    pass

        self._server = socketserver.ThreadingUnixStreamServer(self.path, Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="embed-service", daemon=True)
        self._thread.start()
        self._previous = os.environ.get(ENV)
        os.environ[ENV] = f"{self.path}\t{embedder.model_name}"

    def client(self) -> RemoteEmbedder:
        return RemoteEmbedder(self.path, os.environ[ENV].split("\t", 1)[1])

    def close(self) -> None:
        if self._previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._previous
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._folder, ignore_errors=True)


def caching(embedder_class: type) -> type:
    """A subclass of ``embedder_class`` (SentenceTransformerEmbedder) that remembers the
    vector of each text it embedded: the suite embeds the same task and ``when`` texts in
    test after test (a fetch loop embeds one task hundreds of times). The model is a pure
    function of the text, so a remembered vector is the one the model gave for it; only the
    repeated forward passes go. At most :data:`CACHE_TEXTS` texts are kept (float32, as the
    model computes them; returned as fresh lists of the same floats)."""
    import numpy as np

    class CachingEmbedder(embedder_class):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._vectors: dict[str, Any] = {}
            self._lock = threading.Lock()

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            texts = list(texts)
            if not all(isinstance(t, str) for t in texts):  # the model's own error, unchanged
                return super().embed(texts)
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            if missing:
                fresh = super().embed(missing)
                with self._lock:
                    if len(self._vectors) + len(missing) > CACHE_TEXTS:
                        self._vectors.clear()
                    for text, vector in zip(missing, fresh):
                        self._vectors[text] = np.asarray(vector, dtype=np.float32)
                found = dict(zip(missing, fresh))
            else:
                found = {}
            return [list(found[t]) if t in found else self._vectors[t].tolist() for t in texts]

        def uncached(self) -> Any:
            """This model without the memory, for tests that measure the embedding work
            itself (a benchmark's floor passes embed the same texts twice on purpose)."""
            return _Uncached(self, embedder_class)

    CachingEmbedder.__name__ = CachingEmbedder.__qualname__ = f"Caching{embedder_class.__name__}"
    return CachingEmbedder


#: texts a caching embedder keeps (1.5 kB each for 384 dimensions)
CACHE_TEXTS = 20_000


class _Uncached:
    """A caching embedder's model called directly: every ``embed`` runs the forward pass;
    every other attribute is the caching embedder's."""

    def __init__(self, cached: Any, embedder_class: type) -> None:
        self._cached = cached
        self._embed = embedder_class.embed

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(self._cached, list(texts))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cached, name)
