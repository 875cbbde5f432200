"""Governance commands: each mirrors one SkillLibrary call (docs/governance.md#governance).

``propose``, ``approve``, ``reject``, ``promote``, ``rollback``, ``audit``, ``diff``,
``delete``, ``review``, ``needs-human`` and the groups ``actors`` (add, list, remove),
``policy`` (show, set) and ``tools`` (register, list). Every command acts as ``--actor`` /
``SKILLS_ACTOR`` (default: the local administrator, the OS user).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.table import Table

from skill_library.cli._common import (
    EXIT_ERROR,
    EXIT_REFUSED,
    ActorOption,
    DirOption,
    JsonOption,
    command,
    console,
    deployment,
    emit,
    err_console,
    fail,
    open_library,
    required_text,
    skill_json,
    split_names,
    styled,
)

if TYPE_CHECKING:
    from skill_library.governance import AuditEvent, ToolSpec
    from skill_library.models import Skill

actors_app = typer.Typer(help="The actors registered in the library: SkillLibrary.actors.", no_args_is_help=True)
policy_app = typer.Typer(help="The tenant's policy: SkillLibrary.policy / set_policy.", no_args_is_help=True)
tools_app = typer.Typer(help="Declared tools: SkillLibrary.register_tools / tool_specs.", no_args_is_help=True)


def _event_json(event: AuditEvent) -> dict[str, Any]:
    return event.model_dump(mode="json")


def _done(skill: Skill, verb: str, as_json: bool) -> None:
    if as_json:
        emit(skill_json(skill))
    else:
        console.print(f"{verb} {skill.name} v{skill.version} ({skill.status})", highlight=False)


@command
def propose(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A .py file with the function."),
    when: str = typer.Option(..., "--when", help="When to use this skill (the text that is embedded)."),
    name: Optional[str] = typer.Option(None, "--name", help="The function, when the file defines several."),
    tools: Optional[str] = typer.Option(None, "--tools", help="Comma-separated tools (default: inferred)."),
    reason: str = typer.Option("", "--reason", help="Why (recorded in the audit log)."),
    actor: Optional[str] = ActorOption,
    directory: Optional[Path] = DirOption,
    as_json: bool = JsonOption,
) -> None:
    """Propose a skill as a draft, never fetched until approved: SkillLibrary.propose(skill, actor=)."""
    from skill_library.models import Skill

    try:
        skill = Skill.from_function(file.read_text(), when=when, name=name, infer_tools=True,
                                    tools=split_names(tools) if tools is not None else None)
    except ValueError as exc:
        if type(exc) is not ValueError:
            raise
        fail(str(exc))
    with open_library(directory) as lib:
        stored = lib.propose(skill, actor=actor, reason=reason)
    _done(stored, "proposed", as_json)


#: the positional arguments of approve and promote
VersionsArgument = typer.Argument(
    None, metavar="NAME [VERSION]...",
    help="Skills, each optionally followed by a version (default: its version waiting for the decision).",
)


def named_versions(words: list[str] | None, verb: str) -> list[str | tuple[str, int]]:
    """``["a", "2", "b"]`` -> ``[("a", 2), "b"]``: a number is the version of the name before it."""
    items: list[str | tuple[str, int]] = []
    for word in words or []:
        if word.isdigit():
            if not items or not isinstance(items[-1], str):
                fail(f"{verb}: {word} is a version, and names none before it: write NAME VERSION "
                     f"(skills {verb} NAME [VERSION]...)")
            items[-1] = (items[-1], int(word))
        elif not word.strip():
            fail(f"{verb}: an empty skill name; name the skills to {verb} (skills {verb} NAME [VERSION]...)")
        else:
            items.append(word)
    return items


def _decided(decisions: list[dict[str, Any]], verb: str, as_json: bool, *, one: bool = False) -> None:
    """One line per version (moved on stdout, refused on stderr); exit 1 when any was refused.
    ``decisions``: :func:`skill_library.served.decision_json` records (a running ``skills serve``
    answers them alike). With ``--json``: the list of decisions, or for ``one`` version named,
    its record."""
    if as_json and one and decisions[0]["skill"] is not None:
        emit(decisions[0]["skill"])
    elif as_json:
        emit([{"name": d["name"], "version": d["version"], "status": d["skill"]["status"] if d["skill"] else None,
               "error": d["error"]} for d in decisions])
    else:
        for d in decisions:
            if d["skill"] is not None:
                skill = d["skill"]
                console.print(f"{verb} {skill['name']} v{skill['version']} ({skill['status']})", highlight=False)
            else:
                where = d["name"] if d["version"] is None else f"{d['name']} v{d['version']}"
                err_console.print(styled(("error:", "red"), f" {where}: {d['error']}"), highlight=False)
    if any(d["error"] for d in decisions):
        raise typer.Exit(EXIT_ERROR)


def _served_decisions(directory: Path | None, op: str, **fields: Any) -> list[dict[str, Any]] | None:
    """The decisions a running ``skills serve`` of this library made (skill_library.served:
    ``approve`` / ``promote``, each version audited as here), or None: decide here. A server
    of another library, or one too old to know the op, is no answer; an error it reports is
    the command's one-line error."""
    from skill_library.cli.serve import served_key
    from skill_library.served import request

    path, key = served_key(directory)
    answer = request(path, {"op": op, "deployment": key, "tenant": deployment.get("tenant"), **fields})
    if answer is None or answer.get("wrong_library") or answer.get("unknown_op"):
        return None
    if not answer.get("ok"):
        fail(str(answer.get("error")))
    return list(answer["decisions"])


