"""The τ-bench retail data folder: files checked, tasks, gold replay, tools, the world.

The folder (default ``../shared/benchmarks/taubench-retail`` from the project root) is read,
never written; nothing of its task texts is copied into the project. The world is the
folder's own ``retail_env.py`` (a checked re-implementation of the 16 retail tools),
imported from its path at run time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import pickle
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

#: the files a data folder must hold (relative to it)
REQUIRED_FILES = ("tasks.jsonl", "gold_replay.jsonl", "retail_env.py", "retail/tools.json",
                  "retail/users.json", "retail/orders.json", "retail/products.json")
#: the default data folder, relative to the project root
DEFAULT_RELATIVE = Path("..") / "shared" / "benchmarks" / "taubench-retail"
#: tools that never change the database (the rest write): get_*, find_*, list_*, calculate, think, transfer
READ_ONLY_PREFIXES = ("get_", "find_", "list_")
READ_ONLY_NAMES = frozenset({"calculate", "think", "transfer_to_human_agents"})
FOLDS = 5


class DataError(ValueError):
    """The data folder is missing or incomplete (the message names the option or the file)."""


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def default_data_dir() -> Path | None:
    """``../shared/benchmarks/taubench-retail`` from the project root, when it exists."""
    path = (project_root() / DEFAULT_RELATIVE).resolve()
    return path if path.is_dir() else None


def resolve_data_dir(data: str | Path | None, option: str = "--data") -> Path:
    """The data folder to use: ``data`` or the default; DataError (one line, naming ``option``
    or the missing file) when absent or partial."""
    if data is None:
        found = default_data_dir()
        if found is None:
            raise DataError(f"no τ-bench data folder: {DEFAULT_RELATIVE} (from the project root) does not exist; "
                            f"pass {option} DIR")
        path = found
    else:
        path = Path(data)
        if not path.is_dir():
            raise DataError(f"{option} {path}: not a folder")
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise DataError(f"{option} {path}: missing {missing[0]}" + (f" (and {len(missing) - 1} more: "
                        f"{', '.join(missing[1:])})" if len(missing) > 1 else ""))
    return path


def is_read_only(tool: str) -> bool:
    """Whether ``tool`` only reads the database."""
    return tool.startswith(READ_ONLY_PREFIXES) or tool in READ_ONLY_NAMES


def fold_of(task_id: str, folds: int = FOLDS) -> int:
    """The cross-validation fold of a task: ``int(sha256(id), 16) % folds``."""
    return int(hashlib.sha256(task_id.encode("utf-8")).hexdigest(), 16) % folds


@dataclass(frozen=True)
class Call:
    """One gold action."""

    name: str
    kwargs: dict[str, Any]


@dataclass
class Task:
    """One task of ``tasks.jsonl`` with its gold replay facts."""

    id: str
    split: str
    instruction: str
    actions: list[Call]
    gold_hash: str
    changes_state: bool
    gold_errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def writes(self) -> list[Call]:
        """The gold calls of state-changing tools, in call order."""
        return [a for a in self.actions if not is_read_only(a.name)]

    @property
    def write_tools(self) -> list[str]:
        """The distinct state-changing tools of the gold, in first-call order."""
        return list(dict.fromkeys(a.name for a in self.writes))

    @property
    def shape(self) -> str:
        """``single`` (one write), ``repeat`` (several writes of one tool), ``mixed`` (several tools), ``none``."""
        writes = self.writes
        if not writes:
            return "none"
        if len(writes) == 1:
            return "single"
        return "repeat" if len(self.write_tools) == 1 else "mixed"


class Retail:
    """A checked data folder: its tasks, tool declarations and fresh environments."""

    def __init__(self, data: str | Path | None = None, option: str = "--data") -> None:
        self.path = resolve_data_dir(data, option)
        gold = {}
        for line in (self.path / "gold_replay.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                gold[row["id"]] = row
        self.tasks: list[Task] = []
        for n, line in enumerate((self.path / "tasks.jsonl").read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["id"] not in gold:
                raise DataError(f"--data {self.path}: gold_replay.jsonl has no row for {row['id']} "
                                f"(tasks.jsonl line {n})")
            g = gold[row["id"]]
            self.tasks.append(Task(
                id=row["id"], split=row["split"], instruction=row["instruction"],
                actions=[Call(a["name"], dict(a.get("kwargs", {}))) for a in row["actions"]],
                gold_hash=g["state_hash"], changes_state=bool(g["changes_state"]), gold_errors=list(g["errors"])))
        self.tools: list[dict[str, Any]] = json.loads((self.path / "retail/tools.json").read_text(encoding="utf-8"))

    @cached_property
    def env_module(self) -> ModuleType:
        """``retail_env.py`` of the data folder, imported from its path."""
        spec = importlib.util.spec_from_file_location("taubench_retail_env", self.path / "retail_env.py")
        if spec is None or spec.loader is None:
            raise DataError(f"--data {self.path}: cannot import retail_env.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    @cached_property
    def _snapshot(self) -> bytes:
        return pickle.dumps(self.env_module.load_retail_data(self.path / "retail"), protocol=pickle.HIGHEST_PROTOCOL)

    def new_env(self) -> Any:
        """A fresh copy of the database (``env.call(name, **kwargs) -> str``, ``env.state_hash()``):
        the folder's JSON parsed once, each copy unpickled from that (types and key order kept)."""
        return self.env_module.RetailEnv(data=pickle.loads(self._snapshot))

    def split(self, name: str) -> list[Task]:
        return [t for t in self.tasks if t.split == name]

    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools]

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        return {t["name"]: t["parameters"] for t in self.tools}

    def read_only_tools(self) -> frozenset[str]:
        return frozenset(n for n in self.tool_names() if is_read_only(n))

    def tool_specs(self) -> dict[str, Any]:
        """Every tool as a ToolSpec: schema, side effects, and tools.json's description where
        the library's ToolSpec takes one."""
        from skill_library.governance import ToolSpec

        described = "description" in ToolSpec.model_fields
        return {t["name"]: ToolSpec(schema=t["parameters"], side_effects=not is_read_only(t["name"]),
                                    **({"description": t.get("description", "")} if described else {}))
                for t in self.tools}


def env_tools(env: Any, names: list[str]) -> dict[str, Callable[..., str]]:
    """Tool callables over ``env`` (each returns the tool's string; failures are ``Error: ...`` strings)."""

    def bind(name: str) -> Callable[..., str]:
        def tool(**kwargs: Any) -> str:
            return str(env.call(name, **kwargs))

        tool.__name__ = name
        return tool

    return {name: bind(name) for name in names}
