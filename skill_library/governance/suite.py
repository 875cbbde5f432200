"""Evaluation suites: a versioned set of tasks a skill version is evaluated on.

A suite file is what a user writes by hand: JSON, YAML or JSON Lines.

- JSON / YAML: ``{"id": "refunds", "tasks": [TASK, ...]}`` (``id`` defaults to the file
  name without its extension);
- JSON Lines (``.jsonl``): one TASK per line, the benchmark harness's own task files
  (``benchmarks/tasks/*.jsonl``) load as they are; the id is the file name.

A TASK is the harness's task format (``benchmarks.worlds.base.Task``) plus ``critical``::

    {"id": "cancel-1", "instruction": "Cancel order #W1", "params": {"order_id": "#W1"},
     "goal": {...}, "gold": [{"name": "cancel", "arguments": {"order_id": "#W1"}}],
     "critical": true}

``params`` are bound by name to the skill's parameters. The task is checked by the tools
factory's ``check`` (the final state of its world), else by its ``gold`` actions (the
exact tool calls, names and arguments, in order). A suite is versioned by its id and the
sha256 of its canonical JSON (:attr:`Suite.content_hash`): editing a task changes the hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from skill_library.errors import SuiteError

#: file extensions read as YAML (the rest: JSON, and ``.jsonl``: one task per line)
YAML_SUFFIXES = (".yaml", ".yml")


class GoldCall(BaseModel):
    """One tool call of a task's reference solution."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class SuiteTask(BaseModel):
    """One task of a suite: the harness's task fields, and ``critical``.

    A regression on a ``critical`` task (the active version solves it, the candidate does
    not) fails the evaluation whatever the average says.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    critical: bool = False
    goal: dict[str, Any] = Field(default_factory=dict)
    gold: list[GoldCall] | None = None
    seed: int = 0
    # harness fields kept so its task files load unchanged
    world: str = ""
    split: str = ""
    workflow: str = ""


class Suite(BaseModel):
    """A named, versioned list of tasks (ids unique)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    tasks: list[SuiteTask] = Field(min_length=1)

    @field_validator("tasks")
    @classmethod
    def _unique_ids(cls, tasks: list[SuiteTask]) -> list[SuiteTask]:
        seen: set[str] = set()
        for task in tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} appears twice")
            seen.add(task.id)
        return tasks

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of the suite's canonical JSON (sorted keys, defaults included)."""
        body = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "Suite":
        """Read a suite file (JSON, YAML or JSON Lines; see the module docstring)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SuiteError(f"cannot read the suite file {path}: {exc.strerror or exc}") from None
        try:
            if path.suffix == ".jsonl":
                data: Any = {"tasks": [json.loads(line) for line in text.splitlines() if line.strip()]}
            elif path.suffix in YAML_SUFFIXES:
                import yaml  # type: ignore[import-untyped]

                data = yaml.safe_load(text)
            else:
                data = json.loads(text)
        except (ValueError, ImportError) as exc:  # json and yaml errors are ValueErrors/YAMLError
            raise SuiteError(f"the suite file {path} is not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}") from None
        except Exception as exc:  # yaml.YAMLError does not derive from ValueError
            raise SuiteError(f"the suite file {path} cannot be parsed: {exc}") from None
        if isinstance(data, list):
            data = {"tasks": data}
        if not isinstance(data, dict):
            raise SuiteError(f"the suite file {path} must hold an object with 'tasks' (or a list of tasks)")
        data = {"id": path.stem, **data}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SuiteError(f"the suite file {path}: {where}: {first['msg']}") from None


class TaskEnvironment(BaseModel):
    """What a tools factory gives one task: a fresh world's tools and the task's check.

    ``check(run)`` judges the final state after a run (a bool, or anything with a
    ``success`` attribute such as the harness's ``Verdict``); None checks the run's tool
    calls against the task's ``gold`` actions. ``tool_schemas`` are passed to the sandbox
    (arguments outside a schema are denied). ``tokens()``, when given, reports the model
    tokens the task's world spent (e.g. an LLM-backed tool), recorded with the result.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tools: dict[str, Callable[..., Any]]
    check: Callable[[Any], Any] | None = None
    tool_schemas: dict[str, dict[str, Any]] | None = None
    tokens: Callable[[], int] | None = None


#: a tools factory: one fresh :class:`TaskEnvironment` per task (called twice per task:
#: once for the active version, once for the candidate)
ToolsFactory = Callable[[SuiteTask], "TaskEnvironment | Mapping[str, Any]"]


def environment(value: "TaskEnvironment | Mapping[str, Any]") -> TaskEnvironment:
    """A factory's answer as a :class:`TaskEnvironment` (a mapping of its fields is accepted)."""
    if isinstance(value, TaskEnvironment):
        return value
    if isinstance(value, Mapping):
        return TaskEnvironment(**value)
    raise TypeError(f"a tools factory must return a TaskEnvironment, got {type(value).__name__}")
