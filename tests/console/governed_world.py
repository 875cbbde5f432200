"""A governed library for the console's tests: restock_apple v1 active, a v2 proposed by
bob and evaluated side by side on a two-task suite (one critical) in a fresh shelf world."""

from __future__ import annotations

from conftest import ACTOR

from skill_library.governance import Actor

APPROVER = Actor(id=ACTOR, kind="user", permissions=frozenset({"skill.approve"}))
PROPOSER = Actor(id="bob", kind="user", permissions=frozenset({"skill.propose"}))
V1 = "def restock_apple(count: int) -> dict:\n    return restock(item='apple', count=min(count, 5))\n"
V2 = ("def restock_apple(count: int) -> dict:\n    check(item='apple')\n"
      "    return restock(item='apple', count=count)\n")
#: breaks the critical task (one apple too few), mends the other
V_BAD = "def restock_apple(count: int) -> dict:\n    return restock(item='apple', count=count - (count == 3))\n"
WHEN = "restock apples in the fruit aisle"
SUITE = {"id": "shelf", "tasks": [
    {"id": "apple-3", "instruction": "restock 3 apples", "params": {"count": 3}, "goal": {"apple": 3},
     "critical": True},
    {"id": "apple-8", "instruction": "restock 8 apples", "params": {"count": 8}, "goal": {"apple": 8}},
]}


def shelf(task):
    """A fresh shelf per task: its tools and a check of the final stock."""
    from skill_library.governance.suite import TaskEnvironment

    stock: dict[str, int] = {}

    def check(item: str) -> dict:
        return {"item": item, "stock": stock.get(item, 0)}

    def restock(item: str, count: int) -> dict:
        stock[item] = stock.get(item, 0) + count
        return {"item": item, "stock": stock[item]}

    return TaskEnvironment(tools={"check": check, "restock": restock},
                           check=lambda run: all(stock.get(k, 0) == v for k, v in task.goal.items()))


def proposed(library, code: str, tools: list[str]) -> tuple[str, int]:
    """v1 active (added by the local administrator), ``code`` proposed by bob as the next
    version and evaluated on :data:`SUITE` by the administrator."""
    from skill_library.governance.suite import Suite
    from skill_library.models import Skill

    try:
        library.get("restock_apple")
    except KeyError:
        library.add(Skill.from_function(V1, when=WHEN, tools=["restock"]))
    if not any(a.id == PROPOSER.id for a in library.actors.list()):
        library.actors.add(PROPOSER)
    draft = library.propose(Skill.from_function(code, when=WHEN, tools=tools), actor="bob")
    library.evaluate(draft.name, draft.version, Suite.model_validate(SUITE), shelf, actor=None)
    return draft.name, draft.version


def held(library) -> tuple[str, int]:
    """An evaluated v2 waiting for a human: it widens v1's tools (check) and calls restock,
    undeclared, so counted as having side effects."""
    name, version = proposed(library, V2, ["check", "restock"])
    assert library.get(name, version).status == "evaluated", library.audit(name)
    return name, version


