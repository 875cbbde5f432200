"""The agent interface and the bookkeeping every agent shares.

An agent solves one task in a world that the harness has already reset::

    episode = agent.solve(task, world, library)   # library: SkillLibrary | None

and returns an :class:`Episode`: the calls it made (its trace, at the agent's level: a skill
it ran is one call with ``kind="skill"``), and its costs. The harness verifies the world's
final state, turns the episode into a :class:`~skill_library.Trace`, learns from it and
records metrics. Agents do their tool calls, skill fetches and skill runs through a
:class:`Session`, and report their model calls to it, so that everything is counted the
same way for every agent:

* ``tool_calls``: primitive world-tool calls executed, including those made inside skills;
* ``decisions``: what the agent itself chose to do: primitive calls it made directly plus
  skill invocations (a skill run is one decision, however many calls it makes);
* ``fetches`` / ``fetch_hits``: library look-ups, and those the agent counted as hits
  (:meth:`Session.hit`): the offline agents when a fetched skill bound to the task and
  ran, the LLM agent when the fetch gave skills to show the model;
* ``llm_calls`` / ``prompt_tokens`` / ``completion_tokens``: model calls that got an
  answer (:meth:`Session.count_llm`) and the tokens the server reported for them (0 when
  it reports no usage; all 0 for offline agents).
"""

from __future__ import annotations

import abc
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from benchmarks.worlds.base import Task, ToolError, World
from skill_library.models import Outcome, ToolCall, Trace

if TYPE_CHECKING:  # the library pulls in torch/chromadb; agents only need its interface
    from sandbox import Limits
    from skill_library import Match, Skill, SkillLibrary


class BudgetExceeded(Exception):
    """The episode used up its tool-call budget."""


class SkillUse(BaseModel):
    """One skill the agent ran: what for, with which arguments, and how it went.

    ``value`` is what the skill returned (None when it failed).
    """

    name: str
    version: int | None = None
    text: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = False
    value: Any = None
    error: str | None = None
    tool_calls: int = 0
    duration_ms: float = 0.0
    # the agent's own check of the skill's post-condition (None when it cannot tell)
    verified: bool | None = None


class Episode(BaseModel):
    """What an agent did on one task, and what it cost."""

    task_id: str
    agent: str
    calls: list[ToolCall] = Field(default_factory=list)
    result: Any = None
    tool_calls: int = 0
    decisions: int = 0
    fetches: int = 0
    fetch_hits: int = 0
    skill_uses: list[SkillUse] = Field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_ms: float = 0.0
    stopped: str | None = None  # why the agent gave up, if it did

    @property
    def skill_invocations(self) -> int:
        return len(self.skill_uses)

    @property
    def skill_successes(self) -> int:
        return sum(1 for u in self.skill_uses if u.ok)

    def to_trace(self, task: Task, outcome: Outcome | None) -> Trace:
        """The episode as a library trace (only verified successes should be learned)."""
        return Trace(
            task=task.instruction,
            params=dict(task.params),
            calls=list(self.calls),
            result=self.result,
            outcome=outcome,
            source=self.agent,
        )


class Agent(abc.ABC):
    """Solves tasks in worlds, with or without a skill library."""

    name: str = ""
    # worlds this agent can work in; None means any world
    worlds: tuple[str, ...] | None = None

    def supports(self, world: World) -> bool:
        return self.worlds is None or world.name in self.worlds

    @abc.abstractmethod
    def solve(self, task: Task, world: World, library: "SkillLibrary | None" = None) -> Episode:
        """Solve ``task`` in ``world`` (already reset for it); never raises for task failure."""


