"""Commands that evaluate and roll out a version: evaluate, canary, canaries (promote and
rollback are in ``governance``).

``skills evaluate NAME V --suite FILE --world MODULE:FACTORY`` mirrors
``SkillLibrary.evaluate``: the suite file is JSON, YAML or JSON Lines of tasks
(skill_library.governance.suite), and ``--world`` names the tools factory, a callable taking
one suite task and returning its ``TaskEnvironment`` (a fresh world's tools, their schemas
and its check): ``package.module:name`` (imported) or ``path/to/file.py:name`` (loaded from
the file; ``sys.path`` is never changed). The benchmark worlds have one each:
``benchmarks.worlds.crafting:factory``, ``benchmarks.worlds.shop:factory``.
Every command acts as ``--actor`` (or ``SKILLS_ACTOR``; default: the local administrator).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from skill_library.cli._common import (
    EXIT_REFUSED,
    ActorOption,
    DirOption,
    JsonOption,
    command,
    console,
    emit,
    fail,
    open_library,
)


def load_factory(spec: str) -> Callable[..., Any]:
    """The tools factory ``MODULE:NAME`` or ``FILE.py:NAME`` names (one-line errors)."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        fail(f"--world must be MODULE:NAME or FILE.py:NAME, got {spec!r}")
    from_file = module_name.endswith(".py") or "/" in module_name
    if from_file and not Path(module_name).is_file():
        fail(f"--world: no such file {module_name}")
    try:
        if from_file:
            path = Path(module_name)
            loaded = importlib.util.spec_from_file_location(f"_skills_world_{path.stem}", path)
            assert loaded is not None and loaded.loader is not None
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ImportError as exc:
        fail(f"--world: cannot import {module_name}: {exc}")
    except Exception as exc:  # the module itself failed while loading
        fail(f"--world: loading {module_name} raised {type(exc).__name__}: {exc}")
    factory = getattr(module, attribute, None)
    if not callable(factory):
        fail(f"--world: {module_name} has no callable {attribute!r}")
    return factory  # type: ignore[no-any-return]


@command
def evaluate(
    name: str,
    version: int,
    suite: Path = typer.Option(..., "--suite", help="Suite file: JSON, YAML or JSON Lines of tasks."),
    world: str = typer.Option(..., "--world", help="Tools factory: MODULE:NAME or FILE.py:NAME."),
    actor: Optional[str] = ActorOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Evaluate a version against the active one: SkillLibrary.evaluate(name, version, suite, tools, actor=)."""
    from skill_library.governance.suite import Suite

    loaded = Suite.load(suite)
    factory = load_factory(world)
    with open_library(directory) as lib:
        result = lib.evaluate(name, version, loaded, factory, actor=actor)
    if as_json:
        emit(result.model_dump(mode="json"))
    else:
        against = (f" vs v{result.active_version} {result.active_success_rate:.0%}"
                   if result.active_version is not None and result.active_success_rate is not None else "")
        console.print(
            f"evaluation {result.id} of {name} v{version} on {result.suite_id} "
            f"({result.suite_hash[:12]}): {'passed' if result.passed else 'FAILED'}, "
            f"{result.candidate_success_rate:.0%}{against}", highlight=False,
        )
        for reason in result.reasons:
            console.print(f"  {reason}", highlight=False)
    if not result.passed:
        raise typer.Exit(EXIT_REFUSED)


@command
def canary(
    name: str,
    version: int,
    share: Optional[float] = typer.Option(None, "--share", help="Share of sessions, in (0, 1) (default 0.1)."),
    cohort: Optional[str] = typer.Option(None, "--cohort", help="A named cohort that gets the canary."),
    actor: Optional[str] = ActorOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Start a canary of an approved version: SkillLibrary.start_canary(name, version, actor=, share=, cohort=)."""
    with open_library(directory) as lib:
        skill = lib.start_canary(name, version, actor=actor, share=share, cohort=cohort)
    if as_json:
        emit({"name": skill.name, "version": skill.version, "status": skill.status,
              "share": share if share is not None or cohort is not None else None, "cohort": cohort})
    else:
        who = f"cohort {cohort}" if cohort else f"{share if share is not None else 0.1:.0%} of sessions"
        console.print(f"{skill.name} v{skill.version} is a canary for {who}", highlight=False)


@command
def canaries(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The running canaries with their evidence and decision: SkillLibrary.canaries()."""
    with open_library(directory) as lib:
        states = lib.canaries()
    if as_json:
        emit([s.model_dump(mode="json") for s in states])
        return
    if not states:
        console.print("no canaries")
        return
    for s in states:
        who = ", ".join(filter(None, [f"{s.share:.0%}" if s.share else "", f"cohort {s.cohort}" if s.cohort else ""]))
        console.print(
            f"{s.name} v{s.version} ({who}) against v{s.active_version}: "
            f"{s.canary_successes}/{s.canary_successes + s.canary_failures} vs "
            f"{s.active_successes}/{s.active_successes + s.active_failures} succeeded, "
            f"p={s.p_value:.3g}, {s.decision}", highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    app.command()(evaluate)
    app.command()(canary)
    app.command()(canaries)