def _items_json(items: list[str | tuple[str, int]]) -> list[Any]:
    return [item if isinstance(item, str) else [item[0], item[1]] for item in items]


@command
def approve(
    names: Optional[list[str]] = VersionsArgument,
    held: bool = typer.Option(False, "--held", help="Every evaluated version waiting for approval "
                              "(what `skills learn` held)."),
    reason: str = typer.Option("", "--reason", help="Why (recorded in the audit log)."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Approve evaluated versions, each audited on its own: SkillLibrary.approve(name, version,
    actor=, reason=), or for several SkillLibrary.approve_many(items, actor=, reason=)."""
    items = named_versions(names, "approve")
    if not items and not held:
        fail("approve: name the skills to approve (skills approve NAME [VERSION]...), or approve every "
             "held one with --held (skills review lists them)")
    if items and held:
        fail("approve: give skill names or --held, not both")
    decisions = _served_decisions(directory, "approve", items=_items_json(items), held=held, actor=actor,
                                  reason=reason)
    if decisions is None:
        from skill_library.served import decision_json

        with open_library(directory) as lib:
            decisions = [decision_json(d) for d in lib.approve_many(None if held else items, actor=actor,
                                                                    reason=reason)]
    if held and not decisions and not as_json:
        console.print("nothing held: no evaluated version waits for approval", highlight=False)
    _decided(decisions, "approved", as_json, one=len(items) == 1)


@command
def reject(
    name: str, version: int,
    reason: str = typer.Option(..., "--reason", help="Why (recorded in the audit log)."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Reject a draft or evaluated version: SkillLibrary.reject(name, version, actor=, reason=)."""
    with open_library(directory) as lib:
        skill = lib.reject(name, version, actor=actor, reason=reason)
    _done(skill, "rejected", as_json)


@command
def promote(
    names: Optional[list[str]] = VersionsArgument,
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Make approved (or canary) versions active, each audited on its own:
    SkillLibrary.promote(name, version, actor=), or SkillLibrary.promote_many(items, actor=)."""
    items = named_versions(names, "promote")
    if not items:
        fail("promote: name the skills to promote (skills promote NAME [VERSION]...)")
    decisions = _served_decisions(directory, "promote", items=_items_json(items), actor=actor)
    if decisions is None:
        from skill_library.served import decision_json

        with open_library(directory) as lib:
            decisions = [decision_json(d) for d in lib.promote_many(items, actor=actor)]
    _decided(decisions, "promoted", as_json, one=len(items) == 1)


@command
def rollback(
    name: str,
    to: Optional[int] = typer.Option(None, "--to", help="The version to return to (default: the previous one)."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Flip the active version back at once: SkillLibrary.rollback(name, actor=, to_version=)."""
    with open_library(directory) as lib:
        skill = lib.rollback(name, actor=actor, to_version=to)
    _done(skill, "rolled back to", as_json)


@command
def audit(
    name: Optional[str] = typer.Argument(None, callback=required_text,
                                         help="A skill (default: every event of the tenant)."),
    directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """The audit events, oldest first: SkillLibrary.audit(name)."""
    with open_library(directory) as lib:
        events = lib.audit(name)
    if as_json:
        emit([_event_json(e) for e in events])
        return
    table = Table("at", "name", "v", "from", "to", "actor", "reason")
    for e in events:
        table.add_row(e.at.strftime("%Y-%m-%d %H:%M:%S"), e.name, "" if e.version is None else str(e.version),
                      e.from_status or "", e.to_status, e.actor, e.reason)
    console.print(table)


@command
def diff(name: str, v1: int, v2: int, directory: Optional[Path] = DirOption) -> None:
    """What changed between two versions: SkillLibrary.diff(name, v1, v2)."""
    with open_library(directory) as lib:
        text = lib.diff(name, v1, v2)
    typer.echo(text)


@command
def delete(
    name: str,
    yes: bool = typer.Option(False, "--yes", help="Delete without asking."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Remove a skill and all its records (admin only): SkillLibrary.delete(name, actor=)."""
    if not yes and not typer.confirm(f"delete {name} with every version, outcome and trace?"):
        raise typer.Exit(EXIT_REFUSED)
    with open_library(directory) as lib:
        event = lib.delete(name, actor=actor)
    if as_json:
        emit(_event_json(event))
    else:
        console.print(f"deleted {name}: {event.reason}", highlight=False)


@command
def review(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """Versions waiting for a person's decision: SkillLibrary.review_queue(). Each row says
    the decision (draft/evaluated: approve or reject; quarantined: lift the quarantine or
    retire; suspended: resume or retire) and, for a quarantined or suspended version, the
    latest audit event's reason (the evidence, e.g. the uplift interval)."""
    from skill_library.governance.workflow import DECISIONS, queue_reason

    with open_library(directory) as lib:
        queue = [(s, lib.needs_human(s.name, s.version),
                  queue_reason(lib, s) if s.status not in ("draft", "evaluated") else "")
                 for s in lib.review_queue()]
    if as_json:
        emit([{**skill_json(s), "needs_human": why, "decision": DECISIONS.get(s.status, ""), "reason": reason}
              for s, why, reason in queue])
        return
    table = Table("name", "v", "status", "tools")
    table.add_column("decision", no_wrap=True)
    table.add_column("why")
    for s, why, reason in queue:
        table.add_row(s.name, str(s.version), s.status, ", ".join(s.tools), DECISIONS.get(s.status, ""),
                      reason or "; ".join(why) or "-")
    console.print(table)


# -- actors, policy, tools ------------------------------------------------------------------
@actors_app.command("add")
@command
def actors_add(
    actor_id: str = typer.Argument(..., metavar="ID"),
    kind: str = typer.Option("user", "--kind", help="user, service, generalizer or system."),
    permissions: str = typer.Option(
        "skill.propose", "--permissions",
        help="Comma-separated: skill.propose, skill.approve, skill.admin (implies the others)."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Register an actor (admin only): SkillLibrary.actors.add(Actor(...), by=)."""
    from skill_library.governance import Actor

    new = Actor.model_validate({"id": actor_id, "kind": kind, "permissions": split_names(permissions)})
    with open_library(directory) as lib:
        lib.actors.add(new, by=actor)
    if as_json:
        emit(new.model_dump(mode="json"))
    else:
        console.print(f"registered {new.id} ({new.kind}: {', '.join(sorted(new.permissions))})", highlight=False)


@actors_app.command("list")
@command
def actors_list(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The registered actors: SkillLibrary.actors.list()."""
    with open_library(directory) as lib:
        found = lib.actors.list()
    if as_json:
        emit([a.model_dump(mode="json") for a in found])
        return
    table = Table("id", "kind", "permissions")
    for a in found:
        table.add_row(a.id, a.kind, ", ".join(sorted(a.permissions)))
    console.print(table)


@actors_app.command("remove")
@command
def actors_remove(
    actor_id: str = typer.Argument(..., metavar="ID"),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption,
) -> None:
    """Remove an actor (admin only): SkillLibrary.actors.remove(id, by=)."""
    with open_library(directory) as lib:
        lib.actors.remove(actor_id, by=actor)
    console.print(f"removed {actor_id}", highlight=False)


@policy_app.command("show")
@command
def policy_show(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The tenant's policy: SkillLibrary.policy."""
    with open_library(directory) as lib:
        current = lib.policy
    if as_json:
        emit(current.model_dump(mode="json"))
    else:
        console.print(", ".join(f"{k}={v}" for k, v in current.model_dump().items()), highlight=False)


@policy_app.command("set")
@command
def policy_set(
    auto_approve: str = typer.Option(..., "--auto-approve", help="never, read_only or all."),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Change the tenant's policy (admin only; audited): SkillLibrary.set_policy(policy, actor=)."""
    from skill_library.governance import Policy

    with open_library(directory) as lib:
        new = lib.policy.model_copy(update={"auto_approve": auto_approve})
        stored = lib.set_policy(Policy.model_validate(new.model_dump()), actor=actor)
    if as_json:
        emit(stored.model_dump(mode="json"))
    else:
        console.print(f"policy: auto_approve={stored.auto_approve}", highlight=False)


@tools_app.command("register")
@command
def tools_register(
    file: Path = typer.Argument(..., exists=True, dir_okay=False,
                                help='A JSON file: {"tool": {"schema": {...}, "side_effects": false}, ...}.'),
    actor: Optional[str] = ActorOption, directory: Optional[Path] = DirOption, as_json: bool = JsonOption,
) -> None:
    """Declare tools (admin only; audited): SkillLibrary.register_tools(specs, actor=)."""
    from skill_library.governance import ToolSpec

    try:
        data = json.loads(file.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{file}: not JSON ({exc.msg}, line {exc.lineno})")
    if not isinstance(data, dict):
        fail(f"{file}: expected a JSON object of tool name -> spec")
    specs = {name: ToolSpec.model_validate(spec) for name, spec in data.items()}
    with open_library(directory) as lib:
        lib.register_tools(specs, actor=actor)
    if as_json:
        emit({n: _spec_json(s) for n, s in specs.items()})
    else:
        console.print(f"declared {len(specs)} tool(s): {', '.join(specs)}", highlight=False)


@tools_app.command("list")
@command
def tools_list(directory: Optional[Path] = DirOption, as_json: bool = JsonOption) -> None:
    """The declared tools: SkillLibrary.tool_specs()."""
    with open_library(directory) as lib:
        specs = lib.tool_specs()
    if as_json:
        emit({n: _spec_json(s) for n, s in specs.items()})
        return
    for n, s in specs.items():
        console.print(f"{n}: {'side effects' if s.side_effects else 'read-only'}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add this group's commands to ``app``."""
    for function in (propose, approve, reject, promote, rollback, audit, diff, delete, review):
        app.command()(function)
    app.add_typer(actors_app, name="actors")
    app.add_typer(policy_app, name="policy")
    app.add_typer(tools_app, name="tools")


def _spec_json(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec as JSON: its schema, side effects and, when it has one, its description."""
    return spec.model_dump(mode="json", by_alias=True, exclude={"description"} if not spec.description else set())