class Session:
    """Runs an agent's tool calls, fetches and skill runs, recording trace and costs
    (model calls too, which the agent makes itself and reports with :meth:`count_llm`)."""

    def __init__(
        self,
        task: Task,
        world: World,
        library: "SkillLibrary | None",
        *,
        agent: str,
        max_tool_calls: int = 400,
        max_decisions: int | None = None,
        skill_limits: Limits | None = None,
    ) -> None:
        self.task = task
        self.world = world
        self.library = library
        self.max_tool_calls = max_tool_calls
        self.max_decisions = max_decisions
        self.skill_limits = skill_limits
        self._tools = world.tools()
        self._started = time.perf_counter()
        self.episode = Episode(task_id=task.id, agent=agent)
        self._inner: list[ToolCall] | None = None  # calls made inside the running skill
        self._budget_hit: str | None = None  # set when a skill's tool call hit the budget
        self.last_inner: list[ToolCall] = []  # the primitive calls of the last skill run

    # -- primitive tool calls -----------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> tuple[Any, str | None]:
        """Call a world tool as one agent decision; returns ``(result, error)``."""
        arguments = dict(arguments or {})
        self._decide()
        result, error, ms = self._execute(name, arguments)
        self.episode.calls.append(
            ToolCall(name=name, arguments=arguments, result=result, error=error, duration_ms=ms)
        )
        return result, error

    def _decide(self) -> None:
        if self.max_decisions is not None and self.episode.decisions >= self.max_decisions:
            raise BudgetExceeded(f"decision budget of {self.max_decisions} used up")
        self.episode.decisions += 1

    def _execute(self, name: str, arguments: dict[str, Any]) -> tuple[Any, str | None, float]:
        if self.episode.tool_calls >= self.max_tool_calls:
            raise BudgetExceeded(f"tool-call budget of {self.max_tool_calls} used up")
        self.episode.tool_calls += 1
        start = time.perf_counter()
        tool = self._tools.get(name)
        try:
            if tool is None:
                raise ToolError(f"unknown tool {name!r}; tools are: {', '.join(sorted(self._tools))}")
            result, error = tool(**arguments), None
        except ToolError as exc:
            result, error = None, str(exc)
        return result, error, (time.perf_counter() - start) * 1000

    def _skill_tools(self) -> dict[str, Any]:
        """World tools as the sandbox calls them: counted and recorded, raising ToolError."""

        def make(name: str):
            def tool(**arguments: Any) -> Any:
                try:
                    result, error, ms = self._execute(name, arguments)
                except BudgetExceeded as exc:  # the sandbox sees a tool error; the episode ends after the run
                    self._budget_hit = str(exc)
                    raise ToolError(str(exc)) from None
                if self._inner is not None:
                    self._inner.append(
                        ToolCall(name=name, arguments=dict(arguments), result=result, error=error, duration_ms=ms)
                    )
                if error is not None:
                    raise ToolError(error)
                return result

            tool.__name__ = name
            return tool

        return {name: make(name) for name in self._tools}

    # -- the library ----------------------------------------------------------------------

    def fetch(self, text: str, k: int = 3) -> list["Match"]:
        """Look skills up for ``text`` (counted as a fetch; no decision)."""
        if self.library is None:
            return []
        self.episode.fetches += 1
        return list(self.library.fetch(text, k=k))

    def hit(self) -> None:
        """Count the last fetch as a hit (it gave the agent a skill it could use)."""
        self.episode.fetch_hits += 1

    def run_skill(self, skill: "Skill", arguments: dict[str, Any], *, text: str = "") -> SkillUse:
        """Run ``skill`` with ``arguments`` against the world's tools, as one decision.

        On success the trace gets one ``kind="skill"`` call; on failure it gets the
        primitive calls the skill made before failing (they changed the world).
        """
        assert self.library is not None, "run_skill needs a library"
        self._decide()
        self._inner = []
        before = self.episode.tool_calls
        start = time.perf_counter()
        try:
            run = self.library.run(
                skill.name,
                dict(arguments),
                self._skill_tools(),
                tool_schemas=self.world.tool_schemas(),
                limits=self.skill_limits,
            )
            ok, value, error = run.ok, run.value, str(run.error) if run.error else None
            version = run.version
        except BudgetExceeded:
            raise
        except Exception as exc:  # the library refused to run it (bad arguments, ...)
            ok, value, error, version = False, None, f"{type(exc).__name__}: {exc}", skill.version
        inner, self._inner = self._inner, None
        ms = (time.perf_counter() - start) * 1000
        if self._budget_hit is not None:
            message, self._budget_hit = self._budget_hit, None
            self.episode.calls.extend(inner)  # what the skill did before the budget ran out
            raise BudgetExceeded(message)
        use = SkillUse(
            name=skill.name,
            version=version,
            text=text,
            arguments=dict(arguments),
            ok=ok,
            value=value if ok else None,
            error=error,
            tool_calls=self.episode.tool_calls - before,
            duration_ms=ms,
        )
        self.episode.skill_uses.append(use)
        if ok:
            self.episode.calls.append(
                ToolCall(name=skill.name, arguments=dict(arguments), result=value, kind="skill", duration_ms=ms)
            )
        else:
            self.episode.calls.extend(inner)
        self.last_inner = inner
        return use

    # -- model calls ------------------------------------------------------------------------

    def count_llm(self, usage: Any = None) -> None:
        """Count one model call and its tokens (no decision, no tool call).

        ``usage`` is the ``usage`` of an ``openai`` chat completion (anything with
        ``prompt_tokens`` / ``completion_tokens``), or None when the server reported none:
        the call is counted, its tokens count 0.
        """
        self.episode.llm_calls += 1
        if usage is not None:
            self.episode.prompt_tokens += getattr(usage, "prompt_tokens", None) or 0
            self.episode.completion_tokens += getattr(usage, "completion_tokens", None) or 0

    # -- the end --------------------------------------------------------------------------

    def finish(self, result: Any = None, stopped: str | None = None) -> Episode:
        self.episode.result = result
        self.episode.stopped = stopped
        self.episode.wall_ms = (time.perf_counter() - self._started) * 1000
        return self.episode


