"""Agent Skills folders (agentskills.io specification): export active skills, import drafts.

A folder per skill, named like the skill, holding ``SKILL.md`` (YAML frontmatter with only
the allowed keys, then a Markdown body with usage and parameters) and the code under
``scripts/``. Our names are snake_case Python identifiers; a folder's name is the same with
hyphens (``cancel_every_order`` <-> ``cancel-every-order``).

Import checks every rule of the specification and says which one a folder breaks, one line
each; a valid folder becomes an unverified **draft**: stored, never indexed, fetched or run
until it is verified. A folder identical to a version the library holds (same code, ``when``,
tools, parameters and dependencies) is a ``duplicate`` of it, not a new draft.

``references/evidence.json`` (:data:`EVIDENCE_FILE`) carries what the folder's skill was
fetched by and proven on: its masked example tasks (the stored texts, whose values are
placeholders already; the values they bound as shape stand-ins, :func:`privacy.shape_dummy`:
``alice@example.com`` -> ``xxxxx@xxxxxxx.xxx``), its preconditions when it has any, and its
evidence (outcome counts, reliability). Import restores the example tasks for a name new to
the library (a name it holds keeps its own), so the skill is fetched by them once active.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

import jinja2
import yaml  # type: ignore[import-untyped]

from skill_library import signature
from skill_library.models import Example, Provenance, Skill
from skill_library.presentation.prompt_block import usage_line
from skill_library.privacy import shape_dummy

if TYPE_CHECKING:
    from skill_library.library import SkillLibrary

#: the folder of this module's jinja2 template (agent_skill.md.j2)
TEMPLATES = Path(__file__).parent / "templates"

__all__ = [
    "ALLOWED_KEYS",
    "ExportResult",
    "ImportResult",
    "SkillFolderError",
    "export_library",
    "evidence_of",
    "export_skills",
    "folder_name",
    "import_folders",
    "name_problems",
    "read_examples",
    "read_skill_folder",
]

ALLOWED_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
#: the largest SKILL.md read, in bytes, checked before it is read or parsed (the script is
#: held to the skill source limit, ``sandbox.policy.MAX_SOURCE_BYTES``)
MAX_SKILL_MD_BYTES = 256 * 1024
IMPORTED_BY = "agent-skills-import"
#: the folder's evidence file: example tasks, preconditions, outcome counts
EVIDENCE_FILE = "references/evidence.json"
EVIDENCE_FORMAT = "skill-library evidence 1"
#: the largest evidence file read, in bytes
MAX_EVIDENCE_BYTES = 1024 * 1024
COMPATIBILITY = "Python 3.11+; written for skill-library's sandbox, which passes in the host tools it calls"

_NAME_CHARS = re.compile(r"^[a-z0-9-]+$")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)


class SkillFolderError(ValueError):
    """A folder breaks the specification; ``problems`` has one line per broken rule."""

    def __init__(self, folder: Path, problems: list[str]) -> None:
        self.folder = folder
        self.problems = problems
        super().__init__(f"{folder}: " + "; ".join(problems))


@dataclass
class ExportResult:
    """What :func:`export_skills` wrote (folders) and left out (name -> reason)."""

    written: list[Path] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass
class ImportResult:
    """One folder's import: stored as ``draft`` (with ``skill``), ``duplicate`` (``skill``: the
    version it repeats) or ``invalid`` (with problems)."""

    folder: Path
    status: Literal["draft", "duplicate", "invalid"]
    skill: Skill | None = None
    problems: list[str] = field(default_factory=list)
    #: example tasks restored from references/evidence.json
    examples: int = 0


# -- rules -------------------------------------------------------------------------------
def name_problems(name: Any, folder: str | None = None) -> list[str]:
    """The spec's ``name`` rules that ``name`` breaks (empty when it is valid)."""
    if not isinstance(name, str) or not name:
        return ["name: required, a string of 1-64 characters"]
    problems = []
    if len(name) > MAX_NAME:
        problems.append(f"name: {len(name)} characters, at most {MAX_NAME} allowed")
    if not _NAME_CHARS.match(name):
        problems.append(f"name: {name!r} may hold only lowercase letters, digits and hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append(f"name: {name!r} may not start or end with a hyphen")
    if "--" in name:
        problems.append(f"name: {name!r} may not hold consecutive hyphens")
    if folder is not None and name != folder:
        problems.append(f"name: {name!r} must equal the folder's name {folder!r}")
    return problems


def frontmatter_problems(data: dict[str, Any], folder: str) -> list[str]:
    """Every rule of the specification that the frontmatter ``data`` breaks."""
    problems = []
    unknown = sorted(set(data) - ALLOWED_KEYS)
    if unknown:
        problems.append(
            f"frontmatter: key(s) {', '.join(unknown)} not allowed (only {', '.join(sorted(ALLOWED_KEYS))})"
        )
    problems += name_problems(data.get("name"), folder)
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("description: required, a non-empty string")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"description: {len(description)} characters, at most {MAX_DESCRIPTION} allowed")
    compatibility = data.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not compatibility.strip()):
        problems.append("compatibility: must be a non-empty string")
    elif isinstance(compatibility, str) and len(compatibility) > MAX_COMPATIBILITY:
        problems.append(f"compatibility: {len(compatibility)} characters, at most {MAX_COMPATIBILITY} allowed")
    metadata = data.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        problems.append("metadata: must map strings to strings (quote numbers: version: \"1\")")
    for key in ("license", "allowed-tools"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key}: must be a string")
    return problems


