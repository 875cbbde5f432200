"""Wall time of each `skills` command beside the floors measured in the same run.

The floors: ``python -c "import typer, rich.console"`` (what any typer CLI pays) and, for
the commands that embed, loading the embedding model alone in a bare Python process. Issue
25's targets: a command that does not embed <= 0.5 s and <= 3x the first floor; `skills
fetch` with no server <= 1.2x the model floor, with a `skills serve` running <= 0.3 s;
approve/promote <= 1 s, 8 approvals + promotions in bulk calls <= 3 s; `skills ui` to its
login URL <= 2 s; MCP over stdio to its first answer <= 2 s once the model was loaded on
the machine. Each command runs as a fresh process of the installed console script on a
temporary library, ``--repeat`` times (median shown).

``--trees A B`` runs every row once per source tree (``PYTHONPATH=A``, then B, interleaved,
on the same library), so a branch and main are compared side by side in one run;
``--only`` picks groups of rows (help, reads, writes, governance, fetch, console, mcp).
Results: benchmarks/README.md#the-clis-wall-time-perfclipy-issue-25.

    .venv/bin/python benchmarks/perf_cli.py [--repeat 3] [--only reads,console] [--trees ../main .]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

SKILL = "def water_bed(bed: str) -> dict:\n    return pour(bed=bed, litres=2)\n"
TOOLS = "def pour(bed: str, litres: int) -> dict:\n    return {'bed': bed, 'poured': litres}\n"
TRACE = {
    "task": "pour 3 litres on the rose bed",
    "params": {"bed": "rose", "litres": 3},
    "calls": [{"name": "pour", "arguments": {"bed": "rose", "litres": 3}, "result": {"poured": 3}}],
    "outcome": {"success": True, "verifier": "soil-sensor"},
}

#: held versions the bulk rows approve and promote in one call each
BULK = 8
GROUPS = ("help", "reads", "writes", "governance", "fetch", "console", "mcp")

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

MODEL_FLOOR = ("from skill_library.embeddings import SentenceTransformerEmbedder; "
               "SentenceTransformerEmbedder().embed(['water the roses'])")

#: one measurement: (wall seconds, exit code, CPU seconds of the process: user + system)
Timing = tuple[float, int, float]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _time(command: list[str], env: dict[str, str], cwd: Path) -> Timing:
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - started, done.returncode, _children_cpu() - cpu


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=60)


def _console(skills: str, env: dict[str, str], work: Path) -> tuple[Timing, Timing]:
    """`skills ui`: seconds until it prints its login URL, and until that URL logs in."""
    started = time.perf_counter()
    server = subprocess.Popen([skills, "ui", "--port", str(_free_port())], env=env, cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(server.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    try:
        deadline = started + 300
        while not any("/login?token=" in line for line in lines):
            if server.poll() is not None or time.perf_counter() > deadline:
                return (0.0, 1, 0.0), (0.0, 1, 0.0)
            time.sleep(0.01)
        printed = (time.perf_counter() - started, 0, _process_cpu(server.pid))
        url = urlsplit(next(line for line in lines if "/login?token=" in line).split()[-1])
        while True:
            try:
                connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
                connection.request("GET", f"{url.path}?{url.query}")
                status = connection.getresponse().status
                connection.close()
                break
            except ConnectionRefusedError:
                if time.perf_counter() > deadline:
                    return printed, (0.0, 1, 0.0)
                time.sleep(0.01)
        return printed, (time.perf_counter() - started, 0 if status == 303 else status, _process_cpu(server.pid))
    finally:
        _stop(server)


def _mcp(skills: str, env: dict[str, str], work: Path) -> tuple[Timing, Timing, Timing]:
    """`skills serve-mcp` over stdio with the real mcp client: seconds from the start to the
    answered initialize, to the first list_tools and to the first fetch_skills."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=skills, args=["serve-mcp"], env=env, cwd=str(work))

    async def session() -> tuple[Timing, Timing, Timing]:
        started = time.perf_counter()
        async with Client(params, read_timeout_seconds=300) as client:
            initialized = time.perf_counter() - started
            tools = await client.list_tools()
            listed = time.perf_counter() - started
            fetched = await client.call_tool("fetch_skills", {"task": "water the roses", "k": 1})
            answered = time.perf_counter() - started
        # the server's CPU is not seen from here (the client owns its process): nan
        return ((initialized, 0, math.nan), (listed, 0 if any(t.name == "water_bed" for t in tools.tools) else 1,
                                            math.nan), (answered, 1 if fetched.is_error else 0, math.nan))

    return anyio.run(session)


