"""Procedure extraction: a chat model reads a finished session and proposes procedures.

The model is reached through the real ``openai`` client (skill_library.llm_endpoint); the
prompt is rendered from ``templates/extract_*.j2``. The reply must be JSON
``{"procedures": [{title, trigger, description, confidence}]}`` with at most
:data:`MAX_PROCEDURES` items and a confidence of 0.60 / 0.70 / 0.85; an invalid reply is sent
back with its problems, at most ``max_retries`` times, then rejected with the reasons. Each
proposal must be a rule for the agent: :func:`fact_problem` refuses a fact about the user.
What passes is stored as a draft.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.errors import LLMError
from skill_library.procedures.core import TEMPLATES

if TYPE_CHECKING:
    import openai

    from skill_library.models import Skill

#: most procedures one session may propose
MAX_PROCEDURES = 3
#: the confidences the model may give: seen once, clearly demonstrated, explicitly requested
ALLOWED_CONFIDENCES = (0.60, 0.70, 0.85)
#: follow-up attempts after a rejected reply
EXTRACT_MAX_RETRIES = 2
#: longest message content put into the prompt (characters)
MAX_MESSAGE_CHARS = 2000
#: longest title / trigger / description accepted (characters)
MAX_FIELD_CHARS = {"title": 120, "trigger": 300, "description": 1000}

# A statement about the user (or a third person) rather than a directive for the agent:
# its subject is the user and its verb says what the user is, has or likes.
_FACT_RE = re.compile(
    r"^\s*(?:the\s+|this\s+|our\s+)?(?:user|customer|client|person|he|she|they|i)(?:'s|s')?\b"
    r"(?:\s+\w+){0,3}?\s+(?:is|are|was|were|has|have|had|likes?|loves?|prefers?|lives?|works?|"
    r"owns?|earns?|wants?|needs?|enjoys?|hates?|dislikes?|am|believes?|thinks?|feels?)\b",
    re.IGNORECASE,
)
_POSSESSIVE_RE = re.compile(r"^\s*(?:the\s+)?(?:user|customer|client)(?:'s|s')\s+\w+", re.IGNORECASE)


def fact_problem(proposal: Mapping[str, Any]) -> str | None:
    """Why ``proposal`` is a fact about the user rather than a rule for the agent, or None."""
    for key in ("description", "title"):
        text = str(proposal.get(key, ""))
        if _FACT_RE.match(text) or _POSSESSIVE_RE.match(text):
            return (f"{key} {text[:80]!r} states a fact about the user, not a rule for the agent; "
                    "procedures are directives (facts about people are not stored)")
    return None


@dataclass
class Extraction:
    """What extract_procedures did: the drafts stored, the proposals refused (with the
    reason), and the problems of each rejected reply."""

    drafts: list["Skill"] = field(default_factory=list)
    refused: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    rejected: bool = False
    reasons: list[str] = field(default_factory=list)
    attempts: list[list[str]] = field(default_factory=list)


def parse_reply(content: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The proposals of a reply, or the problems that make it invalid."""
    text = content.strip()
    fence = re.match(r"^```[a-zA-Z]*\s*\n(.*?)\n\s*```$", text, re.DOTALL)
    if fence:
        text = fence.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]
    if not isinstance(data, dict) or not isinstance(data.get("procedures"), list):
        return [], ['the reply must be a JSON object with a "procedures" list']
    items = data["procedures"]
    problems = []
    if len(items) > MAX_PROCEDURES:
        problems.append(f"{len(items)} procedures proposed; at most {MAX_PROCEDURES} are allowed")
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"procedure {n} is not an object")
            continue
        for key, limit in MAX_FIELD_CHARS.items():
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(f'procedure {n}: "{key}" must be a non-empty string')
            elif len(value) > limit:
                problems.append(f'procedure {n}: "{key}" is longer than {limit} characters')
        confidence = item.get("confidence")
        if (not isinstance(confidence, (int, float)) or isinstance(confidence, bool)
                or not any(abs(confidence - c) < 1e-9 for c in ALLOWED_CONFIDENCES)):
            problems.append(f'procedure {n}: "confidence" must be one of '
                            f"{', '.join(f'{c:.2f}' for c in ALLOWED_CONFIDENCES)}, got {confidence!r}")
    return ([] if problems else items), problems


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = "" if content is None else str(content)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + " [...]"


def messages_for(transcript: Sequence[Mapping[str, Any]], templates: Any) -> list[dict[str, str]]:
    """The system and user messages asking for procedures from ``transcript``."""
    nonce = secrets.token_hex(6)
    shown = [{"role": str(m.get("role", "?")), "content": _content(m).replace(nonce, "[marker removed]")}
             for m in transcript if m.get("role") in ("user", "assistant", "tool")]
    return [
        {"role": "system", "content": templates.get_template("extract_system.j2").render(
            max_procedures=MAX_PROCEDURES)},
        {"role": "user", "content": templates.get_template("extract_user.j2").render(
            messages=shown, nonce=nonce)},
    ]


def complete(client: "openai.OpenAI", model: str, messages: list[dict[str, str]]) -> str:
    """One chat completion's content; endpoint failures raise :class:`LLMError`."""
    import openai

    base = str(client.base_url).rstrip("/")
    try:
        response = client.chat.completions.create(  # type: ignore[call-overload]
            model=model, messages=messages, response_format={"type": "json_object"}, temperature=0.0,
        )
    except openai.APIConnectionError as exc:
        raise LLMError(f"cannot reach the LLM at {base}: {exc.message}") from exc
    except openai.APIStatusError as exc:
        raise LLMError(f"the LLM at {base} answered HTTP {exc.status_code}: {exc.message}") from exc
    except openai.OpenAIError as exc:
        raise LLMError(f"the LLM call to {base} failed: {exc}") from exc
    if not response.choices:
        raise LLMError(f"the LLM at {base} answered without any choices")
    return response.choices[0].message.content or ""


def ask(
    client: "openai.OpenAI", model: str, messages: list[dict[str, str]], templates: Any,
    max_retries: int = EXTRACT_MAX_RETRIES,
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """The valid proposals (empty when every attempt was rejected) and each rejected
    attempt's problems."""
    attempts: list[list[str]] = []
    total = max_retries + 1
    for attempt in range(1, total + 1):
        content = complete(client, model, messages)
        items, problems = parse_reply(content)
        if not problems:
            return items, attempts
        attempts.append(problems)
        if attempt < total:
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": templates.get_template("extract_repair.j2").render(
                problems=problems, attempt=attempt, attempts=total)})
    return [], attempts


__all__ = ["ALLOWED_CONFIDENCES", "MAX_PROCEDURES", "TEMPLATES", "Extraction", "ask", "fact_problem",
           "messages_for", "parse_reply"]
