"""Instruction procedures: rules for how the agent acts, in its system prompt.
``library.procedures`` is a :class:`Procedures`."""

from skill_library.procedures.core import (
    DEFAULT_CONFIDENCE,
    FAILURE_STEP,
    HEADING,
    PROMPT_LIMIT,
    PROMPT_THRESHOLD,
    SUCCESS_STEP,
    TASK_RELEVANCE_SIMILARITY,
    Procedure,
    Procedures,
    derived_name,
    step,
)
from skill_library.procedures.extract import MAX_PROCEDURES, Extraction, fact_problem

__all__ = [
    "DEFAULT_CONFIDENCE",
    "FAILURE_STEP",
    "HEADING",
    "MAX_PROCEDURES",
    "PROMPT_LIMIT",
    "PROMPT_THRESHOLD",
    "SUCCESS_STEP",
    "TASK_RELEVANCE_SIMILARITY",
    "Extraction",
    "Procedure",
    "Procedures",
    "derived_name",
    "fact_problem",
    "step",
]
