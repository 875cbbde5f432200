"""τ-bench retail in the harness: ``python -m benchmarks taubench --data DIR``.

    python -m benchmarks taubench [--data DIR] [--protocol cv|dev|all] [--folds 5] [--fold F]
                                  [--limit N] [--k 3] [--no-oracle] [--out benchmarks/results/taubench]

See :mod:`benchmarks.taubench.protocol` for the method and ``benchmarks/README.md`` for the
figures. Results (``results.json``, ``results.md``, ``taubench.png``) hold task ids, skill
names and numbers only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.taubench.data import DataError, Retail, fold_of, resolve_data_dir
from benchmarks.taubench.protocol import TauConfig, run_cv, run_dev

__all__ = ["DataError", "Retail", "TauConfig", "fold_of", "merge", "resolve_data_dir", "run", "run_cv", "run_dev"]


def _commit() -> str | None:
    """The checkout's short commit (with ``+changes`` when it has uncommitted ones), or None."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=here, timeout=10).stdout.strip() or None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "benchmarks",
                                "skill_library", "sandbox"], capture_output=True, text=True, cwd=here,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+changes" if commit and dirty else commit


def _machine(started: float, commit: str | None) -> dict[str, Any]:
    return {"host": platform.node(), "cores": os.cpu_count(), "load": [round(x, 1) for x in os.getloadavg()],
            "commit": commit, "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "elapsed_s": round(time.perf_counter() - started, 1)}


def write(results: dict[str, Any], out: Path) -> list[Path]:
    """results.json, results.md and the plot into ``out``; the paths written."""
    from benchmarks.taubench import report

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    paths[1].write_text(report.markdown(results), encoding="utf-8")
    png = report.plot(results, out / "taubench.png")
    return paths + ([png] if png else [])


def run(config: TauConfig, *, embedder: Any = None, progress: Any = None, write_out: bool = True) -> dict[str, Any]:
    """Run the configured protocol(s); results (written to ``config.out`` after each fold)."""
    from benchmarks.taubench import report

    started, commit = time.perf_counter(), _commit()  # the code that runs: the commit at the start
    retail = Retail(config.data)
    if config.protocol not in ("cv", "dev", "all"):
        raise ValueError(f"--protocol must be cv, dev or all, got {config.protocol!r}")
    if config.fold is not None and not 0 <= config.fold < config.folds:
        raise ValueError(f"--fold must be within 0..{config.folds - 1}, got {config.fold}")
    if embedder is None:
        from benchmarks.harness import default_embedder

        embedder = default_embedder()
    state: dict[str, Any] = {"cv": None, "dev": None}

    def save() -> dict[str, Any]:
        results = report.build(config, state["cv"], state["dev"], _machine(started, commit))
        if write_out:
            write(results, Path(config.out))
        return results

    results: dict[str, Any] = {}
    if config.protocol in ("cv", "all"):
        def on_fold(cv: dict[str, Any]) -> None:
            state["cv"] = cv
            save()

        state["cv"] = run_cv(config, retail, embedder, progress=progress, on_fold=on_fold)
        results = save()
    if config.protocol in ("dev", "all"):
        state["dev"] = run_dev(config, retail, embedder, progress=progress)
        results = save()
    return results


def merge(paths: list[Path], out: Path, command: str | None = None) -> dict[str, Any]:
    """One cv result from several runs' ``results.json`` (e.g. folds run as separate processes
    with ``--fold``), written to ``out``; ValueError for a file without cv or a fold twice."""
    from benchmarks.taubench import report

    folds: dict[str, Any] = {}
    machines, commands = [], []
    config = None
    for path in paths:
        try:
            results = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"--merge {path}: not a readable results.json ({type(exc).__name__})") from None
        if "cv" not in results:
            raise ValueError(f"--merge {path}: has no cross-validation results")
        cfg = results["config"]
        config = config or cfg
        if cfg["folds"] != config["folds"] or cfg["limit"] != config["limit"] or cfg["k"] != config["k"]:
            raise ValueError(f"--merge {path}: run with other --folds, --limit or --k than {paths[0]}")
        machines.append(results["machine"])
        commands.append(cfg.get("command") or "")
        cv = results["cv"]
        for f, fold in cv["per_fold"].items():
            if f in folds:
                raise ValueError(f"--merge {path}: fold {f} is in two of the files")
            lib, skills = fold["library"], cv["skills"][f]
            folds[f] = {"learn": {"traces": lib["traces"], "learn_s": lib["learn_s"],
                                  "traces_per_s": lib["traces_per_s"], "statuses": lib["statuses"],
                                  "traces_per_skill": {s["name"]: s["traces"] for s in skills}},
                        "solve_s": fold["solve_s"], "skills": skills, "fetch_args": fold["fetch_args"],
                        "plan": fold["plan"],
                        "records": [r for r in cv["records"] if fold_of(r["task_id"], cfg["folds"]) == int(f)]}
    assert config is not None
    tau = TauConfig(protocol="cv", folds=config["folds"], limit=config["limit"], k=config["k"], out=out,
                    command=command or " ; ".join(commands), oracle=config.get("oracle", True))
    machine = dict(machines[-1])
    machine.update(elapsed_s=max(m["elapsed_s"] for m in machines), runs=machines,
                   finished=max(m["finished"] for m in machines))
    merged = report.build(tau, {"folds": dict(sorted(folds.items(), key=lambda kv: int(kv[0])))}, None, machine)
    write(merged, out)
    return merged
