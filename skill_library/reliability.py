"""The reliability of a skill version from its outcome counts, importing nothing (the models,
the console's charts and the CLI's light reads share it)."""

from __future__ import annotations


def laplace_reliability(successes: int, failures: int) -> float:
    """Laplace-smoothed success rate: ``(successes + 1) / (n + 2)``."""
    return (successes + 1) / (successes + failures + 2)
