"""What every command shares: options, opening the library, one error mapper, output.

Exit codes: 0 done; 1 a library error (unknown skill, a skill called wrongly, bad
input); 2 bad usage (click's own code) or a library folder that cannot be used (none
there, damaged records, newer schema); 3 refused (not added, not learned); 4 the skill
ran and failed. The library's own error types, and the plain ValueError with which it
refuses an argument, become one-line messages, as do usage errors (:class:`OneLineErrors`):
anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Optional, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from skill_library.cli.quick import DEFAULT_DIR as DEFAULT_DIR  # the settings every command shares
from skill_library.cli.quick import INDEX_URL_ENV as INDEX_URL_ENV
from skill_library.cli.quick import RECORDS_URL_ENV as RECORDS_URL_ENV
from skill_library.cli.quick import console as console
from skill_library.errors import (
    IndexCorruptError,
    IndexUnavailableError,
    LibraryNotFoundError,
    RecordsBehindIndexError,
    RecordStoreCorruptError,
    RecordStoreUnavailableError,
    SchemaVersionError,
    SkillLibraryError,
    SkillNotFoundError,
)
from skill_library.tenancy import TENANT_ENV as TENANT_ENV  # re-exported for the root option
from skill_library.tenancy import tenant_problem

if TYPE_CHECKING:
    from pydantic import ValidationError

    from sandbox import Limits
    from skill_library.library import SkillLibrary
    from skill_library.models import Match, Skill, SkillRun, Trace

# Output is literal: skill names, `when` texts, file names and error messages hold user text, so
# a "[/x]" in them must print as it is, never be read as rich markup (styles go through Text).
err_console = Console(stderr=True, soft_wrap=True, markup=False)  # one-line errors, never wrapped


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain and ``(text, style)`` parts, none of it read as markup."""
    return Text.assemble(*parts)

EXIT_ERROR = 1
EXIT_UNUSABLE = 2
EXIT_REFUSED = 3
EXIT_RUN_FAILED = 4


#: the deployment, tenant and actor chosen by the root options for this invocation (None: the
#: folder's own, the default tenant)
deployment: dict[str, str | None] = {"records": None, "index": None, "tenant": None, "actor": None}
#: longest piece of user input (an argument, a value) quoted in a message
MAX_QUOTED_CHARS = 200

#: library error type -> exit code, most specific first (the rest: EXIT_ERROR)
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (LibraryNotFoundError, EXIT_UNUSABLE),
    (RecordStoreCorruptError, EXIT_UNUSABLE),
    (SchemaVersionError, EXIT_UNUSABLE),
    (IndexCorruptError, EXIT_UNUSABLE),
    (RecordsBehindIndexError, EXIT_UNUSABLE),
    (RecordStoreUnavailableError, EXIT_UNUSABLE),
    (IndexUnavailableError, EXIT_UNUSABLE),
    (SkillLibraryError, EXIT_ERROR),
)


def is_validation_error(exc: BaseException) -> bool:
    """Whether ``exc`` is pydantic's ValidationError (a model built from the user's input),
    without importing pydantic: none can have been raised if it is not imported yet."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)

#: every status a skill version can have (``skill_library.models.SkillStatus``, which a test
#: compares this with: the CLI builds its options without importing the models)
SKILL_STATUSES = ("draft", "evaluated", "approved", "canary", "active", "superseded", "retired",
                  "rejected", "quarantined", "suspended")

DirOption = typer.Option(
    None, "--dir", envvar="SKILLS_DIR", help="Library folder (default: ./.skills)."
)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of text.")
def usage_line(ctx: Any) -> str:
    """``skills fetch [OPTIONS] TASK``: the command and its arguments, for one-line errors."""
    pieces = [ctx.command_path, "[OPTIONS]"]
    if hasattr(ctx.command, "commands"):
        pieces.append("COMMAND [ARGS]...")
    for param in ctx.command.params:
        if getattr(param, "param_type_name", "") != "argument":
            continue
        meta = param.metavar or (param.name or "").upper()
        meta += "..." if param.nargs == -1 and not meta.endswith("...") else ""
        pieces.append(meta if param.required else f"[{meta}]")
    return " ".join(pieces)


class OneLineErrors(TyperGroup):
    """The root command group: a usage error (a missing or malformed argument, an unknown
    option or command) prints one line on stderr naming the problem, the usage and the
    help to read, instead of click's block; everything else is click's."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.Abort:
            err_console.print("Aborted.", highlight=False)
            sys.exit(1)
        except typer.TyperException as exc:
            ctx = getattr(exc, "ctx", None)
            code = getattr(exc, "exit_code", EXIT_UNUSABLE)
            if type(exc).__name__ == "NoArgsIsHelpError":  # a group named alone: its help
                from typer import rich_utils

                rich_utils.rich_format_error(exc)  # type: ignore[arg-type]
                sys.exit(code)
            message = " ".join(exc.format_message().split())
            if ctx is not None:
                message = f"{message} (usage: {usage_line(ctx)}; see `{ctx.command_path} --help`)"
            err_console.print(styled(("error:", "red"), f" {message}"), highlight=False)
            sys.exit(code)
        sys.exit(code if isinstance(code, int) else 0)


