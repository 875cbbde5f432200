"""The world plugin interface: tasks, verdicts, tool errors and the ``World`` base class.

A world is a deterministic environment with tools. Each tool is a callable taking keyword
arguments and returning JSON values; a failed call raises :class:`ToolError` whose message
says what went wrong and what would fix it. Worlds are discovered from the modules of
``benchmarks/worlds``: any module defining a concrete ``World`` subclass with a ``name``
is a plugin, so adding a world is adding one file.
"""

from __future__ import annotations

import abc
import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from skill_library.governance import ToolSpec

Split = Literal["train", "test"]
ToolFn = Callable[..., Any]

TASKS_DIR = Path(__file__).resolve().parent.parent / "tasks"


class GoldAction(BaseModel):
    """One tool call of a task's reference solution."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Task(BaseModel):
    """One benchmark task.

    ``params`` are the values that vary between tasks of the same workflow (a learned skill
    takes them as arguments); ``goal`` is the structured objective the world's verifier
    checks (and that offline agents may read); ``gold`` is a reference solution, where the
    world has one. ``seed`` is the world seed the task was written against.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    world: str
    instruction: str
    params: dict[str, Any] = Field(default_factory=dict)
    split: Split
    workflow: str = ""
    goal: dict[str, Any] = Field(default_factory=dict)
    gold: list[GoldAction] | None = None
    seed: int = 0


class Verdict(BaseModel):
    """The world's judgement of the final state: success, and the evidence for it."""

    success: bool
    evidence: Any = None


class ToolError(Exception):
    """A tool call failed; the message says why and, where it can, what would fix it."""


@dataclass(frozen=True)
class PersonalValue:
    """One true value of a world that belongs to a person (a name, an email, an id, an
    address, a phone number...): the privacy check looks for it in everything the library
    stores or shows. ``owner`` says whose it is (a person, or the task that carried it)."""

    value: str
    kind: str
    owner: str


