"""Every CLI command has help and is documented in docs/cli.md (issue 16); every anchor that
code, error messages and the docs cite exists (issue 25: the README's reference moved to
docs/ topic pages)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from skill_library.cli import app

ROOT = Path(__file__).resolve().parents[1]
CLI_DOC = (ROOT / "docs" / "cli.md").read_text()
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def cli_section() -> str:
    """The command block of docs/cli.md (its first section)."""
    match = re.search(r"^## CLI\n(.*?)(?=^## |^### )", CLI_DOC, re.S | re.M)
    assert match, "docs/cli.md has no '## CLI' section"
    return match.group(1)


def test_the_registry_is_complete():
    assert {"init", "add", "list", "show", "history", "retire", "outcomes", "traces",
            "learn", "fetch", "run", "feedback", "reindex"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_and_is_documented(name):
    result = CliRunner().invoke(app, [name, "--help"])
    assert result.exit_code == 0, result.output
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    assert (command.help or "").strip(), f"`skills {name}` has no help text"
    assert re.search(rf"skills {name}\b", cli_section()), f"`skills {name}` is not in docs/cli.md"


def _help_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        paths += _help_paths(sub, (*path, name))
    return paths


@pytest.mark.parametrize("path", _help_paths(typer.main.get_command(app)), ids=lambda p: " ".join(p) or "skills")
def test_every_help_page_renders(path):
    """The root, every group and every command print their help (a help text holding rich
    markup, as ``[/COLLECTION]`` once did, made ``skills --help`` crash for every new user)."""
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


# -- anchors ---------------------------------------------------------------------------------
#: where citations live: code (docstrings, comments, error messages) and the docs themselves
CITING = [*(ROOT / "skill_library").rglob("*.py"), *(ROOT / "sandbox").rglob("*.py"),
          *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "examples").glob("*.py"),
          *(ROOT / "skill_library").rglob("*.html"),
          ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
#: a cited page and anchor: docs/PAGE.md#anchor in code, (PAGE.md#anchor) or (#anchor) in the docs
CITATION = re.compile(r"(?:\b(docs/[\w-]+\.md)|\]\(((?:\.\./)?[\w/.-]*\.md)?)#([\w-]+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a markdown page: its headings' (outside code) and explicit ``<a id>``s."""
    found: set[str] = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (heading := re.match(r"#{1,6} (.*)", line)):
            found.add(slug(heading.group(1)))
    found |= set(re.findall(r'<a id="([\w-]+)"', page.read_text()))
    return found


def citations() -> list[tuple[str, str, str]]:
    """(citing file, cited page, anchor) for every anchor citation in code and docs."""
    out = []
    for path in CITING:
        for match in CITATION.finditer(path.read_text()):
            code_page, link_page, anchor = match.groups()
            if code_page:
                page = ROOT / code_page
            elif link_page:
                page = (path.parent / link_page).resolve()
            else:
                page = path
            out.append((str(path.relative_to(ROOT)), str(page.relative_to(ROOT)), anchor))
    return out


def test_code_and_docs_cite_anchors():
    cited = citations()
    assert len(cited) > 10 and any(p.startswith("skill_library") for p, _, _ in cited)


@pytest.mark.parametrize("citing, page, anchor", sorted(set(citations())))
def test_every_cited_anchor_exists(citing, page, anchor):
    assert (ROOT / page).is_file(), f"{citing} cites {page}, which does not exist"
    assert anchor in anchors(ROOT / page), f"{citing} cites {page}#{anchor}: no such heading or anchor"


def test_every_cited_page_exists():
    """Pages cited without an anchor (docs/NAME.md in code, links in the docs) exist too."""
    missing = []
    for path in CITING:
        text = path.read_text()
        for page in re.findall(r"\bdocs/[\w-]+\.md", text):
            if not (ROOT / page).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {page}")
        if path.suffix == ".md":
            for link in re.findall(r"\]\(((?:\.\./)?[\w/.-]+\.(?:md|png))(?:#[\w-]+)?\)", text):
                if not (path.parent / link).resolve().is_file():
                    missing.append(f"{path.relative_to(ROOT)}: {link}")
    assert not missing, missing


def test_the_readme_stays_short_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 320
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"