def _claimable_actor(value: Optional[str]) -> Optional[str]:
    """--actor may name any registered user or service actor, never the library's own."""
    if value is None:  # the default actor: nothing to check, nothing to import
        return None
    from skill_library.errors import PermissionDenied
    from skill_library.governance.actors import check_claimable

    try:
        return check_claimable(value)
    except PermissionDenied as exc:
        fail(str(exc))


ActorOption = typer.Option(
    None, "--actor", envvar="SKILLS_ACTOR", show_envvar=True, callback=_claimable_actor,
    help="The registered actor this command acts as (default: the local administrator, the OS user).",
)
CreateOption = typer.Option(
    False, "--create", help="Create the library when the folder has none."
)
MaxToolCallsOption = typer.Option(
    None, "--max-tool-calls", min=0, help="Sandbox limit: tool calls per run (default 200)."
)
CpuSecondsOption = typer.Option(
    None, "--cpu-seconds", min=0.001, help="Sandbox limit: CPU seconds per run (default 5)."
)
WallSecondsOption = typer.Option(
    None, "--wall-seconds", min=0.001, help="Sandbox limit: wall-clock seconds (default 10)."
)
MemoryMbOption = typer.Option(
    None, "--memory-mb", min=64, help="Sandbox limit: worker memory in MB (default 256)."
)

F = TypeVar("F", bound=Callable[..., Any])


def required_text(value: str | None) -> str | None:
    """An argument callback: an empty (or blank) text is a usage error (None: not given)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("must not be empty")
    return value


def short(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``."""
    err_console.print(styled(("error:", "red"), f" {message}"), highlight=False)
    raise typer.Exit(code)


def notice(message: str) -> None:
    """A one-line notice on stderr (what a warning becomes in the CLI)."""
    err_console.print(styled(("notice:", "yellow"), f" {message}"), highlight=False)


def warm_up_in_background(library: "SkillLibrary") -> threading.Thread:
    """Load ``library``'s embedding model on a daemon thread, so a server (the console, MCP)
    answers before the model is loaded; a first search meanwhile waits for it (the
    embedder loads a model once, under its own lock). A model that cannot load is a notice:
    the searches then report it themselves."""

    def load() -> None:
        try:
            library.embedder.embed(["warm up"])
        except Exception as exc:  # reported; the first search raises it again
            notice(f"the embedding model did not load yet: {short(str(exc))}")

    thread = threading.Thread(target=load, name="skills-warm-up", daemon=True)
    thread.start()
    return thread


def validation_message(exc: "ValidationError") -> str:
    """A pydantic error as one line: ``field: problem; field: problem``."""
    parts = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error.get("loc", ())) or exc.title
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{field}: {message}")
    return "; ".join(parts)


def error_exit(exc: BaseException) -> tuple[str, int] | None:
    """The one-line message and exit code for one of the library's errors, else None."""
    if is_validation_error(exc):
        return validation_message(exc), EXIT_ERROR  # type: ignore[arg-type]
    for kind, code in EXIT_CODES:
        if isinstance(exc, kind):
            message = str(exc)
            if isinstance(exc, SkillNotFoundError):
                message += " (`skills list` shows the names)"
            return message, code
    if type(exc) is ValueError:  # the library's check of an argument: the user's input
        return str(exc).splitlines()[0] if str(exc) else "a bad value", EXIT_ERROR
    return None


