"""Drift on synthetic streams: false positives on a stable stream, delay on a swap
(docs/procedures.md#usage-patterns-drift-and-quarantine).

    python -m benchmarks.drift_rates            # the held-out figures (docs/procedures.md)
    python -m benchmarks.drift_rates --tune     # the grid the defaults were chosen from
    python -m benchmarks.drift_rates --oracle   # the same grid for a detector told the swap

Streams of next states, one transition per session: ``OLD`` (0.7 / 0.2 / 0.1) while stable,
``NEW`` (the two most likely swapped) after a swap, which happens after ``DRIFT_HISTORY +
DRIFT_RECENT`` stable sessions. A *false positive* is a stable window end at which
:func:`skill_library.patterns.drift.detect` flags drift (``WINDOWS`` = 1,000 window ends per
stream); the *delay* of a swap is the number of sessions after it at the first flag (none
within ``AFTER`` sessions: not detected).

``--tune`` sweeps windows, persistence and the minimum lead on the ``TUNE_*`` seeds and keeps the
setting that detects the most swaps within ``MAX_DELAY`` sessions while at most
``TUNE_MAX_FLAGGED_SHARE`` of the stable streams see any flag. The report runs the library's
defaults on the ``HELD_OUT_*`` seeds, which the tuning never saw.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from skill_library.patterns import drift

#: next-state probabilities before and after the swap of the two most likely states
OLD = {"review": 0.7, "export": 0.2, "share": 0.1}
NEW = {"export": 0.7, "review": 0.2, "share": 0.1}
#: stable window ends checked per stream
WINDOWS = 1_000
#: sessions observed after a swap
AFTER = 40
#: the target: a swap detected within this many sessions
MAX_DELAY = 20
#: seeds the defaults were tuned on (stable streams, swaps)
TUNE_STABLE = range(1000, 2000)
TUNE_SWAP = range(0, 2000)
#: seeds the figures are reported on
HELD_OUT_STABLE = range(20000, 21000)
HELD_OUT_SWAP = range(30000, 32000)
#: the tuning's false-alarm budget: the share of stable streams allowed any flag in their 1,000 windows
TUNE_MAX_FLAGGED_SHARE = 0.02
#: the tuning grid
TUNE_RECENT = (16, 18, 20, 22)
TUNE_PERSISTENCE = (1, 2, 3)
TUNE_MIN_LEADS = tuple(range(2, 11))
#: the trade-off printed: the best share within MAX_DELAY at these shares of flagged streams
FRONTIER_SHARES = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
#: the oracle's grid runs on the first of the tuning seeds
ORACLE_STREAMS = 200
ORACLE_SWAPS = 1000


def stream(rng: random.Random, n: int, probs: dict[str, float]) -> list[str]:
    """``n`` next states drawn from ``probs``."""
    return rng.choices(list(probs), list(probs.values()), k=n)


def stable_stream(seed: int, recent: int = drift.DRIFT_RECENT, history: int = drift.DRIFT_HISTORY) -> list[str]:
    """A stable stream whose last ``WINDOWS`` window ends each have a full history."""
    return stream(random.Random(seed), history + recent + WINDOWS, OLD)


def swap_stream(
    seed: int, recent: int = drift.DRIFT_RECENT, history: int = drift.DRIFT_HISTORY
) -> tuple[list[str], list[str]]:
    """(before, after): ``history + recent`` stable sessions, then ``AFTER`` swapped ones."""
    rng = random.Random(seed)
    return stream(rng, history + recent, OLD), stream(rng, AFTER, NEW)


def false_positives(states: Sequence[str], flagged: Callable[[Sequence[str]], bool]) -> int:
    """Flagged window ends among the last ``WINDOWS`` of ``states``."""
    return sum(flagged(states[:end]) for end in range(len(states) - WINDOWS + 1, len(states) + 1))


def delay(before: list[str], after: list[str], flagged: Callable[[Sequence[str]], bool]) -> int | None:
    """Sessions after the swap at the first flag, None when there is none."""
    return next((n for n in range(1, len(after) + 1) if flagged(before + after[:n])), None)


@dataclass(frozen=True)
class Rates:
    windows: int
    flagged_windows: int
    flagged_streams: int
    streams: int
    delays: list[int | None]

    @property
    def fp_rate(self) -> float:
        return self.flagged_windows / self.windows

    @property
    def within(self) -> int:
        return sum(d is not None and d <= MAX_DELAY for d in self.delays)

    def line(self) -> str:
        ranked = sorted(d if d is not None else AFTER + 1 for d in self.delays)
        missed = sum(d is None for d in self.delays)

        def shown(d: float) -> str:
            return f">{AFTER}" if d > AFTER else f"{d:g}"

        return (f"false positives {self.flagged_windows} of {self.windows:,} stable windows "
                f"({self.fp_rate:.4%}; {self.flagged_streams} of {self.streams} streams with any); "
                f"swap delay median {shown(statistics.median(ranked))}, "
                f"90th percentile {shown(ranked[int(0.9 * len(ranked))])}, max {shown(ranked[-1])} "
                f"({missed} not within {AFTER}); {self.within} of {len(self.delays)} "
                f"({self.within / len(self.delays):.1%}) within {MAX_DELAY} sessions")


def measure(stable_seeds: Iterable[int], swap_seeds: Iterable[int], **settings: float) -> Rates:
    """The library's rule (``detect`` with ``settings``) on the given seeds."""
    recent = int(settings.get("recent", drift.DRIFT_RECENT))
    history = int(settings.get("history", drift.DRIFT_HISTORY))

    def flagged(states: Sequence[str]) -> bool:
        return drift.detect(states, **settings).detected  # type: ignore[arg-type]

    per_stream = [false_positives(stable_stream(s, recent, history), flagged) for s in stable_seeds]
    delays = [delay(*swap_stream(s, recent, history), flagged) for s in swap_seeds]
    return Rates(WINDOWS * len(per_stream), sum(per_stream), sum(n > 0 for n in per_stream), len(per_stream), delays)