# -- export ------------------------------------------------------------------------------
def folder_name(skill_name: str) -> str:
    """The Agent Skills name of a skill: its name with hyphens for underscores."""
    return skill_name.replace("_", "-")


def export_skills(
    skills: Iterable[Skill], out: str | Path, *, license: str | None = None,
    tool_schemas: Mapping[tuple[str, int], Mapping[str, str]] | None = None,
    examples: Mapping[str, Sequence[Example]] | None = None,
) -> ExportResult:
    """Write one folder per code skill of ``skills`` into ``out`` (created when missing),
    with its ``examples`` (name -> example tasks) in :data:`EVIDENCE_FILE`; ``tool_schemas``
    (``{(name, version): {tool: digest}}``) go to ``metadata.tool-schemas``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = ExportResult()
    template = _environment().get_template("agent_skill.md.j2")
    for skill in skills:
        name = folder_name(skill.name)
        problems = name_problems(name)
        if skill.kind != "code" or not skill.code:
            problems.append("an instruction skill has no code to put under scripts/")
        if problems:
            result.skipped[skill.name] = "; ".join(problems)
            continue
        folder = out / name
        (folder / "scripts").mkdir(parents=True, exist_ok=True)
        (folder / "scripts" / f"{skill.name}.py").write_text((skill.code or "").rstrip() + "\n")
        front = _frontmatter(skill, name, license)
        if tool_schemas and tool_schemas.get((skill.name, skill.version)):
            front["metadata"]["tool-schemas"] = json.dumps(dict(tool_schemas[(skill.name, skill.version)]),
                                                           sort_keys=True)
        problems = frontmatter_problems(front, name)
        if problems:  # e.g. a `when` longer than the spec's description limit
            result.skipped[skill.name] = "; ".join(problems)
            continue
        body = template.render(**_body_context(skill))
        text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000) + "---\n\n" + body
        (folder / "SKILL.md").write_text(text.rstrip() + "\n")
        (folder / "references").mkdir(exist_ok=True)
        (folder / EVIDENCE_FILE).write_text(json.dumps(
            evidence_of(skill, (examples or {}).get(skill.name, ())), indent=2, sort_keys=True) + "\n")
        result.written.append(folder)
    return result


def evidence_of(skill: Skill, examples: Iterable[Example]) -> dict[str, Any]:
    """What :data:`EVIDENCE_FILE` holds for ``skill``: its masked example tasks (values as
    shape stand-ins), preconditions (when the skill has any) and outcome counts."""
    data: dict[str, Any] = {
        "format": EVIDENCE_FORMAT,
        "skill": skill.name,
        "version": skill.version,
        "examples": [{"trace_id": e.trace_id, "text": e.text, "params": shape_dummy(e.params),
                      "indexed": e.indexed} for e in examples],
        "evidence": {"successes": skill.successes, "failures": skill.failures,
                     "reliability": round(skill.reliability, 4)},
    }
    preconditions = getattr(skill, "preconditions", None)
    if preconditions:
        data["preconditions"] = preconditions if isinstance(preconditions, (list, dict, str)) else [
            p.model_dump(mode="json") if hasattr(p, "model_dump") else p for p in preconditions]
    return data


def _frontmatter(skill: Skill, name: str, license: str | None) -> dict[str, Any]:
    when = " ".join(skill.when.split())
    about = " ".join(skill.description.split())
    description = f"{about} Use when: {when}" if about and about != when else f"Use when: {when}"
    metadata = {
        "version": str(skill.version),
        "reliability": f"{skill.reliability:.4f}",
        "successes": str(skill.successes),
        "failures": str(skill.failures),
        "tools": ",".join(skill.tools),
        "source": f"skill-library {skill.name} v{skill.version} ({skill.provenance.generalizer})",
        "when": skill.when,
        "entry": skill.name,
        **({"depends-on": ",".join(skill.depends_on)} if skill.depends_on else {}),
        "parameters": json.dumps(skill.parameters, sort_keys=True),
    }
    front: dict[str, Any] = {"name": name, "description": description[:MAX_DESCRIPTION]}
    if license:
        front["license"] = license
    front["compatibility"] = COMPATIBILITY
    front["metadata"] = metadata
    if skill.tools:
        front["allowed-tools"] = " ".join(skill.tools)
    return front


def _body_context(skill: Skill) -> dict[str, Any]:
    schema = skill.parameters or {}
    required = set(schema.get("required", []))
    parameters = [
        {
            "name": p,
            "type": json.dumps(s.get("type", "any")).strip('"') if s else "any",
            "required": p in required,
            "default": json.dumps(s["default"]) if "default" in s else "",
        }
        for p, s in schema.get("properties", {}).items()
    ]
    example = {p["name"]: f"<{p['name']}>" for p in parameters if p["required"]}
    return {
        "skill": skill,
        "about": skill.description or skill.when,
        "when": skill.when,
        "script": f"{skill.name}.py",
        "usage": usage_line(skill),
        "example_json": json.dumps(example),
        "parameters": parameters,
    }


# -- import ------------------------------------------------------------------------------
def read_skill_folder(folder: str | Path) -> Skill:
    """The draft :class:`Skill` in an Agent Skills folder; :class:`SkillFolderError` if invalid."""
    folder = Path(folder)
    problems: list[str] = []
    if folder.is_symlink():
        raise SkillFolderError(folder, [f"{folder}: is a symbolic link (refused: links are never followed)"])
    skill_md = folder / "SKILL.md"
    if not skill_md.is_file() and not skill_md.is_symlink():
        raise SkillFolderError(folder, ["SKILL.md: missing"])
    match = _FRONTMATTER.match(_read(folder, skill_md, MAX_SKILL_MD_BYTES))
    if match is None:
        raise SkillFolderError(folder, ["SKILL.md: must start with YAML frontmatter between --- lines"])
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        raise SkillFolderError(folder, [f"SKILL.md: frontmatter is not YAML{line}"]) from None
    if not isinstance(data, dict):
        raise SkillFolderError(folder, ["SKILL.md: frontmatter must be a YAML mapping"])
    problems += frontmatter_problems(data, folder.name)
    code, script_problems = _script(folder)
    problems += script_problems
    if problems:
        raise SkillFolderError(folder, problems)
    return _to_skill(folder, data, code, _evidence(folder))


def read_examples(folder: str | Path) -> list[Example]:
    """The example tasks of a folder's :data:`EVIDENCE_FILE` (none when it has no such file);
    :class:`SkillFolderError` when the file breaks its format."""
    return _examples(Path(folder), _evidence(Path(folder)))


def _evidence(folder: Path) -> dict[str, Any] | None:
    path = folder / EVIDENCE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        data = json.loads(_read(folder, path, MAX_EVIDENCE_BYTES))
    except json.JSONDecodeError as exc:
        raise SkillFolderError(folder, [f"{EVIDENCE_FILE}: not JSON ({exc.msg} at line {exc.lineno})"]) from None
    if not isinstance(data, dict) or data.get("format") != EVIDENCE_FORMAT:
        raise SkillFolderError(folder, [f"{EVIDENCE_FILE}: not a {EVIDENCE_FORMAT!r} file "
                                        "(an object whose format says so)"])
    return data


def _examples(folder: Path, data: dict[str, Any] | None) -> list[Example]:
    if data is None:
        return []
    raw = data.get("examples", [])
    try:
        if not isinstance(raw, list):
            raise ValueError("must be a list")
        return [Example(trace_id=e["trace_id"], text=e["text"], params=e.get("params") or {},
                        indexed=bool(e.get("indexed", True))) for e in raw]
    except (TypeError, KeyError, ValueError) as exc:
        raise SkillFolderError(folder, [f"{EVIDENCE_FILE}: examples: each needs a trace_id and a text ({exc})"]) \
            from None


def _read(folder: Path, path: Path, limit: int) -> str:
    """The UTF-8 text of ``path`` inside ``folder``: never through a symbolic link, and
    its size checked (on the opened file) before anything is read."""
    where = path.relative_to(folder).as_posix()
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if path.is_symlink():
            raise SkillFolderError(folder, [f"{where}: is a symbolic link (refused: {path})"]) from None
        raise SkillFolderError(folder, [f"{where}: cannot be read ({exc.strerror or exc})"]) from None
    with os.fdopen(handle, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SkillFolderError(folder, [f"{where}: is not a regular file"])
        if info.st_size > limit:
            raise SkillFolderError(folder, [f"{where}: is {info.st_size} bytes, more than the "
                                            f"{limit} bytes read (refused before parsing)"])
        data = file.read(limit + 1)
    if len(data) > limit:
        raise SkillFolderError(folder, [f"{where}: is more than the {limit} bytes read (refused before parsing)"])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFolderError(folder, [f"{where}: is not UTF-8 text (byte {exc.start})"]) from None


def _script(folder: Path) -> tuple[str, list[str]]:
    from sandbox.policy import MAX_SOURCE_BYTES

    scripts_dir = folder / "scripts"
    if scripts_dir.is_symlink():
        return "", [f"scripts/: is a symbolic link (refused: {scripts_dir})"]
    scripts = sorted(scripts_dir.glob("*.py")) if scripts_dir.is_dir() else []
    linked = [p for p in scripts if p.is_symlink()]
    if linked:
        return "", [f"scripts/{linked[0].name}: is a symbolic link (refused: {linked[0]})"]
    if len(scripts) != 1:
        found = ", ".join(p.name for p in scripts) or "none"
        return "", [f"scripts/: must hold exactly one Python file with the skill's function (found {found})"]
    try:
        code = _read(folder, scripts[0], MAX_SOURCE_BYTES)
    except SkillFolderError as exc:
        return "", exc.problems
    try:
        functions = signature.top_level_functions(code)
    except ValueError as exc:
        return "", [f"scripts/{scripts[0].name}: {exc}"]
    if len(functions) != 1:
        return "", [f"scripts/{scripts[0].name}: must define exactly one top-level function, found {len(functions)}"]
    return code, []


def _to_skill(folder: Path, data: dict[str, Any], code: str, evidence: dict[str, Any] | None = None) -> Skill:
    metadata: dict[str, str] = data.get("metadata") or {}
    name = data["name"].replace("-", "_")
    function = signature.top_level_functions(code)[0].name
    if function != name:  # someone else's folder: the function takes the skill's name
        code = re.sub(rf"^def {re.escape(function)}\(", f"def {name}(", code, count=1, flags=re.MULTILINE)
    split = lambda text, sep=",": [t.strip() for t in text.split(sep) if t.strip()]  # noqa: E731
    tools = split(metadata["tools"]) if "tools" in metadata else split(data.get("allowed-tools", ""), None)
    when = metadata.get("when") or data["description"]
    fields: dict[str, Any] = {
        "name": name,
        "code": code,
        "when": when,
        "tools": tools,
        "depends_on": split(metadata.get("depends-on", "")),
        "status": "draft",
        "provenance": Provenance(generalizer=IMPORTED_BY, created_by=metadata.get("source") or str(folder)),
    }
    about, marker, _ = data["description"].rpartition(" Use when: ")
    if marker and "when" in metadata:  # ours: "<description> Use when: <when>"
        fields["description"] = about
    problems = []
    if evidence is not None and evidence.get("preconditions") and "preconditions" in Skill.model_fields:
        fields["preconditions"] = evidence["preconditions"]
    if "parameters" in metadata:
        try:
            fields["parameters"] = json.loads(metadata["parameters"])
        except json.JSONDecodeError as exc:
            problems.append(f"metadata.parameters: not JSON ({exc.msg})")
    if not problems:
        try:
            return Skill(**fields)
        except ValueError as exc:  # pydantic: the code, the tools, the name as an identifier
            problems += [_pydantic_line(e) for e in getattr(exc, "errors", lambda: [])()] or [str(exc)]
    raise SkillFolderError(folder, problems)


def _pydantic_line(error: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error.get("loc", ())) or "skill"
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    return f"{where}: {message}"


def import_folders(library: "SkillLibrary", root: str | Path) -> list[ImportResult]:
    """Import ``root`` (one skill folder, or a folder of them) into ``library`` as drafts."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder")
    single = (root / "SKILL.md").exists() or (root / "SKILL.md").is_symlink()
    folders = [root] if single else sorted(p for p in root.iterdir() if p.is_dir() or p.is_symlink())
    results = []
    for folder in folders:  # one folder's failure is reported; the others are still imported
        try:
            skill = read_skill_folder(folder)
            examples = read_examples(folder)
            same = _same_version(library, skill)
            if same is not None:
                results.append(ImportResult(folder=folder, status="duplicate", skill=same))
                continue
            new_name = skill.name not in library.context.store.names(prefix=skill.name)
            stored = library.import_draft(skill)
            restored = 0
            if examples and new_name:  # a name the library holds keeps its own examples
                library.context.store.save_evidence(stored.name, version=stored.version, examples=examples)
                restored = len(examples)
            results.append(ImportResult(folder=folder, status="draft", skill=stored, examples=restored))
        except SkillFolderError as exc:
            results.append(ImportResult(folder=folder, status="invalid", problems=exc.problems))
        except Exception as exc:  # noqa: BLE001 - a refusal of the store or of the policy
            results.append(ImportResult(folder=folder, status="invalid",
                                        problems=[f"{type(exc).__name__}: {exc}"]))
    return results


def _same_version(library: "SkillLibrary", skill: Skill) -> Skill | None:
    """The stored version ``skill`` repeats (same code, when, tools, parameters and
    dependencies), if any: importing one folder twice makes one draft."""
    try:
        versions = library.history(skill.name)
    except KeyError:  # SkillNotFoundError: a new name
        return None
    key = (skill.code, skill.when, skill.tools, skill.parameters, skill.depends_on)
    for version in reversed(versions):
        if (version.code, version.when, version.tools, version.parameters, version.depends_on) == key:
            return version
    return None


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def export_library(library: "SkillLibrary", out: str | Path, *, license: str | None = None) -> ExportResult:
    """:func:`export_skills` for every active skill of ``library``, with its example tasks
    and the digests of the tool schemas each was verified against."""
    skills = library.list(status="active")
    examples = library.context.store.examples([s.name for s in skills]) if skills else {}
    return export_skills(skills, out, license=license, examples=examples, tool_schemas={
        (s.name, s.version): library.tool_schema_digests(s.name, s.version) for s in skills if s.tools})