TenantOption = typer.Option(
    None, "--tenant", envvar=TENANT_ENV, show_envvar=True,
    help="The tenant whose skills the command reads and writes (default: the root --tenant, else default).",
)


def command(func: F) -> F:
    """Wrap a command: library errors become one-line messages, warnings one-line notices;
    every command also takes ``--tenant`` (``SKILLS_TENANT``), which :func:`open_library`
    uses (as it does the root option ``skills --tenant NAME``)."""

    own_actor = "actor" in inspect.signature(func).parameters  # it passes actor= itself

    @functools.wraps(func)
    def wrapper(*args: Any, tenant: str | None = None, **kwargs: Any) -> Any:
        if tenant is not None:
            deployment["tenant"] = tenant
        if not own_actor:
            deployment["actor"] = kwargs.pop("actor", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for developer_only in (DeprecationWarning, PendingDeprecationWarning, ResourceWarning):
                warnings.simplefilter("ignore", developer_only)  # for developers, not users
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                mapped = error_exit(exc)
                if mapped is None:
                    raise  # not the library's error: a bug, with its traceback
                fail(*mapped)
            finally:
                seen: set[str] = set()
                for warning in caught:
                    text = str(warning.message).splitlines()[0] if str(warning.message) else ""
                    if text and text not in seen:
                        seen.add(text)
                        notice(text)

    signature = inspect.signature(func)
    option = inspect.Parameter("tenant", inspect.Parameter.KEYWORD_ONLY, default=TenantOption,
                               annotation=Optional[str])
    added = [option]
    if not own_actor:  # every command acts as --actor / SKILLS_ACTOR (the library's actor=)
        added.append(inspect.Parameter("actor", inspect.Parameter.KEYWORD_ONLY, default=ActorOption,
                                       annotation=Optional[str]))
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), *added]
    )
    wrapper.__annotations__ = {**func.__annotations__, "tenant": Optional[str], "actor": Optional[str]}
    return wrapper  # type: ignore[return-value]


