"""The library's data model: tool calls, traces, skills and the results of library calls.

Everything here is a pydantic v2 model. Skills are immutable (frozen): a change is a new
version, stored as a new record.
"""

from __future__ import annotations

import json
import keyword
import re
import uuid
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from skill_library import signature
from skill_library.errors import TraceError
from skill_library.reliability import laplace_reliability as laplace_reliability  # re-exported

SkillKind = Literal["code", "instruction"]
#: The lifecycle of one version (skill_library.governance.lifecycle): ``draft`` (proposed,
#: never fetched), ``evaluated`` (passed an evaluation or replay verification),
#: ``approved``, ``canary`` (served to a share of sessions), ``active`` (what fetch serves),
#: ``superseded`` (an active version replaced by a newer one), ``retired`` (taken out by
#: someone), ``rejected`` (refused by a reviewer, kept for audit) and ``quarantined`` (an
#: active skill whose recent runs fail: skill_library.patterns.reliability) and ``suspended``
#: (an active version a tool schema change took out of fetch until it is re-verified:
#: skill_library.governance.tool_schemas).
SkillStatus = Literal[
    "draft", "evaluated", "approved", "canary", "active", "superseded", "retired", "rejected",
    "quarantined", "suspended",
]
CallKind = Literal["tool", "skill"]

# a leading letter: the sandbox refuses names that start with an underscore
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

#: Largest JSON size (bytes) of one stored trace value (a parameter, a call's arguments or
#: result, the final result, the task text); a larger one is stored as a marker
#: ``{"truncated": true, "original_bytes": N, "preview": "..."}`` (text: a cut with a note).
TRACE_VALUE_MAX_BYTES = 64 * 1024
#: How many characters of a truncated value the marker keeps as a preview.
TRUNCATED_PREVIEW_CHARS = 200


def cap_value(value: Any, max_bytes: int = TRACE_VALUE_MAX_BYTES) -> Any:
    """``value`` itself when its JSON fits in ``max_bytes``, else a truncation marker."""
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
        if size <= max_bytes:
            return value
        return f"{value[:max_bytes // 4]}... [truncated: {size} bytes]"
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return value
    return {"truncated": True, "original_bytes": size, "preview": text[:TRUNCATED_PREVIEW_CHARS]}


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


def new_id() -> str:
    """A fresh random identifier (32 hex digits)."""
    return uuid.uuid4().hex


class ToolCall(BaseModel):
    """One call an agent made: a tool (or, with ``kind='skill'``, a whole skill)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    kind: CallKind = "tool"
    duration_ms: float | None = None

    @property
    def ok(self) -> bool:
        """True when the call returned without an error."""
        return self.error is None


class OutcomeKind(str, Enum):
    """What an outcome says about a run, for skills and procedures alike (docs/outcomes.md).

    Only ``success`` and ``failure`` are the skill's own record: they are what Laplace
    reliability and the quarantine rule count. ``misuse`` (the caller passed a value a
    read-only lookup refused: not found, invalid), ``not_applicable`` (a precondition did
    not hold, nothing was changed) and ``wrong_skill`` (the agent fetched the wrong
    workflow: counted against retrieval) are kept and shown, never held against the skill.
    """

    SUCCESS = "success"
    FAILURE = "failure"
    MISUSE = "misuse"
    NOT_APPLICABLE = "not_applicable"
    WRONG_SKILL = "wrong_skill"

    def __str__(self) -> str:
        return self.value

    @property
    def counted(self) -> bool:
        """Whether this kind is part of the skill's own record (reliability, quarantine)."""
        return self in (OutcomeKind.SUCCESS, OutcomeKind.FAILURE)

    @classmethod
    def of(cls, value: "OutcomeKind | str | bool") -> "OutcomeKind":
        """The kind ``value`` names: a kind, its name (``"misuse"``) or a bool (True: success,
        False: failure). ValueError naming the kinds otherwise."""
        if isinstance(value, bool):
            return cls.SUCCESS if value else cls.FAILURE
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower().replace("-", "_"))
            except ValueError:
                pass
        raise ValueError(
            f"unknown outcome kind {value!r}; use one of {', '.join(k.value for k in cls)} (or True/False)"
        )


