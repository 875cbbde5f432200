"""A library kept open in one process, answering fetches over a Unix socket (``skills serve``).

A ``skills fetch`` in a new process pays for importing SQLAlchemy, ChromaDB and torch and for
loading the embedding model: seconds, on every call. ``skills serve`` pays once: it opens the
library, loads the model, and answers fetch and embed requests on a Unix socket in the
library folder (``serve.sock``; a shared deployment names one with ``--socket`` /
``SKILLS_SERVE_SOCKET``). ``skills fetch`` asks the socket first and falls back to opening the
library itself when nothing answers, so the server is an optimization, never a requirement.
``skills approve`` / ``promote`` send their decisions the same way (ops ``approve`` /
``promote``, :func:`decide_answer`): the server keeps SQLAlchemy and the library open, and
makes each decision as the command would (the peer is the same OS user, checked below).

The client side of this module imports only the standard library (``json``, ``os``,
``socket``): that is what makes a served fetch cost a Python start-up and one round trip.

Security: the socket is created with mode 0600 inside the library folder (a folder the user
already owns); the server refuses a peer whose uid (``SO_PEERCRED``) is not its own, and the
client refuses a socket file owned by another user. It is never a TCP port. Each request is one
JSON line of at most :data:`MAX_REQUEST_BYTES`, answered by one JSON line; a request names the
deployment it expects (folder or URLs) and the tenant, and a server serving another deployment
answers ``wrong_library`` so the client falls back rather than fetching from the wrong store.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from pathlib import Path
from typing import Any, Mapping

#: the socket's file name in a library folder
SOCKET_NAME = "serve.sock"
#: names a socket for a shared deployment (no folder) or overrides the folder's
SOCKET_ENV = "SKILLS_SERVE_SOCKET"
#: a request line longer than this is refused (a fetch's task text is far shorter)
MAX_REQUEST_BYTES = 1024 * 1024
#: how long a client waits for the answer before falling back (seconds)
CLIENT_TIMEOUT = 30.0
#: at most this many texts per embed request (and half of MAX_REQUEST_BYTES)
EMBED_CHUNK = 256
#: Linux's limit on a Unix socket path (``sun_path``), with its terminating NUL
MAX_SOCKET_PATH = 107


class ServeError(RuntimeError):
    """The server cannot start: the socket path is unusable or another server holds it."""


def socket_path(folder: Path | str | None) -> Path | None:
    """Where the socket of the library in ``folder`` lives: ``SKILLS_SERVE_SOCKET`` when set,
    else ``folder/serve.sock``; None for a shared deployment without either."""
    configured = os.environ.get(SOCKET_ENV)
    if configured:
        return Path(configured)
    if folder is None:
        return None
    return Path(folder) / SOCKET_NAME


def deployment_key(folder: Path | str | None, records: str | None = None, index: str | None = None) -> dict[str, Any]:
    """What a request and a server compare to be sure they mean the same library."""
    return {"folder": None if folder is None else str(Path(folder).resolve()), "records": records or None,
            "index": index or None}


# -- client (standard library only) -----------------------------------------------------------------


def request(path: Path | str | None, message: Mapping[str, Any], *,
            timeout: float = CLIENT_TIMEOUT) -> dict[str, Any] | None:
    """Send one request to the server at ``path``; its answer, or None when no server answers
    there (no socket file, nobody listening, a socket owned by another user, a broken reply):
    the caller then does the work itself."""
    if path is None:
        return None
    path = Path(path)
    try:
        info = path.lstat()
    except OSError:
        return None
    import stat

    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(str(path))
        client.sendall(json.dumps(dict(message)).encode("utf-8") + b"\n")
        reply = _read_line(client, limit=64 * MAX_REQUEST_BYTES)
    except OSError:
        return None
    finally:
        client.close()
    if reply is None:
        return None
    try:
        answer = json.loads(reply)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


class ServedEmbedder:
    """An :class:`~skill_library.embeddings.Embedder` that asks the ``skills serve`` of the
    same library to embed (its model is loaded already) and falls back to ``fallback`` (which
    loads the model in this process on first use) when no server answers, it serves another
    deployment, or its model is not ``fallback``'s. The first failure ends the asking: this
    process then embeds by itself. What ``skills ui``, ``skills serve-mcp`` and the commands
    that embed use (docs/serving.md)."""

    def __init__(self, fallback: Any, path: Path | str, key: Mapping[str, Any]) -> None:
        self.fallback = fallback
        self.path = Path(path)
        self.key = dict(key)
        #: whether the server may still be asked (False after its first failure)
        self.asking = True
        #: how many embed calls the server answered (for tests and benchmarks)
        self.served = 0

    @property
    def model_name(self) -> str:
        """The fallback's model identity (the server must have the same)."""
        return str(self.fallback.model_name)

    def embed(self, texts: Any) -> list[list[float]]:
        """Normalized vectors of ``texts``, from the server when it answers, else the fallback."""
        texts = list(texts)
        if not texts:
            return []
        if self.asking:
            served: list[list[float]] = []
            for chunk in _chunks(texts):
                part = self._ask(chunk)
                if part is None:
                    self.asking = False
                    break
                served.extend(part)
            else:
                self.served += 1
                return served
        result: list[list[float]] = self.fallback.embed(texts)
        return result

    def _ask(self, texts: list[str]) -> list[list[float]] | None:
        answer = request(self.path, {"op": "embed", "texts": texts, "deployment": self.key,
                                     "model": self.model_name})
        vectors = answer.get("vectors") if answer is not None and answer.get("ok") else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            return None
        if not all(isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v) for v in vectors):
            return None
        return [[float(x) for x in v] for v in vectors]