class World(abc.ABC):
    """A deterministic environment with tools.

    Subclasses set ``name`` and ``description`` and implement ``reset``,
    ``tool_functions``, ``tool_schemas``, ``tool_descriptions``, ``state`` and ``verify``.
    ``reset(seed)`` must put the world in the same state for the same seed; ``verify(task)``
    judges the current state.
    """

    name: str = ""
    # What the world is and what its tools do, in 1-3 sentences written for the agent (an
    # LLM agent puts it into its system prompt); docstrings are for developers.
    description: str = ""

    def __init__(self) -> None:
        self.seed: int = 0

    @abc.abstractmethod
    def reset(self, seed: int = 0, task: Task | None = None) -> None:
        """Reset to the initial state for ``seed`` (and, where it matters, for ``task``)."""

    @abc.abstractmethod
    def tool_functions(self) -> dict[str, ToolFn]:
        """Name -> the bound method implementing the tool (arguments not yet checked)."""

    def tools(self) -> dict[str, ToolFn]:
        """Name -> callable taking keyword arguments, returning JSON, raising ToolError.

        Every callable checks its arguments against the tool's JSON Schema first.
        """
        return {name: _Checked(self, name) for name in self.tool_functions()}

    def read_only_tools(self) -> frozenset[str]:
        """Tools that only read state (declared to the library: a skill may look before it acts)."""
        return frozenset()

    def trusted_output_tools(self) -> frozenset[str]:
        """Tools whose results and errors are the world's own rules, with no third-party
        text (declared to the library: they ground a learned skill's values as the task
        does; docs/security.md); none by default."""
        return frozenset()

    def tool_specs(self) -> dict[str, "ToolSpec"]:
        """Every tool declared for the library: its argument schema, whether it changes state
        (every tool not in :meth:`read_only_tools` does) and, where the library's ``ToolSpec``
        takes one, its description."""
        from skill_library.governance import ToolSpec

        read_only, descriptions = self.read_only_tools(), self.tool_descriptions()
        described = "description" in ToolSpec.model_fields
        return {
            name: ToolSpec(schema=schema, side_effects=name not in read_only,
                           **({"description": descriptions.get(name, "")} if described else {}))
            for name, schema in self.tool_schemas().items()
        }

    def personal_values(self, tasks: Sequence["Task"]) -> list[PersonalValue]:
        """The world's true personal values on the seeds of ``tasks`` (its users' names,
        emails, ids, addresses, phones...) and those the tasks' params carry; none by default
        (a world without people)."""
        return []

    @abc.abstractmethod
    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Name -> JSON Schema of the tool's arguments object."""

    @abc.abstractmethod
    def tool_descriptions(self) -> dict[str, str]:
        """Name -> one-paragraph description of what the tool does."""

    @abc.abstractmethod
    def state(self) -> Any:
        """The full current state as JSON values (a deep copy)."""

    @abc.abstractmethod
    def verify(self, task: Task) -> Verdict:
        """Judge whether the current state completes ``task``."""

    # -- helpers shared by every world --------------------------------------------------

    def verify_against_gold(self, task: Task, what: str = "state") -> Verdict:
        """Success when the state equals the one a fresh world of this kind reaches by
        replaying ``task``'s gold actions on the same seed (``what`` names the state)."""
        if task.gold is None:
            return Verdict(success=False, evidence="task has no gold actions to compare with")
        reference = type(self)()
        reference.reset(self.seed, task)
        failed = [r for r in reference.replay(task.gold) if r["error"]]
        if failed:
            return Verdict(success=False, evidence={"gold_failed": failed})
        diffs = state_differences(reference.state(), self.state())
        if diffs:
            return Verdict(success=False, evidence={"differences": diffs[:8], "count": len(diffs)})
        return Verdict(success=True, evidence=f"final {what} equals the gold {what}")

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call tool ``name`` with ``arguments``, checking them against its schema first."""
        tools = self.tool_functions()
        if name not in tools:
            raise ToolError(f"unknown tool {name!r}; tools are: {', '.join(sorted(tools))}")
        arguments = dict(arguments or {})
        check_arguments(name, arguments, self.tool_schemas()[name])
        return tools[name](**arguments)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's function-calling format."""
        descriptions = self.tool_descriptions()
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": descriptions.get(name, ""),
                    "parameters": schema,
                },
            }
            for name, schema in self.tool_schemas().items()
        ]

    def replay(self, actions: list[GoldAction] | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run ``actions`` in order; return one ``{name, arguments, result, error}`` each."""
        out = []
        for action in actions:
            if isinstance(action, dict):
                action = GoldAction(**action)
            try:
                result, error = self.call(action.name, dict(action.arguments)), None
            except ToolError as exc:
                result, error = None, str(exc)
            out.append(
                {"name": action.name, "arguments": dict(action.arguments), "result": result, "error": error}
            )
        return out


class _Checked:
    """A tool callable that checks its keyword arguments against the schema first."""

    def __init__(self, world: World, name: str) -> None:
        self.world, self.name = world, name

    def __call__(self, **arguments: Any) -> Any:
        return self.world.call(self.name, arguments)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def check_arguments(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Raise ToolError naming the problem when ``arguments`` do not fit ``schema``.

    Covers what tool schemas here use: required, unknown properties, types, enum,
    minimum, array items.
    """
    properties = schema.get("properties", {})
    missing = [k for k in schema.get("required", []) if k not in arguments]
    if missing:
        raise ToolError(f"{tool}: missing required argument(s) {', '.join(missing)}")
    if schema.get("additionalProperties") is False:
        unknown = [k for k in arguments if k not in properties]
        if unknown:
            raise ToolError(
                f"{tool}: unknown argument(s) {', '.join(unknown)}; "
                f"it takes {', '.join(properties) or 'no arguments'}"
            )
    for key, value in arguments.items():
        if key in properties:
            _check_value(f"{tool}: argument {key}", value, properties[key])


def _check_value(where: str, value: Any, schema: dict[str, Any]) -> None:
    expected = schema.get("type")
    if expected:
        kinds = _JSON_TYPES.get(expected, (object,))
        bad_bool = isinstance(value, bool) and expected in ("integer", "number")
        if bad_bool or not isinstance(value, kinds):
            raise ToolError(f"{where} must be of type {expected}, got {json.dumps(value)}")
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(v) for v in schema["enum"])
        raise ToolError(f"{where} must be one of {choices}, got {json.dumps(value)}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        raise ToolError(f"{where} must be at least {schema['minimum']}, got {value}")
    if expected == "array" and "items" in schema:
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise ToolError(f"{where} needs at least {schema['minItems']} item(s)")
        for item in value:
            _check_value(f"{where} item", item, schema["items"])


def state_differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where two JSON states differ, one line per difference (``/users/u1/name: expected ...``)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path}/{key}"
            if key not in actual:
                out.append(f"{where}: missing")
            elif key not in expected:
                out.append(f"{where}: unexpected")
            else:
                out += state_differences(expected[key], actual[key], where)
        return out
    if expected != actual:
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def params_values(tasks: Sequence[Task], personal: dict[str, str]) -> list[PersonalValue]:
    """The values of ``tasks``' params named in ``personal`` (param -> kind), owned by their task."""
    out = []
    for task in tasks:
        for name, value in task.params.items():
            if name in personal:
                for item in value if isinstance(value, list) else [value]:
                    out.append(PersonalValue(str(item), personal[name], f"task:{task.id}"))
    return out


def deep_copy(value: Any) -> Any:
    """A deep copy of a JSON value."""
    return copy.deepcopy(value)


def load_tasks(world: str, split: Split | None = None, path: Path | None = None) -> list[Task]:
    """The tasks of ``world`` (from ``benchmarks/tasks/<world>.jsonl``), optionally one split."""
    path = path or TASKS_DIR / f"{world}.jsonl"
    tasks = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                task = Task.model_validate_json(line)
                if split is None or task.split == split:
                    tasks.append(task)
    return tasks


def evaluation_factory(world_class: type[World]) -> Callable[[Any], Any]:
    """A tools factory for ``SkillLibrary.evaluate`` / ``skills evaluate --world``: each suite
    task gets a fresh ``world_class()`` reset for it, the world's tools and schemas, and the
    world's verifier as the check of the final state."""
    from skill_library.governance.suite import TaskEnvironment

    def factory(task: Any) -> TaskEnvironment:
        world = world_class()
        fields = task.model_dump(exclude={"critical"})
        fields.update(world=fields.get("world") or world.name, split=fields.get("split") or "test")
        bench_task = Task.model_validate(fields)
        world.reset(bench_task.seed, bench_task)
        return TaskEnvironment(tools=world.tools(), tool_schemas=world.tool_schemas(),
                               check=lambda run: world.verify(bench_task))

    return factory