class Run:
    """The rows of one run: per label, per tree, the timings of each repeat."""

    def __init__(self, trees: list[Path | None], repeat: int) -> None:
        self.trees = trees
        self.repeat = repeat
        self.rows: dict[str, dict[int, list[Timing]]] = {}

    def env(self, base: dict[str, str], tree: Path | None) -> dict[str, str]:
        if tree is None:
            return base
        rest = [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
        return dict(base, PYTHONPATH=os.pathsep.join([str(tree), *rest]))

    def add(self, label: str, tree: int, timing: Timing) -> None:
        self.rows.setdefault(label, {}).setdefault(tree, []).append(timing)

    def each(self, measure: Callable[[int, Path | None], dict[str, Timing]]) -> None:
        """``measure(tree index, tree)`` -> {label: timing}, repeat times, trees interleaved."""
        for _ in range(self.repeat):
            for index, tree in enumerate(self.trees):
                for label, timing in measure(index, tree).items():
                    self.add(label, index, timing)

    def median(self, label: str, tree: int) -> Timing:
        """Median wall seconds, the worst exit code, median CPU seconds."""
        timings = self.rows.get(label, {}).get(tree, [])
        if not timings:
            return math.nan, 0, math.nan
        return (statistics.median(t[0] for t in timings), max(t[1] for t in timings),
                statistics.median(t[2] for t in timings))


def _compile(trees: list[Path | None]) -> None:
    """Write the bytecode of each tree's package (of the installed one for ``None``)."""
    import compileall
    import importlib.util

    for tree in trees:
        if tree is None:
            spec = importlib.util.find_spec("skill_library")
            folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
        else:
            folders = [tree / "skill_library", tree / "sandbox"]
        for folder in folders:
            compileall.compile_dir(str(folder), quiet=1)


def main(argv: list[str] | None = None) -> int:
    """Print one row per command: median seconds per tree, and the ratio to the typer floor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="Runs per command (median shown).")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"Comma-separated groups of rows (default all: {','.join(GROUPS)}).")
    parser.add_argument("--trees", nargs="+", type=Path, default=None, metavar="PATH",
                        help="Source trees to compare side by side (each run with PYTHONPATH=PATH); "
                        "default: the installed package alone.")
    options = parser.parse_args(argv)
    only = {g.strip() for g in options.only.split(",") if g.strip()}
    if only - set(GROUPS) or options.repeat < 1:
        parser.error(f"--only takes {', '.join(GROUPS)}; --repeat at least 1")
    trees: list[Path | None] = [t.resolve() for t in options.trees] if options.trees else [None]
    for tree in trees:
        if tree is not None and not (tree / "skill_library" / "__init__.py").is_file():
            parser.error(f"--trees: {tree} holds no skill_library package")
    skills = str(Path(sys.executable).with_name("skills"))
    run = Run(trees, options.repeat)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "water.py").write_text(SKILL)
        (work / "garden_tools.py").write_text(TOOLS)
        (work / "trace.json").write_text(json.dumps(TRACE))
        base = dict(os.environ, SKILLS_DIR=str(work / "lib"), HF_HUB_OFFLINE="1")
        # as installed by pip, which compiles every module: with PYTHONDONTWRITEBYTECODE (set
        # on this machine) each run would compile the package from source again (~0.4 s)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        _compile(trees)
        for args in (["init"], ["add", "water.py", "--when", "water one garden bed"],
                     ["feedback", "water_bed", "--success"]):
            if _time([skills, *args], run.env(base, trees[0]), work)[1] != 0:
                print(f"setup failed: skills {' '.join(args)}", file=sys.stderr)
                return 1
        floor = "python -c 'import typer, rich.console'"
        run.each(lambda i, t: {floor: _time([sys.executable, "-c", "import typer, rich.console"], base, work)})
        groups = {
            "help": [["--help"]],
            "reads": [["list"], ["show", "water_bed"], ["history", "water_bed"], ["outcomes", "water_bed"],
                      ["traces", "water_bed"], ["list", "--json"]],
            "writes": [["feedback", "water_bed", "--success"],
                       ["run", "water_bed", "--args", '{"bed": "roses"}', "--tools", "garden_tools", "--no-record"],
                       ["learn", "trace.json"], ["reindex"]],
        }
        for group, commands in groups.items():
            if group not in only:
                continue
            for args in commands:
                label = "skills " + " ".join(args[:2] if args[:2] != ["list", "--json"] else args)

                def command(i: int, t: Path | None, args: list[str] = args, label: str = label) -> dict[str, Timing]:
                    return {label: _time([skills, *args], run.env(base, t), work)}

                run.each(command)
        if "governance" in only:
            _governance(run, skills, base, work)
        if "fetch" in only:
            _fetch(run, skills, base, work)
        if "console" in only:
            def console(i: int, t: Path | None) -> dict[str, Timing]:
                printed, served = _console(skills, run.env(base, t), work)
                return {"skills ui: login URL printed": printed, "skills ui: login URL answered": served}

            run.each(console)
        if "mcp" in only:
            def mcp(i: int, t: Path | None) -> dict[str, Timing]:
                initialized, listed, fetched = _mcp(skills, run.env(base, t), work)
                return {"serve-mcp stdio: initialize answered": initialized,
                        "serve-mcp stdio: first list_tools": listed,
                        "serve-mcp stdio: first fetch_skills": fetched}

            run.each(mcp)
            for index, tree in enumerate(run.trees):  # with the model loaded in a `skills serve`
                env = run.env(base, tree)
                with _serving(skills, env, work) as up:
                    for _ in range(run.repeat):
                        fetched = _mcp(skills, env, work)[2] if up else (0.0, 1, 0.0)
                        run.add("serve-mcp stdio: first fetch_skills (a skills serve running)", index, fetched)
    _print(run, floor, options, load_before)
    return 0


def _governance(run: Run, skills: str, base: dict[str, str], work: Path) -> None:
    """approve and promote of one version, and of BULK - 1 versions in one call each, on fresh
    libraries of held versions (a transition happens once, so each run gets its own)."""
    names = [f"count_{i}" for i in range(BULK)]
    made = iter(range(10**6))

    def measure(i: int, tree: Path | None) -> dict[str, Timing]:
        env = run.env(base, tree)
        lib = work / f"held{next(made)}"
        subprocess.run([sys.executable, "-c", HELD, str(lib), str(BULK)], env=env, check=True,
                       capture_output=True, timeout=600)
        local = dict(env, SKILLS_DIR=str(lib))
        rows = {}
        for label, args in (("approve (1)", ["approve", names[0], "1"]),
                            ("promote (1)", ["promote", names[0], "1"]),
                            (f"approve --held ({BULK - 1})", ["approve", "--held"]),
                            (f"promote NAME... ({BULK - 1})", ["promote", *names[1:]])):
            rows["skills " + label] = _time([skills, *args], local, work)
        return rows

    run.each(measure)


def _fetch(run: Run, skills: str, base: dict[str, str], work: Path) -> None:
    """The model floor, `skills fetch` with no server, and `skills fetch` while a `skills
    serve` of the same library answers (docs/serving.md)."""
    def alone(i: int, tree: Path | None) -> dict[str, Timing]:
        env = run.env(base, tree)
        return {"python: load the model, embed one text": _time([sys.executable, "-c", MODEL_FLOOR], env, work),
                "skills fetch (no server: loads the model)": _time([skills, "fetch", "water the roses"], env, work)}

    run.each(alone)
    for index, tree in enumerate(run.trees):
        env = run.env(base, tree)
        with _serving(skills, env, work) as up:
            for _ in range(run.repeat):
                timing = _time([skills, "fetch", "water the roses"], env, work) if up else (0.0, 1, 0.0)
                run.add("skills fetch (a skills serve running)", index, timing)


@contextlib.contextmanager
def _serving(skills: str, env: dict[str, str], work: Path) -> Iterator[bool]:
    """A `skills serve` of the library in ``env`` for the block; True once its socket exists."""
    server = subprocess.Popen([skills, "serve"], env=env, cwd=work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        socket_file = Path(env["SKILLS_DIR"]) / "serve.sock"
        deadline = time.monotonic() + 300
        while not socket_file.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
        yield socket_file.exists()
    finally:
        _stop(server)


def _print(run: Run, floor: str, options: argparse.Namespace, load_before: tuple[float, ...]) -> None:
    names = [("installed" if t is None else t.name) for t in run.trees]
    print(f"$ python benchmarks/perf_cli.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"median of {options.repeat}; load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
          "per tree: wall seconds, 'x typer' (wall / the typer floor's), CPU seconds (user + system)")
    header = f"{'command':<42}" + "".join(f" {n[:12]:>12} {'x typer':>8} {'cpu':>6}" for n in names) + "  exit"
    print(header)
    floors = [run.median(floor, i)[0] for i in range(len(run.trees))]
    for label in run.rows:
        cells = ""
        codes = []
        for i in range(len(run.trees)):
            seconds, code, cpu = run.median(label, i)
            cells += f" {seconds:>12.2f} {seconds / floors[i]:>8.1f} {cpu:>6.2f}"
            codes.append(str(code))
        print(f"{label:<42}{cells}  {'/'.join(codes)}")
    model = "python: load the model, embed one text"
    if model in run.rows:
        for i, name in enumerate(names):
            fetch = run.median("skills fetch (no server: loads the model)", i)[0]
            print(f"{name}: skills fetch (no server) / model floor = {fetch / run.median(model, i)[0]:.2f}x")


if __name__ == "__main__":
    raise SystemExit(main())
