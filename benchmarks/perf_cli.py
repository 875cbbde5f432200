"""Wall time of each `skills` command beside `skills --help`'s, measured in the same run.

`skills --help` is the floor (Python, typer and the CLI modules); a command that needs no
embedding should sit near it, and only the commands that embed text (add, fetch, learn)
pay for loading the model. Each command runs as a fresh process of the installed console
script on a temporary library, ``--repeat`` times; the table shows the median.

    .venv/bin/python benchmarks/perf_cli.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKILL = "def water_bed(bed: str) -> dict:\n    return pour(bed=bed, litres=2)\n"
TOOLS = "def pour(bed: str, litres: int) -> dict:\n    return {'bed': bed, 'poured': litres}\n"
TRACE = {
    "task": "pour 3 litres on the rose bed",
    "params": {"bed": "rose", "litres": 3},
    "calls": [{"name": "pour", "arguments": {"bed": "rose", "litres": 3}, "result": {"poured": 3}}],
    "outcome": {"success": True, "verifier": "soil-sensor"},
}


def _time(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - started, done.returncode


def main(argv: list[str] | None = None) -> int:
    """Print one row per command: median seconds, and the ratio to `skills --help`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="Runs per command (median shown).")
    options = parser.parse_args(argv)
    skills = str(Path(sys.executable).with_name("skills"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "water.py").write_text(SKILL)
        (work / "garden_tools.py").write_text(TOOLS)
        (work / "trace.json").write_text(json.dumps(TRACE))
        env = dict(os.environ, SKILLS_DIR=str(work / "lib"), HF_HUB_OFFLINE="1")
        setup = [
            ["init"],
            ["add", "water.py", "--when", "water one garden bed"],
            ["feedback", "water_bed", "--success"],
        ]
        for args in setup:
            seconds, code = _time([skills, *args], env, work)
            if code != 0:
                print(f"setup failed: skills {' '.join(args)}", file=sys.stderr)
                return 1
        commands = [
            ["--help"],
            ["list"],
            ["show", "water_bed"],
            ["history", "water_bed"],
            ["outcomes", "water_bed"],
            ["traces", "water_bed"],
            ["feedback", "water_bed", "--success"],
            ["fetch", "water the roses"],
            ["run", "water_bed", "--args", '{"bed": "roses"}', "--tools", "garden_tools", "--no-record"],
            ["learn", "trace.json"],
            ["reindex"],
        ]
        rows = []
        for args in commands:
            times = []
            for _ in range(options.repeat):
                seconds, code = _time([skills, *args], env, work)
                times.append(seconds)
            rows.append((" ".join(args[:2]) if args[0] != "--help" else "--help", statistics.median(times), code))
    floor = rows[0][1]
    print(f"{'command':<32} {'median s':>9} {'x --help':>9}  exit")
    for name, seconds, code in rows:
        print(f"{'skills ' + name:<32} {seconds:>9.2f} {seconds / floor:>9.1f}  {code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
