"""Wall time of each `skills` command beside two floors measured in the same run.

The floors: ``python -c "import typer, rich.console"`` (what any typer CLI pays) and
`skills --help` (Python, typer and the CLI modules, issue 25's targets: a command that does
not embed <= 0.5 s and <= 3x the first floor). Only the commands that embed text (add,
fetch, learn) pay for loading the model; governance transitions (approve, promote, and
their bulk forms over 8 held versions) open neither the index nor the model. Each command
runs as a fresh process of the installed console script on a temporary library,
``--repeat`` times; the table shows the median. Results: benchmarks/README.md.

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


#: held versions the bulk rows approve and promote in one call each
BULK = 8

HELD = """
import sys
from skill_library import Skill, SkillLibrary
from skill_library.governance import Actor, Policy, library_transition, system_actor
with SkillLibrary(sys.argv[1], create=True, policy=Policy(auto_approve="never")) as lib:
    lib.actors.add(Actor(id="alice", kind="user", permissions=frozenset({"skill.propose"})), by=None)
    for i in range(int(sys.argv[2])):
        code = f"def count_{i}(items: list) -> int:\\n    return len(items) + {i}\\n"
        lib.propose(Skill.from_function(code, when=f"count the items of list {i}"), actor="alice")
        library_transition(lib, f"count_{i}", 1, "evaluated", actor=system_actor(),
                           reason="evaluation passed", evidence={"passed": True})
    lib.index.count()  # the index exists and is marked, as in a library in use
"""


def _governance_rows(skills: str, env: dict[str, str], work: Path, repeat: int) -> list[tuple[str, float, int]]:
    """approve and promote of one version, and of BULK versions in one call each, on fresh
    libraries of held versions (a transition happens once, so each repeat gets its own)."""
    rows: dict[str, list[float]] = {}
    codes: dict[str, int] = {}
    names = [f"count_{i}" for i in range(BULK)]
    for n in range(repeat):
        lib = work / f"held{n}"
        subprocess.run([sys.executable, "-c", HELD, str(lib), str(BULK)], env=env, check=True,
                       capture_output=True, timeout=600)
        local = dict(env, SKILLS_DIR=str(lib))
        for label, args in (("approve (1)", ["approve", names[0], "1"]),
                            ("promote (1)", ["promote", names[0], "1"]),
                            (f"approve --held ({BULK - 1})", ["approve", "--held"]),
                            (f"promote NAME... ({BULK - 1})", ["promote", *names[1:]])):
            seconds, code = _time([skills, *args], local, work)
            rows.setdefault(label, []).append(seconds)
            codes[label] = code
    return [(label, statistics.median(times), codes[label]) for label, times in rows.items()]


MODEL_FLOOR = ("from skill_library.embeddings import SentenceTransformerEmbedder; "
               "SentenceTransformerEmbedder().embed(['water the roses'])")


def _fetch_rows(skills: str, env: dict[str, str], work: Path, repeat: int) -> list[tuple[str, float, int]]:
    """`skills fetch` beside loading the embedding model alone in a bare Python process, and
    `skills fetch` again while a `skills serve` of the same library answers (docs/serving.md)."""
    floor = [_time([sys.executable, "-c", MODEL_FLOOR], env, work)[0] for _ in range(repeat)]
    rows = [("python: load the model, embed one text", statistics.median(floor), 0)]
    server = subprocess.Popen([skills, "serve"], env=env, cwd=work, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        socket_file = Path(env["SKILLS_DIR"]) / "serve.sock"
        deadline = time.monotonic() + 300
        while not socket_file.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
        if not socket_file.exists():
            return rows + [("skills fetch (served): the server did not start", 0.0, 1)]
        served = [_time([skills, "fetch", "water the roses"], env, work) for _ in range(repeat)]
        rows.append(("skills fetch (a skills serve running)", statistics.median(t for t, _ in served),
                     max(c for _, c in served)))
    finally:
        server.terminate()
        server.wait(timeout=60)
    return rows


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
        times = [_time([sys.executable, "-c", "import typer, rich.console"], env, work)[0]
                 for _ in range(options.repeat)]
        rows.append(("python -c 'import typer, rich.console'", statistics.median(times), 0))
        for args in commands:
            times = []
            for _ in range(options.repeat):
                seconds, code = _time([skills, *args], env, work)
                times.append(seconds)
            rows.append(("skills " + (" ".join(args[:2]) if args[0] != "--help" else "--help"),
                         statistics.median(times), code))
        rows += [("skills " + label, seconds, code)
                 for label, seconds, code in _governance_rows(skills, env, work, options.repeat)]
        rows += _fetch_rows(skills, env, work, options.repeat)
    floor = rows[0][1]
    print(f"{'command':<40} {'median s':>9} {'x typer':>8}  exit")
    for name, seconds, code in rows:
        print(f"{name:<40} {seconds:>9.2f} {seconds / floor:>8.1f}  {code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
