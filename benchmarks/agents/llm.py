"""An LLM agent: a chat model solving tasks with the world's tools through the ``openai`` client.

Three conditions compare what a skill library gives a model:

* ``none``: no skills; the model has only the world's primitive tools;
* ``prompt``: the ``k`` best skills fetched for the task's instruction are rendered into the
  system prompt (name, ``when``, parameters, code) as suggestions the model may deviate from;
* ``tools``: as ``prompt``, and each fetched code skill is also offered as a function tool
  (its name, its parameters' JSON Schema) unless its name is not a valid function name or
  is a world tool's; a call to it runs the skill in the sandbox through
  :meth:`Session.run_skill` (one decision, however many tool calls it makes) and is
  answered with the skill's return value.

The system prompt describes the world with its ``World.description`` (text written for the
model), never with developer docstrings. A fetch that gave skills counts as a fetch hit.

The loop: ``[system, user(instruction)]`` -> ``chat.completions.create(tools=...)`` -> every
tool call is executed through the :class:`Session` and answered with a ``tool`` message
(the JSON result, or ``"Error: ..."``) -> again, until the model answers without tool calls
(its content is the episode's result) or ``max_turns`` model calls have been made. Every
answered model call is counted with :meth:`Session.count_llm` (tokens from the response's
``usage``; 0 when the server sends none). Tool results are untrusted: they reach the
model only as tool-message content.

Configuration comes from the arguments or from ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``SKILL_LIBRARY_MODEL``. A failure to reach the model (connection, HTTP status, timeout)
ends the episode with ``stopped="llm error: ..."``; ``solve`` never raises for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import jinja2
import openai

from benchmarks.agents.base import Agent, BudgetExceeded, Episode, Session
from benchmarks.worlds.base import Task, World
from skill_library.errors import LLMError
from skill_library.llm_endpoint import endpoint_configured, model_name, openai_client

if TYPE_CHECKING:
    from skill_library import Skill, SkillLibrary

Mode = Literal["none", "prompt", "tools"]
CONDITIONS: tuple[str, ...] = ("none", "prompt", "tools")

PROMPTS = Path(__file__).with_name("prompts")
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the API accepts as a tool name


class LLMNotConfigured(LLMError, ValueError):
    """No endpoint or key was given or found in the environment."""


def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS)),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def world_description(world: World) -> str:
    """What the system prompt says about ``world``: its ``description`` (written for the
    model; class docstrings are developer text and never reach it), whitespace-normalized.
    Empty when the world has none; the prompt then names the world and its tools only."""
    text = getattr(world, "description", "")
    return " ".join(text.split()) if isinstance(text, str) else ""


class LLMAgent(Agent):
    """Solves tasks in any world with a chat model's tool calls; see the module docstring."""

    name = "llm"
    worlds = None

    def __init__(
        self,
        mode: Mode = "none",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        client: openai.OpenAI | None = None,
        k: int = 2,
        max_turns: int = 20,
        temperature: float | None = 0,
        timeout: float = 60.0,
        max_tool_calls: int = 400,
        max_decisions: int | None = None,
        max_result_chars: int = 16000,
    ) -> None:
        if mode not in CONDITIONS:
            raise ValueError(f"unknown mode {mode!r}; modes are: {', '.join(CONDITIONS)}")
        if k < 1:
            raise ValueError("k must be at least 1")
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.mode: Mode = mode
        self.k = k
        self.max_turns = max_turns
        self.temperature = temperature
        self.max_tool_calls = max_tool_calls
        self.max_decisions = max_decisions
        self.max_result_chars = max_result_chars
        self.model = model_name(model)
        if client is None:
            if not (base_url or api_key or endpoint_configured()):
                raise LLMNotConfigured(
                    "no LLM endpoint configured for the llm agent: pass base_url/api_key "
                    "or set OPENAI_BASE_URL or OPENAI_API_KEY"
                )
            client = openai_client(base_url, api_key, timeout=timeout)
        self.client = client
        self._system = _templates().get_template("system.j2")

    @staticmethod
    def configured() -> bool:
        """True when the environment names an LLM endpoint or key (the agent can be built)."""
        return endpoint_configured()

    # -- prompt and tools --------------------------------------------------------------------

    def system_prompt(self, world: World, skills: list["Skill"], callable_names: set[str]) -> str:
        """The system message: the world, and (in ``prompt``/``tools`` mode) the skills."""
        return self._system.render(
            world_name=world.name,
            world_description=world_description(world),
            callable=bool(callable_names),
            skills=[
                {
                    "name": s.name,
                    "when": s.when,
                    "description": " ".join((s.description or "").split())
                    if s.kind == "code"
                    else s.description.strip(),
                    "parameters": _to_json(s.parameters or {"type": "object", "properties": {}}),
                    "code": (s.code or "").strip("\n"),
                    "successes": s.successes,
                    "failures": s.failures,
                    "reliability": s.reliability,
                    "callable": s.name in callable_names,
                }
                for s in skills
            ],
        )

    @staticmethod
    def skill_tool(skill: "Skill") -> dict[str, Any]:
        """``skill`` as an OpenAI function tool."""
        description = f"Skill (a tested multi-step procedure). Use when: {skill.when}"
        if skill.description:
            description += f"\n{' '.join(skill.description.split())}"
        return {
            "type": "function",
            "function": {
                "name": skill.name,
                "description": description,
                "parameters": skill.parameters or {"type": "object", "properties": {}},
            },
        }

    # -- solving -----------------------------------------------------------------------------

    def solve(self, task: Task, world: World, library: "SkillLibrary | None" = None) -> Episode:
        s = Session(
            task, world, library, agent=self.name,
            max_tool_calls=self.max_tool_calls, max_decisions=self.max_decisions,
        )
        skills: list[Skill] = []
        if self.mode != "none" and library is not None:
            skills = [m.skill for m in s.fetch(task.instruction, k=self.k)]
        tools = world.openai_tools()
        world_tools = {t["function"]["name"] for t in tools}
        runnable: dict[str, Skill] = {}
        if self.mode == "tools":
            for skill in skills:
                if (
                    skill.kind == "code"
                    and skill.code
                    and _FUNCTION_NAME.match(skill.name)
                    and skill.name not in world_tools
                ):
                    runnable[skill.name] = skill
                    tools.append(self.skill_tool(skill))
        if skills:
            s.hit()  # the fetch put skills in front of the model
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt(world, skills, set(runnable))},
            {"role": "user", "content": task.instruction},
        ]
        try:
            for _ in range(self.max_turns):
                message = self._complete(s, messages, tools)
                calls = list(message.tool_calls or [])
                if not calls:
                    return s.finish(result=message.content)
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.content,
                        "tool_calls": [_call_dict(c) for c in calls],
                    }
                )
                for call in calls:
                    content = self._execute(s, task, call, runnable)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        except _LLMFailure as exc:
            return s.finish(stopped=f"llm error: {exc}")
        except BudgetExceeded as exc:
            return s.finish(stopped=str(exc))
        return s.finish(stopped=f"no final answer after {self.max_turns} model calls")

    def _complete(self, s: Session, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        """One model call, counted in the episode; returns the assistant message."""
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if tools:
            options["tools"] = tools
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, **options  # type: ignore[arg-type]
            )
        except openai.APIStatusError as exc:
            raise _LLMFailure(f"HTTP {exc.status_code} from {self.client.base_url}: {exc.message}") from exc
        except openai.APITimeoutError as exc:
            raise _LLMFailure(f"timed out waiting for {self.client.base_url}") from exc
        except openai.APIConnectionError as exc:
            raise _LLMFailure(f"cannot reach {self.client.base_url}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise _LLMFailure(f"{type(exc).__name__}: {exc}") from exc
        s.count_llm(getattr(response, "usage", None))
        if not response.choices:
            raise _LLMFailure("the model's response has no choices")
        return response.choices[0].message

    def _execute(self, s: Session, task: Task, call: Any, runnable: dict[str, "Skill"]) -> str:
        """Run one tool call of the model; return the tool message's content."""
        function = getattr(call, "function", None)
        if function is None:
            kind = getattr(call, "type", "?")
            return f"Error: unsupported tool call of type {kind!r}; call a function tool"
        name = function.name
        try:
            arguments = json.loads(function.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments of {name} are not valid JSON ({exc.msg}); send a JSON object"
        if not isinstance(arguments, dict):
            return f"Error: the arguments of {name} must be a JSON object, got {_to_json(arguments)}"
        if name in runnable:
            use = s.run_skill(runnable[name], arguments, text=task.instruction)
            if not use.ok:
                return f"Error: skill {name} failed: {use.error}"
            return self._clip(_to_json(use.value))
        result, error = s.call(name, arguments)
        if error is not None:
            return self._clip(f"Error: {error}")
        return self._clip(_to_json(result))

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_result_chars:
            return text
        hidden = len(text) - self.max_result_chars
        return text[: self.max_result_chars] + f"\n... [{hidden} more characters not shown]"


class _LLMFailure(Exception):
    """The model could not be reached or answered unusably."""


def _call_dict(call: Any) -> dict[str, Any]:
    """A tool call of the model's reply as a message dict to send back."""
    function = getattr(call, "function", None)
    if function is None:  # a custom (non-function) tool call
        return call.model_dump(exclude_none=True)
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": function.name, "arguments": function.arguments or "{}"},
    }


def make_llm_agent(condition: str, **options: Any) -> LLMAgent:
    """The LLM agent for a benchmark condition: ``none``, ``prompt`` or ``tools``."""
    if condition not in CONDITIONS:
        if condition == "skills":
            raise ValueError(
                "the llm agent has no 'skills' condition: use 'prompt' (skills in the system "
                "prompt) or 'tools' (skills also as callable tools); its conditions are: "
                f"{', '.join(CONDITIONS)}, e.g. --conditions none,prompt,tools"
            )
        raise ValueError(
            f"unknown condition {condition!r} for the llm agent; conditions are: {', '.join(CONDITIONS)}"
        )
    return LLMAgent(condition, **options)  # type: ignore[arg-type]