def _chunks(texts: list[str]) -> list[list[str]]:
    """``texts`` in requests of at most :data:`EMBED_CHUNK` texts and half of
    :data:`MAX_REQUEST_BYTES` of JSON each (a longer single text goes alone, and a server
    refusing it makes the caller embed by itself)."""
    chunks: list[list[str]] = [[]]
    size = 0
    for text in texts:
        length = len(json.dumps(text)) + 2
        if chunks[-1] and (len(chunks[-1]) >= EMBED_CHUNK or size + length > MAX_REQUEST_BYTES // 2):
            chunks.append([])
            size = 0
        chunks[-1].append(text)
        size += length
    return chunks


def _read_line(connection: socket.socket, *, limit: int) -> bytes | None:
    """Bytes up to the first newline (None: closed first, or longer than ``limit``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


# -- server ---------------------------------------------------------------------------------------


class Server:
    """Serve ``library`` (an open :class:`~skill_library.library.SkillLibrary`) on a Unix
    socket at ``path`` until :meth:`close`. One thread per connection; a tenant's requests use
    ``library.for_tenant(name)``. ``key`` is the deployment the library was opened on
    (:func:`deployment_key`)."""

    def __init__(self, library: Any, path: Path | str, key: Mapping[str, Any]) -> None:
        self.library = library
        self.path = Path(path)
        self.key = dict(key)
        if len(os.fsencode(str(self.path))) > MAX_SOCKET_PATH:
            raise ServeError(f"socket path {self.path} is longer than {MAX_SOCKET_PATH} bytes; "
                             f"set {SOCKET_ENV} to a shorter path")
        if request(self.path, {"op": "ping"}, timeout=2.0) is not None:
            raise ServeError(f"another server already answers on {self.path}; stop it first")
        try:
            if self.path.is_socket():  # left by a server that died: nobody answers on it
                self.path.unlink()
            elif self.path.exists():
                raise ServeError(f"{self.path} exists and is not a socket; remove it or set {SOCKET_ENV}")
        except OSError as exc:
            raise ServeError(f"cannot use {self.path}: {exc.strerror or exc}") from exc
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket file is created 0600: only this user may connect
        try:
            self._socket.bind(str(self.path))
        except OSError as exc:
            self._socket.close()
            raise ServeError(f"cannot listen on {self.path}: {exc.strerror or exc}") from exc
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._socket.listen(16)
        self._closed = threading.Event()
        self._lock = threading.Lock()  # tenant views are made one at a time
        self.requests = 0
        #: how many embed requests were answered with vectors
        self.embedded = 0

    def serve_forever(self) -> None:
        """Accept connections until :meth:`close` (each answered on its own thread)."""
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                if self._closed.is_set():
                    return
                raise
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests, the console, the MCP server)."""
        thread = threading.Thread(target=self.serve_forever, name="skills-serve", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Stop accepting and remove the socket file."""
        self._closed.set()
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()
        try:
            self.path.unlink()
        except OSError:
            pass

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # one connection: one request line, one answer line
    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(CLIENT_TIMEOUT)
            try:
                if not _same_user(connection):
                    connection.sendall(_line({"ok": False, "error": "refused: another user"}))
                    return
                raw = _read_line(connection, limit=MAX_REQUEST_BYTES)
                if raw is None:
                    connection.sendall(_line({"ok": False, "error": f"a request is one JSON line of at most "
                                                                    f"{MAX_REQUEST_BYTES} bytes"}))
                    return
                connection.sendall(_line(self.handle(raw)))
            except OSError:
                return

    def handle(self, raw: bytes) -> dict[str, Any]:
        """The answer to one request line (never raises: errors are answers)."""
        try:
            message = json.loads(raw)
        except ValueError as exc:
            return {"ok": False, "error": f"the request is not JSON: {exc}"}
        if not isinstance(message, dict):
            return {"ok": False, "error": "the request must be a JSON object"}
        op = message.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "deployment": self.key, "requests": self.requests,
                    "model": getattr(self.library.embedder, "model_name", None)}
        if message.get("deployment") != self.key:
            return {"ok": False, "wrong_library": True,
                    "error": f"this server serves {self.key}, not {message.get('deployment')}"}
        self.requests += 1
        try:
            library = self._tenant(message.get("tenant"))
            if op == "fetch":
                return {"ok": True, **fetch_answer(library, message)}
            if op in DECISIONS:
                return {"ok": True, "decisions": decide_answer(library, op, message)}
            if op == "embed":
                model = getattr(library.embedder, "model_name", None)
                if message.get("model") not in (None, model):
                    return {"ok": False, "wrong_model": True,
                            "error": f"this server embeds with {model}, not {message.get('model')}"}
                texts = message.get("texts")
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    return {"ok": False, "error": "embed needs 'texts', a list of strings"}
                vectors = [list(map(float, v)) for v in library.embedder.embed(texts)]
                self.embedded += 1
                return {"ok": True, "vectors": vectors}
        except Exception as exc:  # noqa: BLE001 - an error is the client's answer, the server goes on
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": False, "unknown_op": True, "error": f"unknown op {op!r} (ping, fetch, embed, approve or promote)"}

    def _tenant(self, tenant: Any) -> Any:
        if tenant is None:
            return self.library
        if not isinstance(tenant, str):
            raise ValueError("tenant must be a string")
        with self._lock:
            return self.library.for_tenant(tenant)


#: the governance decisions a request may ask for (each version its own audited transition,
#: exactly as SkillLibrary.approve_many / promote_many make them)
DECISIONS = ("approve", "promote")


def decision_json(decision: Any) -> dict[str, Any]:
    """One :class:`~skill_library.governance.bulk.Decision` as JSON: ``name``, ``version``,
    ``error`` and the ``skill`` after the move (:func:`skill_library.serialize.skill_json`)."""
    from skill_library.serialize import skill_json

    return {"name": decision.name, "version": decision.version, "error": decision.error,
            "skill": skill_json(decision.skill) if decision.skill is not None else None}


def decide_answer(library: Any, op: str, message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run one ``approve`` / ``promote`` request on ``library``: ``items`` (names, or
    ``[name, version]`` pairs), ``held`` (approve: every held version instead), ``actor`` and
    ``reason``; the decisions as :func:`decision_json`."""
    raw = message.get("items") or []
    if not isinstance(raw, list):
        raise ValueError(f"{op} needs 'items', a list of names or [name, version] pairs")
    items: list[str | tuple[str, int]] = []
    for item in raw:
        if isinstance(item, str) and item:
            items.append(item)
        elif (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], int)
              and not isinstance(item[1], bool)):
            items.append((item[0], item[1]))
        else:
            raise ValueError(f"{op}: {item!r} is neither a name nor a [name, version] pair")
    actor, reason, held = message.get("actor"), message.get("reason") or "", message.get("held") is True
    if actor is not None and not isinstance(actor, str) or not isinstance(reason, str):
        raise ValueError(f"{op}: 'actor' and 'reason' must be strings")
    if op == "approve":
        decisions = library.approve_many(None if held else items, actor=actor, reason=reason)
    else:
        decisions = library.promote_many(items, actor=actor)
    return [decision_json(d) for d in decisions]


