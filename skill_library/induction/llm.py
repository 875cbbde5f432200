"""The LLM generalizer: ask a chat model to write the skill, then check and verify it.

The model is reached only through the official ``openai`` client (any OpenAI-compatible
endpoint). The prompt is rendered from the jinja2 templates in ``prompts/``; tool results
are truncated and fenced between random ``UNTRUSTED`` markers as data, not instructions.
The reply must be a JSON object ``{name, when, description, parameters, code,
example_args}``. It is validated (identifier, sandbox policy, signature vs. schema, allowed
calls, no text copied from tool results) and replayed through ``verify``; every problem is
sent back to the model as a follow-up message, at most ``max_retries`` times.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from skill_library import privacy, signature
from skill_library.errors import GeneralizationError, LLMError
from skill_library.induction import describe
from skill_library.induction.candidate import Candidate, Verify
from skill_library.induction.validation import (
    allowed_names,
    complete_candidate,
    derived_parameters_safe,
    validate_candidate,
)
from skill_library.llm_endpoint import endpoint_configured, model_name, openai_client
from skill_library.models import Skill, Trace

if TYPE_CHECKING:  # pragma: no cover - importing openai takes ~2 s: done on first use
    import openai

PROMPTS = Path(__file__).with_name("prompts")
_REQUIRED = ("name", "when", "parameters", "code")
_FENCE_RE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS)),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
    )


def _unfence(text: str) -> str:
    match = _FENCE_RE.match(text)
    return match.group(1) if match else text


def _clip(value: Any, limit: int) -> tuple[str, bool]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n... [{len(text) - limit} more characters not shown]", True


def skill_signature(skill: Skill) -> str:
    """``name(count: int, item: str)`` for a code skill (its ``when`` alone otherwise)."""
    if skill.code:
        try:
            func = signature.find_function(skill.code, skill.name)
            return f"{skill.name}({ast.unparse(func.args)})"
        except ValueError:
            pass
    props = (skill.parameters or {}).get("properties", {})
    return f"{skill.name}({', '.join(props)})"


class LLMGeneralizer:
    """Generalizes a trace with a chat model through the ``openai`` client.

    Configuration comes from the arguments or, when omitted, from ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY`` and ``SKILL_LIBRARY_MODEL`` (default model ``gpt-4o-mini``).
    ``max_retries`` is the number of follow-up attempts after a rejected reply; the
    client's own HTTP retries are off, and connection or HTTP failures raise
    :class:`~skill_library.errors.LLMError` naming the endpoint.
    """

    name = "llm"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        client: "openai.OpenAI | None" = None,
        max_retries: int = 2,
        timeout: float = 30.0,
        max_result_chars: int = 2000,
        temperature: float | None = 0.0,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model_name(model)
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.temperature = temperature
        self.client = client if client is not None else openai_client(base_url, api_key, timeout=timeout)
        self.base_url = str(self.client.base_url).rstrip("/")
        self._templates = _environment()

    @staticmethod
    def configured() -> bool:
        """True when the environment names an LLM endpoint or key."""
        return endpoint_configured()

    @classmethod
    def from_env(cls, **options: Any) -> "LLMGeneralizer | None":
        """A generalizer configured from the environment, or None when nothing is set."""
        if not cls.configured():
            return None
        return cls(**options)

    # --- prompt ---------------------------------------------------------------------------

    def _calls(self, trace: Trace, nonce: str) -> list[dict[str, Any]]:
        calls = []
        for index, call in enumerate(trace.calls, start=1):
            if call.error is not None:
                text, truncated = _clip(call.error, self.max_result_chars)
                result = None
            else:
                result, truncated = _clip(call.result, self.max_result_chars)
                text = None
            calls.append({
                "index": index,
                "kind": call.kind,
                "name": call.name,
                "arguments": _clip(call.arguments, self.max_result_chars)[0],
                "result": (result or "").replace(nonce, "[marker removed]"),
                "error": None if text is None else text.replace(nonce, "[marker removed]"),
                "truncated": truncated,
            })
        return calls

    def revision_messages(
        self, traces: Sequence[Trace], related: Sequence[Skill] = (),
        tool_docs: Mapping[str, Any] | None = None,
    ) -> list[dict[str, str]]:
        """The messages asking for one skill that reproduces every trace of a workflow."""
        nonce = secrets.token_hex(6)
        tools: list[str] = []
        for trace in traces:
            tools.extend(t for t in allowed_names(trace)[0] if t not in tools)
        context = {
            "traces": [
                {"task": t.task, "params": t.params, "calls": self._calls(t, nonce)}
                for t in traces
            ],
            "nonce": nonce,
            "tools": tools,
            "tool_docs": _docs_of(tools, tool_docs),
            "related": [
                {"name": s.name, "when": s.when, "signature": skill_signature(s)} for s in related
            ],
        }
        return [
            {"role": "system", "content": self._templates.get_template("system.j2").render()},
            {"role": "user", "content": self._templates.get_template("revise.j2").render(**context)},
        ]

    def messages(self, trace: Trace, related: Sequence[Skill] = (),
                 tool_docs: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
        """The system and user messages asking for a skill from ``trace``."""
        nonce = secrets.token_hex(6)
        calls = self._calls(trace, nonce)
        result_text, result_truncated = _clip(trace.result, self.max_result_chars)
        result_text = result_text.replace(nonce, "[marker removed]")
        tools, _skills = allowed_names(trace)
        context = {
            "task": trace.task,
            "params": trace.params,
            "calls": calls,
            "nonce": nonce,
            "has_result": trace.result is not None,
            "result": result_text,
            "result_truncated": result_truncated,
            "tools": tools,
            "tool_docs": _docs_of(tools, tool_docs),
            "related": [
                {"name": s.name, "when": s.when, "signature": skill_signature(s)}
                for s in related
            ] + [
                {"name": name, "when": "an existing skill the agent called in this trace",
                 "signature": f"{name}({', '.join(args)})"}
                for name, args in _trace_skills(trace, related).items()
            ],
        }
        return [
            {"role": "system", "content": self._templates.get_template("system.j2").render()},
            {"role": "user",
             "content": self._templates.get_template("generalize.j2").render(**context)},
        ]

    # --- the model ------------------------------------------------------------------------

    def _complete(self, messages: list[dict[str, str]], usage: dict[str, int]) -> tuple[str, str]:
        import openai

        options: dict[str, Any] = {"response_format": {"type": "json_object"}}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, **options  # type: ignore[arg-type]
            )
        except openai.APITimeoutError as exc:
            raise LLMError(
                f"the LLM at {self.base_url} did not answer within {self.timeout:g} s"
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMError(
                f"cannot reach the LLM at {self.base_url}: {exc.message} (is the server "
                "running and the base URL right?)"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"the LLM at {self.base_url} answered HTTP {exc.status_code}: {exc.message}"
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"the LLM call to {self.base_url} failed: {exc}") from exc
        if response.usage is not None:
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                usage[key] = usage.get(key, 0) + int(getattr(response.usage, key, 0) or 0)
        if not response.choices:
            raise LLMError(f"the LLM at {self.base_url} answered without any choices")
        content = response.choices[0].message.content or ""
        return content, response.model or self.model

    # --- checking a reply -----------------------------------------------------------------

    def parse_reply(
        self, content: str, trace: Trace, related: Sequence[Skill], model: str
    ) -> tuple[Candidate | None, list[str]]:
        """A candidate from the model's reply, or the problems that prevent one."""
        if not content.strip():
            return None, ["the reply was empty; answer with a JSON object"]
        try:
            data = json.loads(_unfence(content.strip()))
        except json.JSONDecodeError as exc:
            return None, [
                f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno}); answer with one JSON object only"
            ]
        if not isinstance(data, dict):
            return None, [f"the reply must be a JSON object, not {type(data).__name__}"]
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            return None, [f"the reply lacks the key(s) {missing}"]
        problems = []
        for key in ("name", "when", "code"):
            if not isinstance(data[key], str):
                problems.append(f'"{key}" must be a string')
        if "description" in data and not isinstance(data["description"], str):
            problems.append('"description" must be a string')
        if not isinstance(data["parameters"], dict):
            problems.append('"parameters" must be a JSON Schema object')
        examples = data.get("example_args") or {}
        if not isinstance(examples, dict):
            problems.append('"example_args" must be an object of parameter values')
            examples = {}
        if problems:
            return None, problems
        candidate = Candidate(
            name=data["name"].strip(),
            when=data["when"].strip(),
            description=(data.get("description") or "").strip(),
            code=_unfence(data["code"]),
            parameters=data["parameters"],
            example_args={},
            generalizer=self.name,
            model=model,
        )
        func = derived_parameters_safe(candidate) or {}
        args = {}
        for param in func.get("properties", {}):
            if param in trace.params:  # the trace's own values win over the model's
                args[param] = trace.params[param]
            elif param in examples:
                args[param] = examples[param]
        candidate.example_args = args
        problems = validate_candidate(candidate, trace, related)
        required = list((candidate.parameters or {}).get("required", []) or func.get("required", []))
        personal = privacy.trace_values(trace.params, trace.calls)
        problems += [f'"when": {p}' for p in describe.description_problems(
            candidate.when, required, personal)]
        if problems:
            return candidate, problems
        return complete_candidate(candidate, trace, related), []

    # --- the loop -------------------------------------------------------------------------

    def generalize(
        self,
        trace: Trace,
        *,
        related: Sequence[Skill] = (),
        verify: Verify | None = None,
        read_only: frozenset[str] = frozenset(),
        tool_docs: Mapping[str, Any] | None = None,
    ) -> Candidate:
        """Ask the model for a skill, checking and repairing the reply up to
        ``max_retries`` times. Raises GeneralizationError listing every attempt's
        problems (the error's ``attempts`` and ``usage`` attributes hold them too), or
        LLMError when the endpoint fails."""
        if not any(c.ok for c in trace.calls):
            raise GeneralizationError("trace has no successful tool calls to learn from")
        return self._ask(self.messages(trace, related, tool_docs), trace, related, verify)

    def generalize_many(
        self, traces: Sequence[Trace], *, related: Sequence[Skill] = (),
        read_only: frozenset[str] = frozenset(),
        tool_docs: Mapping[str, Any] | None = None,
    ) -> Candidate:
        """One skill for several traces of a workflow (checked against the newest trace;
        the learner then replays it against every one)."""
        if not traces:
            raise GeneralizationError("revision needs at least one trace")
        return self._ask(self.revision_messages(traces, related, tool_docs), traces[-1], related,
                         None)

    def _ask(
        self,
        messages: list[dict[str, str]],
        trace: Trace,
        related: Sequence[Skill],
        verify: Verify | None,
    ) -> Candidate:
        usage: dict[str, int] = {}
        attempts: list[list[str]] = []
        total = self.max_retries + 1
        for attempt in range(1, total + 1):
            content, model = self._complete(messages, usage)
            candidate, problems = self.parse_reply(content, trace, related, model)
            if candidate is not None and not problems and verify is not None:
                report = verify(candidate)
                if not report.passed:
                    problems = [f"re-running the skill against the trace failed: {report.message}"]
            if candidate is not None and not problems:
                candidate.usage = dict(usage)
                return candidate
            attempts.append(problems)
            if attempt == total:
                break
            messages.append({"role": "assistant", "content": content})
            messages.append({
                "role": "user",
                "content": self._templates.get_template("repair.j2").render(
                    problems=problems, attempt=attempt, attempts=total
                ),
            })
        summary = "; ".join(
            f"attempt {n}: {' | '.join(p)}" for n, p in enumerate(attempts, start=1)
        )
        error = GeneralizationError(
            f"the model's skill was rejected {len(attempts)} time(s): {summary}"
        )
        error.attempts = attempts  # type: ignore[attr-defined]
        error.usage = usage  # type: ignore[attr-defined]
        raise error


def _trace_skills(trace: Trace, related: Sequence[Skill]) -> dict[str, list[str]]:
    """Skills the trace invoked as a whole that ``related`` does not describe, with the
    argument names they were called with."""
    known = {s.name for s in related}
    out: dict[str, list[str]] = {}
    for call in trace.calls:
        if call.kind == "skill" and call.name not in known:
            names = out.setdefault(call.name, [])
            names.extend(a for a in call.arguments if a not in names)
    return out


def _docs_of(tools: Sequence[str], docs: Mapping[str, Any] | None) -> dict[str, str]:
    """What each of ``tools`` does, from the declared docs (tools without one: left out)."""
    out = {}
    for name in tools:
        doc = (docs or {}).get(name)
        text = getattr(doc, "summary", "") if doc is not None else ""
        if text:
            out[name] = text
    return out
