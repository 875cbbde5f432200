"""Skill induction: turn verified tool-call traces into parameterized, verified skills.

``learn_from_trace`` is the pipeline (check the trace, generalize it, validate and replay
the candidate in the sandbox). Two generalizers implement the :class:`Generalizer`
protocol: :class:`DataflowGeneralizer` (offline, deterministic) and
:class:`LLMGeneralizer` (a chat model through the ``openai`` client).
"""

from skill_library.induction.candidate import Candidate, Generalizer, Verify
from skill_library.induction.dataflow import DataflowGeneralizer
from skill_library.induction.learner import (
    LearnOutcome,
    check_trace,
    coerce_trace,
    learn_from_trace,
)
from skill_library.induction.llm import LLMGeneralizer
from skill_library.induction.validation import (
    TrustedText,
    complete_candidate,
    provenance_problems,
    validate_candidate,
)
from skill_library.induction.verify import (
    LiveVerifier,
    ReplayMismatch,
    format_call,
    replay_verify,
    run_live_verifier,
    verify_candidate,
)

__all__ = [
    "Candidate",
    "DataflowGeneralizer",
    "Generalizer",
    "LLMGeneralizer",
    "LearnOutcome",
    "LiveVerifier",
    "ReplayMismatch",
    "TrustedText",
    "Verify",
    "check_trace",
    "coerce_trace",
    "complete_candidate",
    "format_call",
    "learn_from_trace",
    "provenance_problems",
    "replay_verify",
    "run_live_verifier",
    "validate_candidate",
    "verify_candidate",
]
