"""The significance test of a canary: is its failure rate worse than the active version's?

One-sided Fisher's exact test on the 2x2 table of (failures, successes) of the canary and
the active version. Under the null hypothesis (equal failure rates) and given the table's
margins, the canary's failure count is hypergeometric; the p-value is the probability of
at least as many canary failures as observed. Exact at any sample size (no normal
approximation), so it stays valid at the small counts where a canary decision is made.
"""

from __future__ import annotations

import math


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_worse_p(canary_failures: int, canary_successes: int,
                   active_failures: int, active_successes: int) -> float:
    """One-sided Fisher's exact p-value that the canary fails more often than the active version.

    1.0 when either side has no outcomes (no evidence either way).
    """
    counts = (canary_failures, canary_successes, active_failures, active_successes)
    if any(c < 0 for c in counts):
        raise ValueError(f"outcome counts must be non-negative, got {counts}")
    n1 = canary_failures + canary_successes
    n2 = active_failures + active_successes
    if n1 == 0 or n2 == 0:
        return 1.0
    total = n1 + n2
    failures = canary_failures + active_failures
    denominator = _log_comb(total, n1)
    top = min(n1, failures)
    terms = [
        _log_comb(failures, x) + _log_comb(total - failures, n1 - x) - denominator
        for x in range(canary_failures, top + 1)
        if n1 - x <= total - failures
    ]
    if not terms:
        return 0.0
    peak = max(terms)
    p = math.exp(peak) * sum(math.exp(t - peak) for t in terms)
    return min(1.0, max(0.0, p))