@contextmanager
def open_library(
    directory: Path | None,
    *,
    create: bool = False,
    generalizer: str | None = None,
    policy: Any = None,
    served_embeddings: bool = True,
    sandbox: Any = None,
) -> Iterator[SkillLibrary]:
    """The library in ``directory`` (default ``./.skills``), closed afterwards; with
    ``--records`` / ``--index`` (``SKILLS_RECORDS_URL`` / ``SKILLS_INDEX_URL``), the shared
    deployment they name (a folder is then used only for what they leave out); bound to
    the tenant of ``--tenant`` / ``SKILLS_TENANT`` (a bad name: exit 2).

    A folder with no library is an error unless ``create``. With ``served_embeddings``
    (all but ``skills serve`` itself), texts are embedded by the ``skills serve`` of the
    same library when one answers (:class:`skill_library.served.ServedEmbedder`), so the
    model is not loaded here. ``sandbox``: a ``sandbox.Sandbox`` already starting, which the
    library's runs use and its close closes (``SkillLibrary(sandbox=)``).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from skill_library.library import SkillLibrary

    options: dict[str, Any] = {"create": create, **{k: v for k, v in deployment.items() if v}}
    if generalizer is not None:
        options["generalizer"] = generalizer
    if sandbox is not None:
        options["sandbox"] = sandbox
    if policy is not None:
        options["policy"] = policy
    folder = directory or (None if deployment["records"] and deployment["index"] else DEFAULT_DIR)
    tenant = deployment.get("tenant")
    if tenant is not None:
        problem = tenant_problem(tenant)
        if problem is not None:
            fail(f"--tenant: {problem}", EXIT_UNUSABLE)
    if served_embeddings:
        embedder = served_embedder(directory)
        if embedder is not None:
            options["embedder"] = embedder
    try:
        library = SkillLibrary(folder, **options)
    except ValueError as exc:  # a malformed URL
        fail(str(exc), EXIT_UNUSABLE)
    try:
        yield library
    finally:
        library.close()


def served_embedder(directory: Path | None) -> Any:
    """A :class:`~skill_library.served.ServedEmbedder` over the default embedder when the
    socket a ``skills serve`` of this library would listen on exists; else None."""
    from skill_library.cli.serve import served_key
    from skill_library.served import ServedEmbedder

    path, key = served_key(directory)
    if path is None or not path.exists():
        return None
    from skill_library.embeddings import SentenceTransformerEmbedder

    return ServedEmbedder(SentenceTransformerEmbedder(), path, key)


# -- JSON forms of records (skill_library.serialize, imported on first use: it needs the models)
def skill_json(skill: "Skill") -> dict[str, Any]:
    """:func:`skill_library.serialize.skill_json`."""
    from skill_library import serialize

    return serialize.skill_json(skill)


def match_json(match: "Match") -> dict[str, Any]:
    """:func:`skill_library.serialize.match_json`."""
    from skill_library import serialize

    return serialize.match_json(match)


def run_json(run: "SkillRun") -> dict[str, Any]:
    """:func:`skill_library.serialize.run_json`."""
    from skill_library import serialize

    return serialize.run_json(run)


def outcome_json(outcome: dict[str, Any]) -> dict[str, Any]:
    """:func:`skill_library.serialize.outcome_json`."""
    from skill_library import serialize

    return serialize.outcome_json(outcome)


def trace_json(trace: "Trace") -> dict[str, Any]:
    """:func:`skill_library.serialize.trace_json`."""
    from skill_library import serialize

    return serialize.trace_json(trace)


def emit(data: Any) -> None:
    """Print ``data`` as indented JSON."""
    typer.echo(json.dumps(data, indent=2, default=str))


def split_names(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [t.strip() for t in text.split(",") if t.strip()]


def json_value(text: str, option: str) -> Any:
    """Parse an option's JSON, or ``@path`` to read it from a file; errors name the option."""
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = path.read_text()
        except OSError as exc:
            fail(f"{option}: cannot read {path}: {exc.strerror or exc}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{option} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")


def limits_from(
    max_tool_calls: int | None,
    cpu_seconds: float | None,
    wall_seconds: float | None,
    memory_mb: int | None,
) -> Limits | None:
    """Sandbox limits from the limit options (None when none was given)."""
    given = {
        "max_tool_calls": max_tool_calls,
        "cpu_seconds": cpu_seconds,
        "wall_seconds": wall_seconds,
        "memory_mb": memory_mb,
    }
    chosen: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if not chosen:
        return None
    from sandbox import Limits

    try:
        return Limits(**chosen)
    except ValueError as exc:
        fail(str(exc), EXIT_UNUSABLE)


def load_tools(spec: str) -> dict[str, Callable[..., Any]]:
    """Tools from a ``.py`` path or a module name: its ``TOOLS`` dict, else its public
    functions.

    A path, or a name with a ``NAME.py`` in the working directory, is loaded from that file;
    any other name is imported as an installed module. ``sys.path`` is never changed, so
    files in the working directory cannot shadow what the CLI imports.
    """
    path = Path(spec)
    if not (spec.endswith(".py") or os.sep in spec):
        local = Path.cwd() / f"{spec}.py"
        path = local if local.is_file() else Path()
    try:
        if path != Path():
            if not path.is_file():
                fail(f"cannot load tools from {spec}: no such file")
            module_name = f"skills_cli_tools_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            if module_spec is None or module_spec.loader is None:
                fail(f"cannot load tools from {spec}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module  # dataclasses and pickling look modules up
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except typer.Exit:
        raise
    except Exception as exc:  # the tools module is the user's code: any import failure
        fail(f"cannot load tools from {spec}: {type(exc).__name__}: {short(str(exc))}")
    tools = getattr(module, "TOOLS", None)
    if isinstance(tools, dict):
        return dict(tools)
    return {
        name: obj
        for name, obj in vars(module).items()
        if callable(obj)
        and not name.startswith("_")
        and getattr(obj, "__module__", None) == module.__name__
    }
