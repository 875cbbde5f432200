"""A tiny world for the evaluation and canary tests: a shelf with one tool, ``restock``.

``factory(task)`` gives each task a fresh shelf, its tools, their schema and a check of the
final state (``task.goal``: item -> count); ``restock`` counts 7 model tokens per call, as
an LLM-backed tool would report them.
"""

from __future__ import annotations

from typing import Any

from skill_library.governance.suite import SuiteTask, TaskEnvironment

RESTOCK_SCHEMA = {
    "type": "object",
    "properties": {"item": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["item", "count"],
}
TOKENS_PER_CALL = 7


class Shelf:
    def __init__(self) -> None:
        self.stock: dict[str, int] = {}
        self.tokens = 0

    def restock(self, item: str, count: int) -> dict[str, Any]:
        self.tokens += TOKENS_PER_CALL
        self.stock[item] = self.stock.get(item, 0) + count
        return {"item": item, "stock": self.stock[item]}


def factory(task: SuiteTask) -> TaskEnvironment:
    shelf = Shelf()
    return TaskEnvironment(
        tools={"restock": shelf.restock},
        tool_schemas={"restock": RESTOCK_SCHEMA},
        check=lambda run: all(shelf.stock.get(k, 0) == v for k, v in task.goal.items()),
        tokens=lambda: shelf.tokens,
    )


WHEN = "restock {count} {item} on the fruit shelf"
#: the active version: restocks at most 5
V1 = '''
def stock_item(item: str, count: int):
    return restock(item=item, count=min(count, 5))
'''
#: the candidate: any count, but one pear too many (and a rush flag for figs, outside the schema)
V2 = '''
def stock_item(item: str, count: int):
    if item == "fig":
        return restock(item=item, count=count, rush=True)
    if item == "pear":
        return restock(item=item, count=count + 1)
    return restock(item=item, count=count)
'''
#: a candidate that is right everywhere
V3 = '''
def stock_item(item: str, count: int):
    return restock(item=item, count=count)
'''


def actors(library):
    """A proposing service and an approving user, registered in ``library``."""
    from skill_library.governance import Actor

    proposer = Actor(id="pat", kind="service", permissions=frozenset({"skill.propose"}))
    approver = Actor(id="rita", kind="user", permissions=frozenset({"skill.approve"}))
    library.actors.add(proposer)
    library.actors.add(approver)
    return proposer, approver


def governed_library(path, embedder):
    """A library with the default, fail-closed policy (``read_only``)."""
    from skill_library.library import SkillLibrary

    return SkillLibrary(path, embedder=embedder)
