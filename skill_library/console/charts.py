"""Charts drawn on the server as PNG (matplotlib, the ``plot`` extra; no JavaScript)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from skill_library.models import COUNTED_KINDS, laplace_reliability

__all__ = ["CHART_DPI", "CHART_SIZE", "reliability_png", "uplift_png"]

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


def uplift_png(found: Any) -> bytes:
    """Task success with the skill (served) and without it (held back) for one version, each
    with its Wilson interval, titled with the difference and its Newcombe interval
    (``found``: a :class:`skill_library.uplift.Uplift`)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from skill_library.uplift import wilson

    figure = Figure(figsize=(CHART_SIZE[0], 1.9), dpi=CHART_DPI)
    axes = figure.add_subplot()
    arms = [("served (with it)", found.served), ("held back (without)", found.held_back)]
    for row, (label, arm) in enumerate(arms):
        if not arm.n:
            axes.text(0.01, row, f"{label}: no sessions yet", va="center", fontsize=8)
            continue
        low, high = wilson(arm.successes, arm.n)
        axes.barh(row, arm.rate, height=0.5, color="#4c72b0" if row == 0 else "#999999")
        axes.errorbar(arm.rate, row, xerr=[[arm.rate - low], [high - arm.rate]], fmt="none", ecolor="black",
                      capsize=4, linewidth=1)
        axes.text(min(high + 0.01, 0.9), row, f"{arm.successes}/{arm.n}", va="center", fontsize=8)
    axes.set_yticks([0, 1], [label for label, _ in arms], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("task success")
    title = f"{found.name} v{found.version}: uplift"
    if found.difference is not None:
        title += (f" {100 * found.difference:+.1f} points, {found.confidence:.0%} CI "
                  f"[{100 * found.low:+.1f}, {100 * found.high:+.1f}] ({found.verdict})")
    else:
        title += f" ({found.verdict})"
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3, axis="x")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
