"""Opening and closing a ``SkillLibrary``: checking the options and the folder, opening the
record store and the tenant's context, seeding the tenant (its actors and policy), making
tenant views, and releasing it all. The facade's ``__init__``, ``for_tenant`` and ``close``
are these functions (issue 24: the facade only delegates)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, get_args

from skill_library import telemetry
from skill_library.context import TenantContext
from skill_library.embeddings import Embedder, SentenceTransformerEmbedder
from skill_library.errors import LibraryNotFoundError, RecordStoreCorruptError
from skill_library.governance import ActorRegistry, Policy
from skill_library.record_store import RECORDS_FILE, RecordStore, SQLRecordStore
from skill_library.tenancy import check_tenant

if TYPE_CHECKING:
    from sandbox import Sandbox
    from skill_library.induction import Generalizer
    from skill_library.library import GeneralizerName, SkillLibrary
    from skill_library.patterns import Patterns
    from skill_library.procedures import Procedures
    from skill_library.vector_index import IndexServer


def open_library(
    lib: "SkillLibrary",
    path: str | os.PathLike[str] | None,
    *,
    records: str | None,
    index: str | None,
    index_token: str | None,
    create: bool,
    embedder: Embedder | None,
    min_reliability: float,
    min_similarity: float,
    store: RecordStore | None,
    read_only_tools: Iterable[str],
    trusted_output_tools: Iterable[str],
    generalizer: "GeneralizerName | Generalizer",
    tenant: str,
    policy: Policy | None,
    actor: str | None,
    sandbox: "Sandbox | None" = None,
) -> None:
    """``SkillLibrary.__init__`` (its docstring says what each option does)."""
    from skill_library.library import GeneralizerName

    check_tenant(tenant)
    if sandbox is not None:
        from sandbox import Sandbox

        if not isinstance(sandbox, Sandbox):
            raise TypeError(f"sandbox must be a sandbox.Sandbox, got {type(sandbox).__name__}")
        if sandbox.closed:
            raise ValueError("sandbox= is closed: pass an open sandbox.Sandbox, or none (one starts on first use)")
    from skill_library.governance.actors import check_claimable

    #: the actor of calls made without ``actor=`` (None: the local administrator, the OS user)
    lib.default_actor = check_claimable(actor)
    if not 0.0 <= min_reliability <= 1.0:
        raise ValueError(f"min_reliability must be within [0, 1], got {min_reliability}")
    if isinstance(generalizer, str) and generalizer not in get_args(GeneralizerName):
        raise ValueError(f"generalizer must be 'dataflow' or 'llm', got {generalizer!r}")
    server = index_server(index, index_token)
    shared_records = records is not None and not is_sqlite(records)
    if path is None and (store is None and not shared_records or server is None):
        raise ValueError(
            "SkillLibrary needs a folder, or both records= (a database URL) and index= "
            "(a Chroma server URL) for a shared deployment"
        )
    lib.path = Path(path) if path is not None else None
    if lib.path is not None:
        if store is None and records is None:
            check_folder(lib.path, create, index_in_folder=server is None)
        lib.path.mkdir(parents=True, exist_ok=True)
    lib.min_reliability = min_reliability
    lib.min_similarity = min_similarity
    lib._read_only_arg = frozenset(read_only_tools)
    #: tools whose results and errors come from a system the operator controls and carry
    #: no third-party text: they ground a learned skill's values as the task does
    #: (skill_library.governance.grounding); none by default (not stored)
    lib.trusted_output_tools = frozenset(trusted_output_tools)
    lib.generalizer = generalizer
    lib.embedder = embedder or SentenceTransformerEmbedder()
    if store is None:
        if records is not None:
            store = SQLRecordStore(records, create=create)
        else:
            assert lib.path is not None
            store = SQLRecordStore.in_folder(lib.path, create=create)
    lib._store = store.for_tenant(tenant)
    #: the tenant whose records and index every call of this library uses
    lib.tenant = tenant
    #: where the index lives: a Chroma server (None: the folder's ``chroma``)
    lib.index_server = server
    #: this tenant's record store, stored vectors (each text embedded once per model),
    #: synced index and canary routes (skill_library.context)
    lib.context = TenantContext.open(lib.path, lib._store, lib.embedder, server=server)
    #: the sandbox this tenant's runs use: the one given (already starting), else made on first use
    lib._sandbox = sandbox
    lib._procedures = None
    lib._patterns = None
    lib._closed = False
    #: the library a tenant view was made from (None: this one opened the stores)
    lib._root = None
    lib._views = {}

    #: the actors registered in this library's tenant
    lib.actors = ActorRegistry(lib._store, default=lib.default_actor)
    lib._specs_cache = None
    #: the ``policy=`` given when opening: it also seeds tenants ``for_tenant`` creates
    lib._policy_option = policy
    from skill_library.governance import workflow

    try:
        workflow.open_tenant(lib, policy)
    except BaseException:
        lib.close()
        raise
    telemetry.watch(lib)  # the versions gauge (skill_library.telemetry)


def tenant_view(lib: "SkillLibrary", name: str) -> "SkillLibrary":
    """``SkillLibrary.for_tenant``: the view of tenant ``name`` (made once, kept per name)."""
    from skill_library.library import SkillLibrary

    check_tenant(name)
    root = lib._root or lib
    if name == root.tenant:
        return root
    view = root._views.get(name)
    if view is not None and not view._closed:
        return view
    view = object.__new__(SkillLibrary)
    view.__dict__.update(root.__dict__)
    view._store = root._store.for_tenant(name)
    view.tenant = name
    # the view's own context: its vectors, index, and canary routes (the canary cache
    # and the session memo: a generation number and a (session, skill) key mean nothing
    # across tenants)
    view.context = TenantContext.open(root.path, view._store, root.embedder, server=root.index_server)
    view._sandbox = None
    view._procedures = None
    view._patterns = None
    view._closed = False
    view._root = root
    view._views = {}
    view.actors = ActorRegistry(view._store, default=root.default_actor)
    view._specs_cache = None
    from skill_library.governance import workflow

    # a new tenant gets its actors, and the policy this library was opened with (or the default)
    workflow.open_tenant(view, root._policy_option, check=False)
    root._views[name] = view
    return view


def close_library(lib: "SkillLibrary") -> None:
    """``SkillLibrary.close``: a view releases its sandbox and index client; the root closes
    its views, then its sandbox, index client and record store."""
    if lib._closed:
        return
    lib._closed = True
    if lib._root is not None:
        lib._root._views.pop(lib.tenant, None)
        try:
            if lib._sandbox is not None:
                lib._sandbox.close()  # the tenant's own sandbox
        finally:
            lib.context.index.close()
        return
    for view in list(lib._views.values()):
        view.close()
    try:
        if lib._sandbox is not None:
            lib._sandbox.close()
    finally:
        try:
            lib.context.index.close()
        finally:
            lib._store.close()


#: environment settings read when no token is passed
INDEX_TOKEN_ENV = "SKILLS_INDEX_TOKEN"


def is_sqlite(url: str) -> bool:
    return url.split(":", 1)[0].split("+", 1)[0] == "sqlite"


def index_server(url: str | None, token: str | None) -> "IndexServer | None":
    """The Chroma server of an index URL; refused when it is not loopback and has no token."""
    if url is None:
        return None
    from skill_library.vector_index import IndexServer, check_index_server

    return check_index_server(IndexServer.parse(url, token or os.environ.get(INDEX_TOKEN_ENV) or None))


def check_folder(path: Path, create: bool, *, index_in_folder: bool = True) -> None:
    """Refuse a folder that holds no library (unless ``create``) or lost its records."""
    records = path / RECORDS_FILE
    if records.exists():
        return
    if path.exists() and not path.is_dir():
        raise LibraryNotFoundError(path, "it is a file, not a folder")
    if index_in_folder and (path / "chroma").is_dir():
        raise RecordStoreCorruptError(
            records, "is missing while the folder still has its vector index (chroma/)"
        )
    if not create:
        raise LibraryNotFoundError(
            path, "no such folder" if not path.exists() else f"the folder has no {RECORDS_FILE}"
        )


def location(lib: "SkillLibrary") -> str:
    """``SkillLibrary.location``: its folder, or its records and index URLs (passwords masked)."""
    records = str(getattr(lib._store, "url", "")) if getattr(lib._store, "shared", False) else None
    if records is None and lib.index_server is None:
        return str(lib.path)
    parts = [records or str(lib.path), lib.index_server.url if lib.index_server else "its folder's index"]
    return f"records {parts[0]}, index {parts[1]}"


def procedures(lib: "SkillLibrary") -> "Procedures":
    """``SkillLibrary.procedures``: made on first use, kept on the library."""
    if lib._procedures is None:
        from skill_library.procedures import Procedures

        lib._procedures = Procedures(lib)
    return lib._procedures


def patterns(lib: "SkillLibrary") -> "Patterns":
    """``SkillLibrary.patterns``: made on first use, kept on the library."""
    if lib._patterns is None:
        from skill_library.patterns import Patterns

        lib._patterns = Patterns(lib._store, lib.embedder)
    return lib._patterns


def sandbox(lib: "SkillLibrary") -> "Sandbox":
    """``SkillLibrary.sandbox``: the tenant's own sandbox (its own zygote and workers, so one
    tenant's CPU-bound run never makes another's wait), started on first use."""
    if lib._sandbox is None:
        from sandbox import Sandbox

        lib._sandbox = Sandbox(workers=1)
    return lib._sandbox
