"""The prompt block a planner reads before planning: the fetched skills, cut to a token budget.

Tokens are *estimated*, not counted by a model's tokenizer: :func:`approx_tokens` is
``ceil(characters / 4)``, the usual rule of thumb for English text and code with BPE
tokenizers (it over-counts slightly on code-heavy text). Pass ``count_tokens`` (for example
``lambda s: len(tiktoken.get_encoding("o200k_base").encode(s))``) for an exact count.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jinja2

from skill_library import privacy, signature
from skill_library.models import Match, Skill

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "approx_tokens",
    "caution",
    "notes",
    "recorded_examples",
    "render",
    "signature_line",
    "usage_line",
]

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_MAX_TOKENS = 800
CHARS_PER_TOKEN = 4

# placeholder argument values by JSON Schema type, for a usage line with no recorded example
_PLACEHOLDERS: dict[str, Any] = {
    "integer": 1,
    "number": 1.0,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def approx_tokens(text: str) -> int:
    """Estimated token count of ``text``: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def signature_line(skill: Skill) -> str:
    """``name(arg: type, ...)`` from a code skill's source; ``name (instruction)`` otherwise."""
    if skill.kind == "code" and skill.code:
        try:
            func = signature.find_function(skill.code, skill.name)
            return f"{skill.name}({ast.unparse(func.args)})"
        except ValueError:
            pass
    if skill.kind == "instruction":
        return f"{skill.name} (instruction: follow its steps)"
    return f"{skill.name}(...)"


def usage_line(skill: Skill, example: Mapping[str, Any] | None = None) -> str:
    """A one-line call with typed stand-ins for ``example``'s arguments (their type and
    shape, never a trace's value: :func:`skill_library.privacy.dummy`), else typed
    placeholders."""
    if skill.kind == "instruction":
        first = next((line.strip() for line in skill.description.splitlines() if line.strip()), "")
        return first
    example = example or {}
    parts = []
    for name, schema in (skill.parameters or {}).get("properties", {}).items():
        if name in example:
            value = privacy.dummy(example[name], name)
        elif "default" in schema:
            continue  # optional: leave it out of the one-liner
        else:
            kind = schema.get("type")
            value = _PLACEHOLDERS.get(kind, f"<{name}>") if isinstance(kind, str) else f"<{name}>"
        parts.append(f"{name}={value!r}")
    return f"{skill.name}({', '.join(parts)})"


def render(
    matches: Sequence[Match],
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    examples: Mapping[str, Mapping[str, Any]] | None = None,
    count_tokens: Callable[[str], int] = approx_tokens,
) -> str:
    """The block for ``matches`` (in their order), keeping as many whole skills as fit.

    ``examples`` maps a skill name to arguments it was once called with (its usage line
    shows them). The result, as measured by ``count_tokens``, is at most ``max_tokens``;
    skills that do not fit are dropped from the end and a last line says how many.
    """
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    entries = [_entry(m, (examples or {}).get(m.skill.name)) for m in matches]
    template = _environment().get_template("prompt_block.j2")
    unsure = caution(matches)
    for keep in range(len(entries), -1, -1):
        text = template.render(
            entries=entries[:keep], omitted=len(entries) - keep, max_tokens=max_tokens, caution=unsure,
        ).strip()
        if count_tokens(text) <= max_tokens:
            return text
    return ""  # even the "none fits" note is over the budget


def caution(matches: Sequence[Any]) -> str | None:
    """Why the block must not read as "call one of these": fetch abstained (no skill covers
    the task for sure) or flagged the matches too close to call (``FetchResult.abstained``,
    ``ambiguous`` and ``reason``, skill_library.abstention); None for a plain result."""
    abstained, ambiguous = bool(getattr(matches, "abstained", False)), bool(getattr(matches, "ambiguous", False))
    if not (abstained or ambiguous):
        return None
    said = "no skill is sure to cover this task" if abstained else "these skills are too close to call"
    reason = " ".join(str(getattr(matches, "reason", "") or "").split())
    return f"{said}{f' ({reason})' if reason else ''}"


def notes(match: Match) -> list[str]:
    """What fetch flagged on one match, in words: it does not apply (its preconditions,
    checked with ``read_tools``), the task gives no value for some parameters, or it is too
    close to call against another match."""
    found = []
    if match.applies is False:
        found.append(match.applies_reason or "does not apply")
    if match.missing:
        found.append(f"the task does not give {', '.join(match.missing)}")
    if match.ambiguous:
        found.append("too close to call against another skill here")
    return found


def _entry(match: Match, example: Mapping[str, Any] | None) -> dict[str, Any]:
    skill = match.skill
    return {
        "signature": signature_line(skill),
        "when": " ".join(skill.when.split()),
        "reliability": match.reliability,
        "successes": skill.successes,
        "failures": skill.failures,
        "usage": usage_line(skill, example),
        "note": "; ".join(notes(match)),
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=False,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


def recorded_examples(
    matches: Sequence[Match], get_trace: Callable[[str], Any]
) -> dict[str, dict[str, Any]]:
    """For each matched skill, the parameters of the first trace it was learned from.

    ``get_trace`` is ``RecordStore.get_trace``; a skill with no stored trace has no entry.
    """
    found: dict[str, dict[str, Any]] = {}
    for match in matches:
        for trace_id in match.skill.provenance.trace_ids[:1]:
            try:
                params = get_trace(trace_id).params
            except KeyError:
                continue
            names = set((match.skill.parameters or {}).get("properties", {}))
            if params and set(params) <= names:
                found[match.skill.name] = dict(params)
    return found