def _lead_series(states: Sequence[str], ends: Iterable[int], recent: int) -> list[float]:
    # the largest lead of a challenger with more than DRIFT_THRESHOLD nats of evidence
    out = []
    for end in ends:
        r, h = drift._window(states, end, recent, drift.DRIFT_HISTORY)
        leads = [c.lead for c in drift.challengers(r, h) if c.evidence > drift.DRIFT_THRESHOLD]
        out.append(float(max(leads)) if leads and sum(h.values()) >= drift.DRIFT_MIN_HISTORY else -math.inf)
    return out


def _first_runs(series: list[float], threshold: float, persistence: int) -> list[bool]:
    run, out = 0, []
    for value in series:
        run = run + 1 if value > threshold else 0
        out.append(run >= persistence)
    return out


def _grid(
    series: Callable[[Sequence[str], range, int], list[float]], stable_seeds: range, swap_seeds: range,
    leads: Sequence[int],
) -> list[tuple[int, int, int, Rates]]:
    """(recent, persistence, min_lead, rates) for a lead computed once per window length."""
    rows = []
    for recent in TUNE_RECENT:
        history = drift.DRIFT_HISTORY
        # the statistic at every window end; the 3 ends before those counted let a run of
        # persistence start there
        stable = []
        for seed in stable_seeds:
            states = stable_stream(seed, recent, history)
            stable.append(series(states, range(len(states) - WINDOWS - 2, len(states) + 1), recent))
        swaps = []
        for seed in swap_seeds:
            before, after = swap_stream(seed, recent, history)
            states = before + after
            swaps.append(series(states, range(len(before) - 2, len(states) + 1), recent))
        for persistence in TUNE_PERSISTENCE:
            for lead in leads:
                threshold = lead - 0.5
                flags = [sum(_first_runs(s, threshold, persistence)[3:]) for s in stable]
                delays = [
                    next((n for n, f in enumerate(_first_runs(s, threshold, persistence)[3:], start=1) if f), None)
                    for s in swaps
                ]
                rates = Rates(WINDOWS * len(flags), sum(flags), sum(f > 0 for f in flags), len(flags), delays)
                rows.append((recent, persistence, lead, rates))
    return rows


def _best(rows: list[tuple[int, int, int, Rates]], share: float) -> tuple[int, int, int, Rates] | None:
    allowed = [r for r in rows if r[3].flagged_streams <= share * r[3].streams]
    return max(allowed, key=lambda r: (r[3].within, -r[3].flagged_windows, -r[0], r[2])) if allowed else None


def _oracle_series(states: Sequence[str], ends: Iterable[int], recent: int) -> list[float]:
    # told the swap: the lead of the new top over the old in the window (the likelihood ratio
    # of the true swap, up to the factor ln(0.7 / 0.2))
    return [float(states[max(0, e - recent):e].count("export") - states[max(0, e - recent):e].count("review"))
            for e in ends]


def tune(oracle: bool = False) -> None:
    """Print the grid over the tuning seeds and the setting it selects; with ``oracle``, the
    same for a detector told the exact swap, to show where the trade-off lies."""
    if oracle:
        rows = _grid(_oracle_series, TUNE_STABLE[:ORACLE_STREAMS], TUNE_SWAP[:ORACLE_SWAPS], TUNE_MIN_LEADS)
    else:
        rows = _grid(_lead_series, TUNE_STABLE, TUNE_SWAP, TUNE_MIN_LEADS)
    for recent, persistence, lead, rates in rows:
        print(f"recent={recent} persistence={persistence} min_lead={lead}: {rates.line()}")
    print()
    for share in FRONTIER_SHARES:
        best = _best(rows, share)
        if best is not None:
            print(f"at most {share:.1%} of stable streams flagged: recent={best[0]} persistence={best[1]} "
                  f"min_lead={best[2]}: {best[3].line()}")
    if not oracle:
        best = _best(rows, TUNE_MAX_FLAGGED_SHARE)
        assert best is not None
        print(f"\nselected (most swaps within {MAX_DELAY} with at most {TUNE_MAX_FLAGGED_SHARE:.0%} of "
              f"stable streams flagged): recent={best[0]} persistence={best[1]} min_lead={best[2]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", action="store_true", help="sweep the grid on the tuning seeds")
    parser.add_argument("--oracle", action="store_true", help="the same for a detector told the exact swap")
    args = parser.parse_args(argv)
    if args.tune or args.oracle:
        tune(oracle=args.oracle)
        return
    print(f"defaults: recent={drift.DRIFT_RECENT} history={drift.DRIFT_HISTORY} min_lead={drift.DRIFT_MIN_LEAD} "
          f"threshold={drift.DRIFT_THRESHOLD} persistence={drift.DRIFT_PERSISTENCE} "
          f"smoothing={drift.DRIFT_SMOOTHING}")
    print("held-out seeds:", measure(HELD_OUT_STABLE, HELD_OUT_SWAP).line())


if __name__ == "__main__":
    main()
