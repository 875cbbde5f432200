"""Charts drawn on the server as PNG (matplotlib, the ``plot`` extra; no JavaScript)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from skill_library.models import COUNTED_KINDS, laplace_reliability

__all__ = ["CHART_DPI", "CHART_SIZE", "reliability_png"]

#: chart size in inches and resolution: small enough for a page, sharp enough to read
CHART_SIZE = (7.0, 2.6)
CHART_DPI = 100


def reliability_series(outcomes: Sequence[dict[str, Any]]) -> dict[int, list[tuple[int, float, bool]]]:
    """Per version, after each of its outcomes: (outcome number overall, Laplace reliability
    so far, whether it succeeded)."""
    counts: dict[int, list[int]] = {}
    series: dict[int, list[tuple[int, float, bool]]] = {}
    for number, outcome in enumerate(outcomes, start=1):
        if outcome.get("kind", "success" if outcome["success"] else "failure") not in COUNTED_KINDS:
            continue  # misuse, not_applicable, wrong_skill: not the skill's record
        version = int(outcome["version"])
        tally = counts.setdefault(version, [0, 0])
        tally[0 if outcome["success"] else 1] += 1
        series.setdefault(version, []).append((number, laplace_reliability(tally[0], tally[1]),
                                               bool(outcome["success"])))
    return series


def reliability_png(name: str, outcomes: Sequence[dict[str, Any]]) -> bytes:
    """Reliability of each version of ``name`` over its outcomes, with each outcome marked
    (filled: success, hollow: failure)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=CHART_SIZE, dpi=CHART_DPI)
    axes = figure.add_subplot()
    series = reliability_series(outcomes)
    for version, points in sorted(series.items()):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        (line,) = axes.plot(xs, ys, label=f"v{version}", linewidth=1.5)
        axes.scatter([x for x, _, ok in points if ok], [y for _, y, ok in points if ok], color=line.get_color(), s=16)
        axes.scatter([x for x, _, ok in points if not ok], [y for _, y, ok in points if not ok],
                     facecolors="none", edgecolors=line.get_color(), s=16)
    if not series:
        axes.text(0.5, 0.5, "no outcomes yet", ha="center", va="center", transform=axes.transAxes)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(0, 1)
    axes.set_xlabel("outcome")
    axes.set_ylabel("reliability")
    axes.set_title(f"{name}: reliability over outcomes", fontsize=10)
    if series:
        axes.legend(loc="lower right", fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