# -- binding a skill's arguments -----------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def when_regex(when: str, parameters: dict[str, Any] | None) -> re.Pattern[str]:
    """A regex that matches texts of the form of ``when``, capturing its ``{param}`` parts.

    Integer and number parameters capture digits; others capture any text (lazily).
    Whitespace runs match any whitespace; matching is case-insensitive.
    """
    props = (parameters or {}).get("properties", {})
    pieces: list[str] = []
    seen: set[str] = set()
    position = 0
    for m in _PLACEHOLDER.finditer(when):
        pieces.append(_literal(when[position : m.start()]))
        name = m.group(1)
        if name in seen:
            pieces.append(f"(?P={name})")
        else:
            seen.add(name)
            kind = props.get(name, {}).get("type")
            if kind == "integer":
                pieces.append(rf"(?P<{name}>-?\d+)")
            elif kind == "number":
                pieces.append(rf"(?P<{name}>-?\d+(?:\.\d+)?)")
            else:
                pieces.append(rf"(?P<{name}>.+?)")
        position = m.end()
    pieces.append(_literal(when[position:]))
    return re.compile("".join(pieces), re.IGNORECASE | re.DOTALL)


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", text))


def bind_from_text(skill: "Skill", text: str, templates: Sequence[str] = ()) -> dict[str, Any] | None:
    """Arguments for ``skill`` read off ``text`` by matching its ``when`` or one of
    ``templates`` (its masked example tasks, which keep ``{placeholders}`` where a learned
    ``when`` names its inputs in words); None if no fit.

    Every required parameter must be bound; values are converted to the schema's type.
    """
    match = None
    for template in (skill.when, *templates):
        match = when_regex(template, skill.parameters).fullmatch(text.strip())
        if match is None and template.endswith("."):  # a stored example ends its sentence
            match = when_regex(template[:-1], skill.parameters).fullmatch(text.strip())
        if match is not None:
            break
    if not match:
        return None
    props = (skill.parameters or {}).get("properties", {})
    args: dict[str, Any] = {}
    for name, raw in match.groupdict().items():
        kind = props.get(name, {}).get("type")
        if kind == "integer":
            args[name] = int(raw)
        elif kind == "number":
            args[name] = float(raw)
        elif kind == "boolean":
            args[name] = raw.lower() in ("true", "yes", "1")
        else:
            args[name] = raw
    required = (skill.parameters or {}).get("required", [])
    if any(name not in args for name in required):
        return None
    return {name: value for name, value in args.items() if name in props}


def bind_by_name(skill: "Skill", params: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments for ``skill`` taken from ``params`` by parameter name; None if a required one is missing."""
    schema = skill.parameters or {}
    props = schema.get("properties", {})
    if any(name not in params for name in schema.get("required", [])):
        return None
    return {name: params[name] for name in props if name in params}
