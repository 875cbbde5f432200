"""No raw SQL outside skill_library/storage/ (issue 24: one storage contract).

The counter reads every module of ``skill_library`` outside ``skill_library/storage/`` and
finds the lines that use SQLAlchemy: a name bound to ``sqlalchemy`` or to something imported
from it (``sa.select``, ``sa.Connection``, ``select(...)``), an ``import sqlalchemy``, a table
object (anything imported whose value is a ``sqlalchemy.Table``, e.g. ``versions_table``,
directly or as ``module.versions_table``), and ``.execute(`` / ``.exec_driver_sql(`` calls.
Each such line counts once. Run it as a script to print the count per module:

    PYTHONPATH=. python tests/test_layers_sql.py
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import sqlalchemy as sa

PACKAGE = Path(__file__).resolve().parent.parent / "skill_library"
STORAGE = PACKAGE / "storage"

#: module (path under skill_library/) -> its SQL lines, with why it cannot move (none now:
#: every line moved into storage/). An entry must be exact: the test fails on more or fewer.
ALLOWED: dict[str, int] = {}

_EXECUTING = {"execute", "exec_driver_sql"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str | None, level: int, here: str, is_package: bool) -> str | None:
    if level == 0:
        return module
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _is_table(module: str, attr: str) -> bool:
    try:
        value = getattr(importlib.import_module(module), attr, None)
    except ImportError:
        return False
    return isinstance(value, sa.Table)


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def sql_lines(path: Path, here: str | None = None) -> list[int]:
    """The lines of ``path`` (the module ``here``, default: its name under skill_library)
    that use SQLAlchemy (sorted, each once)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = here or _module_name(path)
    is_package = path.name == "__init__.py"
    sqlalchemy_names: set[str] = set()   # names bound to sqlalchemy or its members
    table_names: set[str] = set()        # names bound to a table object
    module_names: dict[str, str] = {}    # names bound to a skill_library module
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sqlalchemy":
                    sqlalchemy_names.add((alias.asname or alias.name).split(".")[0])
                    lines.add(node.lineno)
                elif alias.name.startswith("skill_library") and alias.asname:
                    module_names[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, here, is_package)
            if source is None:
                continue
            if source.split(".")[0] == "sqlalchemy":
                sqlalchemy_names.update(a.asname or a.name for a in node.names)
                lines.add(node.lineno)
            elif source.startswith("skill_library"):
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if _is_table(source, alias.name):
                        table_names.add(bound)
                    elif _is_module(f"{source}.{alias.name}"):
                        module_names[bound] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (node.id in sqlalchemy_names or node.id in table_names):
            lines.add(node.lineno)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in module_names and _is_table(module_names[node.value.id], node.attr)):
            lines.add(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _EXECUTING
              and not (isinstance(node.func.value, ast.Name) and node.func.value.id in module_names)):
            # conn.execute(...), not a library module's function of that name (execution.execute)
            lines.add(node.lineno)
    return sorted(lines)


def counts() -> dict[str, int]:
    """Module path (under skill_library/) -> its SQL lines, for modules outside storage/ that have any."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if STORAGE in path.parents:
            continue
        n = len(sql_lines(path))
        if n:
            found[str(path.relative_to(PACKAGE))] = n
    return found


def test_the_counter_finds_sql_and_only_sql(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sqlalchemy as sa\n"                                       # 1 an import
        "from skill_library.storage.tables import versions_table\n"       # 2 (an import of a table: not a use)
        "from skill_library.storage import tables\n"                      # 3
        "def f(conn: 'object', d: dict) -> None:\n"                       # 4
        "    d.update(a=1)\n"                                              # 5 a dict's update: not SQL
        "    conn.execute(sa.select(versions_table.c.name))\n"            # 6
        "    rows = tables.outcomes_table.c.id\n"                         # 7
        "    text = 'select(insert(update('\n"                             # 8 a string: not SQL
        "    return None\n"                                               # 9
        "from skill_library import execution\n"                          # 10
        "execution.execute(None, None)\n"                                # 11 a module's function: not SQL
    )
    assert sql_lines(probe, here="skill_library.probe") == [1, 6, 7]


def test_no_sql_outside_storage_but_the_allowed():
    found = counts()
    differ = {m: (found.get(m, 0), ALLOWED.get(m, 0)) for m in sorted(set(found) | set(ALLOWED))
              if found.get(m, 0) != ALLOWED.get(m, 0)}
    assert not differ, (
        f"raw SQL lines outside skill_library/storage/ differ from the allow-list, module: (found, allowed): "
        f"{differ}: move the SQL into storage/, or lower the allow-list")


#: the modules outside storage/ that may name the SQL implementation: the facade layer that
#: opens and copies stores, and the module that re-exports it for callers
NAMES_THE_IMPLEMENTATION = {"opening.py", "deploy.py", "record_store.py"}


def implementation_names(path: Path) -> list[int]:
    """The lines of ``path`` whose code (not its strings) names ``SQLRecordStore``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    lines = set()
    for node in ast.walk(tree):
        if ((isinstance(node, ast.Name) and node.id == "SQLRecordStore")
                or (isinstance(node, ast.Attribute) and node.attr == "SQLRecordStore")
                or (isinstance(node, ast.alias) and node.name == "SQLRecordStore")
                or (isinstance(node, ast.Constant) and node.value == "SQLRecordStore")):  # an annotation string
            lines.add(node.lineno)
    return sorted(lines)


def test_the_concept_modules_use_the_unit_of_work_not_the_sql_store(tmp_path):
    """Governance, procedures, patterns, erasure, redaction, uplift and telemetry take the
    record store through skill_library.storage.interface.unit_of_work (issue 24: one
    storage contract); only the facade layer names SQLRecordStore."""
    probe = tmp_path / "probe.py"
    probe.write_text('"""SQLRecordStore in a docstring."""\n'
                     "from skill_library.record_store import SQLRecordStore\n"
                     "def f(s: 'SQLRecordStore') -> bool:\n"
                     "    return isinstance(s, record_store.SQLRecordStore)\n")
    assert implementation_names(probe) == [2, 3, 4]
    found = {str(path.relative_to(PACKAGE)): implementation_names(path) for path in sorted(PACKAGE.rglob("*.py"))
             if STORAGE not in path.parents}
    reaching = {module: lines for module, lines in found.items() if lines and module not in NAMES_THE_IMPLEMENTATION}
    assert not reaching, (f"modules outside storage/ name SQLRecordStore (module: lines): {reaching}: take "
                          "skill_library.storage.interface.unit_of_work(store) and the UnitOfWork contract instead")


if __name__ == "__main__":
    sys.path.insert(0, str(PACKAGE.parent))
    found = counts()
    for module, n in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  skill_library/{module}")
    print(f"{sum(found.values()):5d}  lines in {len(found)} modules outside skill_library/storage/")