#: the kinds that count toward a skill's reliability and quarantine (its own record)
COUNTED_KINDS = frozenset({OutcomeKind.SUCCESS.value, OutcomeKind.FAILURE.value})

#: the error type a run stops with when a precondition does not hold (``not_applicable``)
NOT_APPLICABLE_ERROR = "NotApplicable"


class Outcome(BaseModel):
    """A verdict on a trace: its kind (:class:`OutcomeKind`), whether it succeeded, who
    judged it, on what evidence, and why (``reason``, one line, no personal values).

    ``success`` and ``kind`` agree: give either (``Outcome(success=False)`` is a failure,
    ``Outcome(kind="misuse")`` is not a success).
    """

    success: bool
    kind: OutcomeKind = OutcomeKind.FAILURE
    verifier: str | None = None
    evidence: Any = None
    reason: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _kind_and_success_agree(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        kind = data.get("kind")
        success = data.get("success")
        if kind is None:
            if success is None:
                raise ValueError("an outcome needs success (True/False) or a kind")
            data["kind"] = OutcomeKind.of(bool(success))
        else:
            data["kind"] = OutcomeKind.of(kind)
            implied = data["kind"] is OutcomeKind.SUCCESS
            if success is None:
                data["success"] = implied
            elif bool(success) != implied:
                raise ValueError(f"success={success} contradicts kind {data['kind'].value!r}")
        return data


class Trace(BaseModel):
    """A task, the ordered tool calls made to solve it, the final result and a verdict.

    ``id``: given, or the hash of the content (:meth:`content_id`), so the same trace built
    twice (from a file, a transcript) has one identity and learning it twice adds nothing.
    """

    id: str = Field(default_factory=new_id, min_length=1)
    task: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    calls: list[ToolCall] = Field(default_factory=list)
    result: Any = None
    outcome: Outcome | None = None
    source: str = "agent"
    created_at: datetime = Field(default_factory=utc_now)

    @field_validator("task")
    @classmethod
    def _task_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("task must not be blank")
        return value

    @model_validator(mode="after")
    def _content_identity(self) -> "Trace":
        # no id given: the trace is known by its content (the same trace twice is one trace)
        if "id" not in self.model_fields_set:
            object.__setattr__(self, "id", self.content_id())
        return self

    def capped(self, max_bytes: int = TRACE_VALUE_MAX_BYTES) -> "Trace":
        """This trace with every value larger than ``max_bytes`` replaced by a marker
        holding its original size (see :data:`TRACE_VALUE_MAX_BYTES`)."""
        calls = [
            c.model_copy(
                update={
                    "arguments": {k: cap_value(v, max_bytes) for k, v in c.arguments.items()},
                    "result": cap_value(c.result, max_bytes),
                    "error": cap_value(c.error, max_bytes) if c.error is not None else None,
                }
            )
            for c in self.calls
        ]
        outcome = self.outcome
        if outcome is not None:
            outcome = outcome.model_copy(update={"evidence": cap_value(outcome.evidence, max_bytes)})
        return self.model_copy(
            update={
                "task": cap_value(self.task, max_bytes),
                "params": {k: cap_value(v, max_bytes) for k, v in self.params.items()},
                "calls": calls,
                "result": cap_value(self.result, max_bytes),
                "outcome": outcome,
            }
        )

    def content_id(self) -> str:
        """The identity of this trace's content: a hash (32 hex digits) of its task, params,
        calls (name, arguments, result, error, kind) and outcome (kind, verifier). Learning
        gives a trace without an ``id`` this id, so the same trace learned twice is known
        (``duplicate``) instead of counted twice."""
        import hashlib

        body = {
            "task": self.task,
            "params": self.params,
            "calls": [[c.name, c.arguments, c.result, c.error, c.kind] for c in self.calls],
            "result": self.result,
            "outcome": None if self.outcome is None else [self.outcome.kind.value, self.outcome.verifier],
        }
        text = json.dumps(body, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def identified(self) -> "Trace":
        """This trace with :meth:`content_id` as its id when it was given none."""
        if "id" in self.model_fields_set:
            return self
        return self.model_copy(update={"id": self.content_id()})

    @property
    def verified_success(self) -> bool:
        """True when a named verifier judged this trace a success."""
        return bool(self.outcome and self.outcome.success and self.outcome.verifier)

    @classmethod
    def from_openai_messages(
        cls,
        messages: list[dict[str, Any]],
        *,
        task: str,
        outcome: Outcome | dict[str, Any] | None,
        params: dict[str, Any] | None = None,
        source: str = "openai",
    ) -> "Trace":
        """Build a trace from an OpenAI chat transcript.

        Assistant messages' ``tool_calls`` become calls, matched to the ``tool`` messages
        that answer them by ``tool_call_id``. A tool message whose content starts with
        ``"Error:"`` (or is a JSON object with only an ``error`` key) marks the call as
        failed. Raises :class:`TraceError` naming the message index for a dangling or
        unknown tool_call id, non-JSON arguments, or a malformed message.
        """
        if not isinstance(messages, list):
            raise TraceError("messages must be a list of chat messages")
        pending: dict[str, tuple[int, ToolCall]] = {}
        order: list[str] = []
        answered: dict[str, ToolCall] = {}
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise TraceError(f"message {index} is not a chat message with a role")
            role = message["role"]
            if role == "assistant":
                for call in message.get("tool_calls") or []:
                    try:
                        call_id = call["id"]
                        function = call["function"]
                        name = function["name"]
                        raw_args = function.get("arguments") or "{}"
                    except (KeyError, TypeError, AttributeError):
                        raise TraceError(
                            f"message {index}: tool call lacks id, function or name"
                        ) from None
                    if not isinstance(name, str) or not name:
                        raise TraceError(
                            f"message {index}: tool call {call_id!r} has no function name"
                        )
                    try:
                        arguments = json.loads(raw_args) if isinstance(raw_args, str) else raw_args
                    except json.JSONDecodeError as exc:
                        raise TraceError(
                            f"message {index}: arguments of tool call {call_id!r} ({name}) "
                            f"are not JSON: {exc.msg}"
                        ) from None
                    if not isinstance(arguments, dict):
                        raise TraceError(
                            f"message {index}: arguments of tool call {call_id!r} ({name}) "
                            "must be a JSON object"
                        )
                    if call_id in pending or call_id in answered:
                        raise TraceError(f"message {index}: duplicate tool_call id {call_id!r}")
                    pending[call_id] = (index, ToolCall(name=name, arguments=arguments))
                    order.append(call_id)
            elif role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise TraceError(
                        f"message {index}: tool message answers unknown tool_call id {call_id!r}"
                    )
                _, call = pending.pop(call_id)
                result, error = _tool_content(message.get("content"))
                answered[call_id] = call.model_copy(update={"result": result, "error": error})
        if pending:
            call_id, (index, _) = next(iter(pending.items()))
            raise TraceError(
                f"message {index}: tool_call id {call_id!r} has no tool message answering it"
            )
        if isinstance(outcome, dict):
            outcome = Outcome(**outcome)
        return cls(
            task=task,
            params=params or {},
            calls=[answered[i] for i in order],
            outcome=outcome,
            source=source,
        )


def _tool_content(content: Any) -> tuple[Any, str | None]:
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        return content, None
    if content.startswith("Error:"):
        return None, content[len("Error:"):].strip()
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return content, None
    if isinstance(value, dict) and set(value) == {"error"}:
        return None, str(value["error"])
    return value, None


#: the comparisons a precondition can make (skill_library.induction.preconditions)
ConditionOp = Literal["eq", "in", "len_eq"]


class Condition(BaseModel):
    """One precondition of a skill version, as data (never code): the value at ``path`` in
    the result of the ``occurrence``-th (0-based) call of the read-only tool ``tool``, made
    before the run's first state-changing call (``occurrence=-1``: its last call given a
    value that first state-changing call is also given: the order it cancels), compared by
    ``op`` with ``value`` (``eq``:
    equal; ``in``: one of the list ``value``; ``len_eq``: a list or object of that many
    items). Mined from contrasting traces (docs/learning.md, "Preconditions")."""

    model_config = ConfigDict(frozen=True)

    tool: str = Field(min_length=1)
    occurrence: int = Field(default=0, ge=-1)
    path: list[str] = Field(default_factory=list)
    op: ConditionOp = "eq"
    value: Any = None
    #: the look-alike skill this condition tells the version apart from (the first of ``against_all``)
    against: str | None = None
    #: every look-alike skill it tells the version apart from (one condition can tell it from
    #: several: "the status is locked" from a password reset and from a re-enable alike)
    against_all: list[str] = Field(default_factory=list)


class Provenance(BaseModel):
    """Where a skill version came from; ``preconditions`` are re-mined as its look-alikes
    gain traces (derived data, not part of what makes the version)."""

    trace_ids: list[str] = Field(default_factory=list)
    generalizer: str = "hand-written"
    model: str | None = None
    created_by: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    usage: dict[str, int] = Field(default_factory=dict)
    preconditions: list[Condition] = Field(default_factory=list)


class Skill(BaseModel):
    """One immutable version of a skill.

    ``kind='code'`` skills carry the source of one top-level function called ``name``;
    ``kind='instruction'`` skills are text procedures whose steps are in ``description``.
    ``successes``/``failures`` are the outcome counts of this version.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    version: int = Field(default=1, ge=1)
    kind: SkillKind = "code"
    when: str = Field(min_length=1)
    description: str = ""
    code: str | None = None
    parameters: dict[str, Any] | None = None
    tools: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    status: SkillStatus = "active"
    provenance: Provenance = Field(default_factory=Provenance)
    successes: int = Field(default=0, ge=0)
    failures: int = Field(default=0, ge=0)

    @field_validator("name")
    @classmethod
    def _name_is_identifier(cls, value: str) -> str:
        if not _NAME_RE.match(value) or keyword.iskeyword(value):
            raise ValueError(f"{value!r} is not a snake_case Python identifier")
        return value

    @field_validator("when")
    @classmethod
    def _when_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("when must not be blank")
        return value

    @field_validator("parameters")
    @classmethod
    def _parameters_is_object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if value.get("type") != "object":
            raise ValueError('parameters must be a JSON Schema with "type": "object"')
        if not isinstance(value.get("properties", {}), dict):
            raise ValueError("parameters.properties must be an object")
        return value

    @field_validator("depends_on", "tools")
    @classmethod
    def _names_are_strings(cls, value: list[str]) -> list[str]:
        for item in value:
            if not isinstance(item, str) or not item.isidentifier():
                raise ValueError(f"{item!r} is not a valid identifier")
        return value

    @model_validator(mode="after")
    def _code_matches_kind(self) -> "Skill":
        if self.kind == "instruction":
            if self.code:
                raise ValueError("code: instruction skills carry no code")
            if not self.description.strip():
                raise ValueError("description: instruction skills need the procedure text")
            if self.parameters is None:
                object.__setattr__(self, "parameters", {"type": "object", "properties": {}})
            return self
        if not self.code or not self.code.strip():
            raise ValueError("code: a code skill needs the source of its function")
        try:
            func = signature.find_function(self.code, self.name)
            derived = signature.parameters_schema(func)
        except ValueError as exc:
            raise ValueError(f"code: {exc}") from None
        if self.parameters is None:
            object.__setattr__(self, "parameters", derived)
        else:
            declared = set(self.parameters.get("properties", {}))
            actual = set(derived["properties"])
            if declared != actual:
                raise ValueError(
                    f"parameters: schema properties {sorted(declared)} do not match the "
                    f"arguments of {self.name}() {sorted(actual)}"
                )
        if not self.description:
            object.__setattr__(self, "description", signature.docstring(func))
        return self

    @property
    def outcomes(self) -> int:
        """How many outcomes have been recorded for this version."""
        return self.successes + self.failures

    @property
    def reliability(self) -> float:
        """Laplace-smoothed success rate ``(successes + 1) / (n + 2)``."""
        return laplace_reliability(self.successes, self.failures)

    @classmethod
    def from_function(
        cls,
        code: str,
        *,
        when: str,
        name: str | None = None,
        infer_tools: bool = False,
        **fields: Any,
    ) -> "Skill":
        """A code skill from the source of one function; name and parameters come from it.

        When ``name`` is omitted the source must define exactly one top-level function.
        ``infer_tools=True`` (and no ``tools=``) declares as tools the names the code calls
        but does not define, import or get from builtins, less ``depends_on``.
        """
        if name is None:
            functions = signature.top_level_functions(code)
            if len(functions) != 1:
                found = ", ".join(f.name for f in functions)
                raise ValueError(
                    f"code: expected exactly one top-level function, found {len(functions)}"
                    f"{f' ({found})' if found else ''}; pass name= (the CLI's --name) to choose one"
                )
            name = functions[0].name
        if infer_tools and fields.get("tools") is None:
            skills = set(fields.get("depends_on") or ())
            fields["tools"] = [n for n in signature.free_calls(code) if n not in skills]
        fields = {k: v for k, v in fields.items() if v is not None}
        return cls(name=name, code=code, when=when, **fields)


class Example(BaseModel):
    """One example task of a skill: the task text with the trace's values masked.

    ``params`` are the values the trace bound (kept with the records, never embedded);
    ``indexed`` says whether the text is one of the skill's fetchable index entries (at
    most a capped, diverse subset of the examples is).
    """

    trace_id: str
    text: str
    params: dict[str, Any] = Field(default_factory=dict)
    indexed: bool = True
    created_at: datetime = Field(default_factory=utc_now)


class ScoreBreakdown(BaseModel):
    """How one fetched skill's ``score`` was made (``fetch(..., explain=True)``;
    skill_library.ranking): the terms ``similarity + value_fit + evidence + bindability +
    specificity + reliability + intent`` add up to ``score``. Every term but ``similarity`` is a
    penalty (<= 0): a skill that fits perfectly keeps its similarity."""

    #: the kind of the best-scoring index entry: ``when``, ``example`` or ``prototype``
    entry: str
    #: the best cosine similarity of the task to each kind of this skill's entries among
    #: the candidates the index returned (``{"when": 0.41, "example": 0.62}``)
    by_entry: dict[str, float] = Field(default_factory=dict)
    #: the best entry's cosine similarity
    similarity: float
    #: value fit's penalty on that entry (skill_library.value_fit)
    value_fit: float = 0.0
    #: the evidence penalty: fewer verified successes, a larger one (log-evidence prior)
    evidence: float = 0.0
    #: the bindability penalty: share of required parameters the caller cannot supply
    bindability: float = 0.0
    #: the specificity penalty: more state-changing tools than the leanest candidate
    specificity: float = 0.0
    #: the reliability penalty: Laplace reliability below 1
    reliability: float = 0.0
    #: the intent penalty: the task rules the skill out (skill_library.intent; ``conflict`` says why)
    intent: float = 0.0
    conflict: str | None = None
    #: the sum of the terms above
    score: float
    #: the numbers the terms came from: successes, required parameters, acting tools
    successes: int = 0
    required: list[str] = Field(default_factory=list)
    acting_tools: int = 0


class Match(BaseModel):
    """A fetched skill with the numbers that ranked it.

    ``score`` is the ranking score (skill_library.ranking: similarity less the value-fit,
    evidence, bindability, specificity and reliability penalties); ``explanation`` breaks
    it down when fetch was called with ``explain=True``. ``missing`` names the required
    parameters the caller cannot supply (neither in ``args`` nor visible in the task by
    their value shapes); ``ambiguous`` is set on the matches too close to call."""

    skill: Skill
    similarity: float
    reliability: float
    score: float
    #: added by next-skill prefetch (the subject's usage pattern), not matched to the task
    prefetch: bool = False
    #: too close to call against another returned match (skill_library.abstention)
    ambiguous: bool = False
    #: required parameters the task and ``args`` cannot supply
    missing: list[str] = Field(default_factory=list)
    #: the score's terms (``fetch(..., explain=True)``), else None
    explanation: ScoreBreakdown | None = None
    #: ``fetch(..., read_tools=...)``: whether its preconditions hold on the caller's reads
    #: (None: not checked, or no preconditions); ``applies_reason`` says why not
    applies: bool | None = None
    applies_reason: str | None = None


class AddResult(BaseModel):
    """What ``SkillLibrary.add`` did: ``added`` a version, or found a ``duplicate``."""

    status: Literal["added", "duplicate"]
    skill: Skill | None = None
    duplicate_of: str | None = None
    similarity: float | None = None

    @property
    def added(self) -> bool:
        """True when a new version was stored."""
        return self.status == "added"


class VerificationReport(BaseModel):
    """The result of re-executing a candidate skill against its trace."""

    passed: bool
    message: str = ""
    expected_calls: list[ToolCall] = Field(default_factory=list)
    actual_calls: list[ToolCall] = Field(default_factory=list)
    first_divergence: int | None = None
    value: Any = None


class LearnResult(BaseModel):
    """What ``SkillLibrary.learn`` did with a trace.

    ``saved``: a new skill; ``merged``: the trace is evidence for an existing skill of the
    same workflow (one success on its active version, the trace among its examples);
    ``revised``: a new version that replays every example trace of the workflow;
    ``held``: stored but waiting for approval; ``duplicate``: an equivalent skill exists
    and nothing was stored; ``rejected``: nothing stored, ``reasons`` say why;
    ``forgotten``: the trace was erased by ``forget(subject)`` and is never learned again.

    A compound trace (several workflows in one task: :mod:`skill_library.induction.parts`)
    is learned as its parts: ``parts`` holds one result per part, and the whole's
    ``status`` and ``skill`` are those of its first part that stored something (else of its
    first part).
    """

    status: Literal["saved", "merged", "revised", "held", "duplicate", "rejected", "forgotten"]
    skill: Skill | None = None
    reasons: list[str] = Field(default_factory=list)
    report: VerificationReport | None = None
    duplicate_of: str | None = None
    parts: list["LearnResult"] = Field(default_factory=list)


class RunError(BaseModel):
    """Why a skill run failed: the exception type, its message and the line in the skill."""

    type: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.type}: {self.message}{where}"


class SkillRun(BaseModel):
    """The result of running a skill in the sandbox, with the calls it made as a trace."""

    name: str
    version: int
    ok: bool
    value: Any = None
    error: RunError | None = None
    limit: str | None = None
    stdout: str = ""
    duration_ms: float = 0.0
    trace: Trace

    @property
    def outcome(self) -> Outcome | None:
        """The outcome judged at run time (None: the run succeeded and no verifier judged it;
        the caller reports it with ``feedback``)."""
        return self.trace.outcome

    @property
    def outcome_kind(self) -> OutcomeKind | None:
        """The run's :class:`OutcomeKind` (``misuse``, ``not_applicable``, ``failure``, ...)."""
        return None if self.trace.outcome is None else self.trace.outcome.kind

    @property
    def outcome_reason(self) -> str | None:
        """Why the run got its outcome kind, in one line (None when not judged)."""
        return None if self.trace.outcome is None else self.trace.outcome.reason
