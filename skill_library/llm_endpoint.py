"""Where the LLM is: one place that reads the endpoint settings and builds the client.

Settings come from arguments, else ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
``SKILL_LIBRARY_MODEL``. A base URL without a key is fine (local OpenAI-compatible servers
ignore the key). Nothing is contacted until a request is made.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from skill_library.errors import LLMError

if TYPE_CHECKING:
    import openai

DEFAULT_MODEL = "gpt-4o-mini"


def endpoint_configured() -> bool:
    """True when the environment names an LLM endpoint or key."""
    return bool(os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY"))


def model_name(model: str | None = None) -> str:
    """``model``, else ``SKILL_LIBRARY_MODEL``, else the default."""
    return model or os.environ.get("SKILL_LIBRARY_MODEL") or DEFAULT_MODEL


def openai_client(
    base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0
) -> "openai.OpenAI":
    """The real ``openai`` client (no retries of its own); LLMError when nothing is configured."""
    import openai  # importing openai costs ~2 s: only when an LLM is really used

    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise LLMError(
                "no LLM configured: pass base_url/api_key or set OPENAI_BASE_URL or OPENAI_API_KEY"
            )
        api_key = "not-needed"
    try:
        return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
    except openai.OpenAIError as exc:
        raise LLMError(f"cannot create the OpenAI client: {exc}") from exc
