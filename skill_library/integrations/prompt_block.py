"""Moved to :mod:`skill_library.presentation.prompt_block` (below the facade); this import path
stays for code that uses it."""

from __future__ import annotations

from skill_library.presentation.prompt_block import DEFAULT_MAX_TOKENS as DEFAULT_MAX_TOKENS
from skill_library.presentation.prompt_block import TEMPLATES as TEMPLATES
from skill_library.presentation.prompt_block import approx_tokens as approx_tokens
from skill_library.presentation.prompt_block import recorded_examples as recorded_examples
from skill_library.presentation.prompt_block import render as render
from skill_library.presentation.prompt_block import signature_line as signature_line
from skill_library.presentation.prompt_block import usage_line as usage_line