#: fetch options a request may carry, with their JSON types
FETCH_OPTIONS: dict[str, tuple[type, ...]] = {
    "k": (int,), "min_reliability": (int, float), "min_similarity": (int, float), "subject": (str,),
    "state": (str,), "session": (str,), "cohort": (str,), "explain": (bool,), "plan": (bool,),
}


def fetch_answer(library: Any, message: Mapping[str, Any]) -> dict[str, Any]:
    """Run one fetch request on ``library``: the JSON the CLI prints (``matches`` as
    :func:`skill_library.serialize.match_json`, the result's flags and reason)."""
    from skill_library.serialize import match_json

    task = message.get("task")
    if not isinstance(task, str):
        raise ValueError("fetch needs 'task', a string")
    options: dict[str, Any] = {}
    for name, kinds in FETCH_OPTIONS.items():
        value = message.get(name)
        if value is None:
            continue
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            raise ValueError(f"fetch option {name!r} has the wrong type")
        options[name] = value
    tools = message.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ValueError("fetch option 'tools' must be a list of names")
        options["tools"] = tools
    result = library.fetch(task, **options)
    return {"matches": [match_json(m) for m in result], "abstained": bool(getattr(result, "abstained", False)),
            "ambiguous": bool(getattr(result, "ambiguous", False)), "reason": getattr(result, "reason", None)}


def _same_user(connection: socket.socket) -> bool:
    """Whether the peer runs as this process's user (Linux ``SO_PEERCRED``; elsewhere the
    socket file's mode 0600 is the guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    credentials = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid == os.getuid()


def _line(data: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(data), default=str).encode("utf-8") + b"\n"
