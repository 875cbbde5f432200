"""A Voyager-like crafting world: mine blocks, craft tools, smelt ores, up to diamond tools.

Every task starts from an empty inventory. Mining needs the right pickaxe tier, crafting
most items needs a crafting_table in the inventory, smelting needs a furnace and one coal
of fuel per item. Recipes scale with the count asked for (``craft(item, count)`` runs as
many batches as needed), so a workflow learned for one count often works for another.
Errors say exactly what is missing ("need 3 planks, have 1").
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.worlds.base import GoldAction, Task, ToolError, Verdict, World, evaluation_factory

# block -> pickaxe tier needed (0 = by hand)
MINEABLE: dict[str, int] = {
    "log": 0,
    "sand": 0,
    "clay": 0,
    "cobblestone": 1,
    "coal": 1,
    "iron_ore": 2,
    "gold_ore": 3,
    "redstone": 3,
    "diamond": 3,
    "obsidian": 4,
}
PICKAXE_TIER: dict[str, int] = {
    "wooden_pickaxe": 1,
    "stone_pickaxe": 2,
    "iron_pickaxe": 3,
    "diamond_pickaxe": 4,
}
TIER_PICKAXE = {tier: item for item, tier in PICKAXE_TIER.items()}

# item -> (yield per batch, ingredients per batch, needs a crafting_table)
RECIPES: dict[str, tuple[int, dict[str, int], bool]] = {
    "planks": (4, {"log": 1}, False),
    "stick": (4, {"planks": 2}, False),
    "crafting_table": (1, {"planks": 4}, False),
    "torch": (4, {"coal": 1, "stick": 1}, False),
    "wooden_pickaxe": (1, {"planks": 3, "stick": 2}, True),
    "wooden_sword": (1, {"planks": 2, "stick": 1}, True),
    "chest": (1, {"planks": 8}, True),
    "stone_pickaxe": (1, {"cobblestone": 3, "stick": 2}, True),
    "stone_sword": (1, {"cobblestone": 2, "stick": 1}, True),
    "furnace": (1, {"cobblestone": 8}, True),
    "iron_pickaxe": (1, {"iron_ingot": 3, "stick": 2}, True),
    "iron_sword": (1, {"iron_ingot": 2, "stick": 1}, True),
    "bucket": (1, {"iron_ingot": 3}, True),
    "shears": (1, {"iron_ingot": 2}, True),
    "compass": (1, {"iron_ingot": 4, "redstone": 1}, True),
    "rail": (16, {"iron_ingot": 6, "stick": 1}, True),
    "clock": (1, {"gold_ingot": 4, "redstone": 1}, True),
    "diamond_pickaxe": (1, {"diamond": 3, "stick": 2}, True),
    "diamond_sword": (1, {"diamond": 2, "stick": 1}, True),
    "enchanting_table": (1, {"diamond": 2, "obsidian": 4}, True),
}
# item -> source item; smelting one item takes one source item and one coal
SMELTING: dict[str, str] = {
    "iron_ingot": "iron_ore",
    "gold_ingot": "gold_ore",
    "glass": "sand",
    "brick": "clay",
}
FUEL = "coal"
ITEMS: list[str] = sorted(set(MINEABLE) | set(RECIPES) | set(SMELTING))

# How a task (or a sub-goal) asking for ``count`` of an item is worded. Wordings differ
# per item (verb and purpose) so that learned skills' ``when`` texts stay apart under the
# library's 0.9 cosine de-duplication; see benchmarks/tasks/generate.py for measurements.
PHRASES: dict[str, str] = {
    "log": "Chop {count} logs off oak trees",
    "sand": "Scoop {count} sand from the beach",
    "clay": "Dig {count} clay from the riverbed",
    "cobblestone": "Quarry {count} cobblestone from rock",
    "coal": "Dig out {count} lumps of coal ore",
    "iron_ore": "Break {count} raw iron ore in the cave",
    "gold_ore": "Pick {count} raw gold ore from deep rock",
    "redstone": "Gather {count} redstone dust",
    "diamond": "Excavate {count} diamonds from the bedrock layer",
    "obsidian": "Collect {count} obsidian blocks near lava",
    "planks": "Saw {count} wooden planks out of logs",
    "stick": "Whittle {count} sticks from planks",
    "crafting_table": "Build {count} workbench (crafting table)",
    "torch": "Prepare {count} torches for lighting caves",
    "wooden_pickaxe": "Make {count} wooden pickaxe to start mining",
    "wooden_sword": "Carve {count} wooden sword for self-defence",
    "chest": "Put together {count} storage chest",
    "stone_pickaxe": "Upgrade to {count} stone pickaxe",
    "stone_sword": "Sharpen {count} stone sword",
    "furnace": "Set up {count} furnace for smelting",
    "iron_pickaxe": "Forge {count} iron pickaxe",
    "iron_sword": "Forge {count} iron sword for combat",
    "bucket": "Hammer out {count} iron bucket for water",
    "shears": "Fashion {count} shears for cutting wool",
    "compass": "Assemble {count} compass that points north",
    "rail": "Lay down {count} minecart rails",
    "clock": "Construct {count} golden clock",
    "diamond_pickaxe": "Craft {count} diamond pickaxe, the best tool",
    "diamond_sword": "Craft {count} diamond sword, the sharpest blade",
    "enchanting_table": "Erect {count} enchanting table for magic",
    "iron_ingot": "Smelt {count} iron ingots from ore",
    "gold_ingot": "Refine {count} gold ingots in the furnace",
    "glass": "Melt sand into {count} glass panes",
    "brick": "Bake {count} bricks from clay",
}

_ITEM_SCHEMA = {"type": "string", "enum": ITEMS}
_COUNT_SCHEMA = {"type": "integer", "minimum": 1, "description": "how many to obtain"}


def phrase(item: str, count: int) -> str:
    """The instruction asking for ``count`` of ``item`` (tasks and sub-goals use it)."""
    return PHRASES[item].format(count=count)


def method_of(item: str) -> str:
    """The tool that makes ``item``: 'mine', 'craft' or 'smelt'."""
    if item in MINEABLE:
        return "mine"
    if item in SMELTING:
        return "smelt"
    return "craft"


class CraftingWorld(World):
    """Inventory-only crafting: four tools, a tech tree of 34 items."""

    name = "crafting"
    description = (
        "A Minecraft-like crafting game played through an inventory; every task starts with "
        "an empty one. `mine` gathers blocks (harder blocks need a better pickaxe), `craft` "
        "makes items from ingredients you hold (most recipes need a crafting_table in the "
        "inventory), `smelt` turns ores and raw materials into ingots, glass or bricks (needs "
        "a furnace and burns one coal per item), and `inventory` lists what you hold."
    )

    def __init__(self) -> None:
        super().__init__()
        self.inventory: dict[str, int] = {}

    # -- World API --------------------------------------------------------------------

    def reset(self, seed: int = 0, task: Task | None = None) -> None:
        """Empty the inventory. The tech tree does not depend on the seed."""
        self.seed = seed
        self.inventory = {}

    def tool_functions(self):
        return {
            "inventory": self.tool_inventory,
            "mine": self.tool_mine,
            "craft": self.tool_craft,
            "smelt": self.tool_smelt,
        }

    def read_only_tools(self) -> frozenset[str]:
        return frozenset({"inventory"})

    def trusted_output_tools(self) -> frozenset[str]:
        # the game engine's messages ("needs a furnace") are its recipes: no third party writes them
        return frozenset(self.tool_functions())

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        item_args = {
            "type": "object",
            "properties": {"count": _COUNT_SCHEMA},
            "additionalProperties": False,
        }
        return {
            "inventory": {"type": "object", "properties": {}, "additionalProperties": False},
            "mine": _with(item_args, "block", {"type": "string", "description": "block to mine"}),
            "craft": _with(item_args, "item", {"type": "string", "description": "item to craft"}),
            "smelt": _with(item_args, "item", {"type": "string", "description": "item to smelt"}),
        }

    def tool_descriptions(self) -> dict[str, str]:
        return {
            "inventory": "List the items you hold and how many of each.",
            "mine": "Mine `count` of a block (log, sand, clay, cobblestone, coal, iron_ore, "
            "gold_ore, redstone, diamond, obsidian). Harder blocks need a better pickaxe.",
            "craft": "Craft `count` of an item from ingredients in the inventory. Most "
            "recipes need a crafting_table in the inventory; recipes make whole batches.",
            "smelt": "Smelt `count` of an item (iron_ingot, gold_ingot, glass, brick) in a "
            "furnace from its ore or raw material, burning one coal per item.",
        }

    def state(self) -> dict[str, Any]:
        return {"inventory": dict(sorted(self.inventory.items()))}

    def verify(self, task: Task) -> Verdict:
        """Success when the inventory holds at least the goal's count of every goal item."""
        wanted: dict[str, int] = task.goal.get("items", {})
        have = {item: self.inventory.get(item, 0) for item in wanted}
        short = {item: n for item, n in wanted.items() if have[item] < n}
        evidence = {"wanted": wanted, "have": have}
        if short:
            evidence["short"] = short
        return Verdict(success=not short and bool(wanted), evidence=evidence)

    # -- tools ------------------------------------------------------------------------

    def tool_inventory(self) -> dict[str, int]:
        return dict(sorted(self.inventory.items()))

    def tool_mine(self, block: str, count: int = 1) -> dict[str, Any]:
        _check_count(count)
        if block not in MINEABLE:
            raise ToolError(_not_made_by(block, "mine"))
        tier = MINEABLE[block]
        best = self._best_pickaxe()
        if tier > best:
            have = TIER_PICKAXE.get(best, "none")
            raise ToolError(
                f"cannot mine {block}: needs a {TIER_PICKAXE[tier]} or better (best pickaxe: {have})"
            )
        self._add(block, count)
        return {"mined": block, "added": count, "inventory": self.tool_inventory()}

    def tool_craft(self, item: str, count: int = 1) -> dict[str, Any]:
        _check_count(count)
        if item not in RECIPES:
            raise ToolError(_not_made_by(item, "craft"))
        batch_yield, ingredients, needs_table = RECIPES[item]
        batches = math.ceil(count / batch_yield)
        problems = []
        if needs_table and self.inventory.get("crafting_table", 0) < 1:
            problems.append("needs a crafting_table in the inventory")
        needed = {ing: n * batches for ing, n in ingredients.items()}
        problems += self._shortages(needed)
        if problems:
            raise ToolError(f"cannot craft {count} {item}: " + "; ".join(problems))
        for ing, n in needed.items():
            self._add(ing, -n)
        made = batches * batch_yield
        self._add(item, made)
        return {"crafted": item, "added": made, "inventory": self.tool_inventory()}

    def tool_smelt(self, item: str, count: int = 1) -> dict[str, Any]:
        _check_count(count)
        if item not in SMELTING:
            raise ToolError(_not_made_by(item, "smelt"))
        source = SMELTING[item]
        problems = []
        if self.inventory.get("furnace", 0) < 1:
            problems.append("needs a furnace in the inventory")
        problems += self._shortages({source: count})
        problems += self._shortages({FUEL: count}, suffix=" as fuel")
        if problems:
            raise ToolError(f"cannot smelt {count} {item}: " + "; ".join(problems))
        self._add(source, -count)
        self._add(FUEL, -count)
        self._add(item, count)
        return {"smelted": item, "added": count, "inventory": self.tool_inventory()}

    # -- internals --------------------------------------------------------------------

    def _best_pickaxe(self) -> int:
        tiers = [t for item, t in PICKAXE_TIER.items() if self.inventory.get(item, 0) > 0]
        return max(tiers, default=0)

    def _shortages(self, needed: dict[str, int], suffix: str = "") -> list[str]:
        out = []
        for ing, n in needed.items():
            have = self.inventory.get(ing, 0)
            if have < n:
                out.append(f"need {n} {ing}{suffix}, have {have}")
        return out

    def _add(self, item: str, n: int) -> None:
        total = self.inventory.get(item, 0) + n
        if total:
            self.inventory[item] = total
        else:
            self.inventory.pop(item, None)


def _with(schema: dict[str, Any], key: str, prop: dict[str, Any]) -> dict[str, Any]:
    return {
        **schema,
        "properties": {key: prop, **schema["properties"]},
        "required": [key],
    }


def _check_count(count: Any) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ToolError(f"count must be a positive integer, got {count!r}")


def _not_made_by(item: str, tool: str) -> str:
    if item not in ITEMS:
        return f"unknown item {item!r}; known items: {', '.join(ITEMS)}"
    verbs = {"mine": "mined", "craft": "crafted", "smelt": "smelted"}
    return f"{item} cannot be {verbs[tool]}; it is made with {method_of(item)}"


# -- a reference planner: gold actions for a goal, from an empty inventory --------------


def plan(goal: dict[str, int]) -> list[GoldAction]:
    """A short action list that obtains ``goal`` (item -> count) from an empty inventory.

    The plan is simulated on a fresh world, so it is valid by construction.
    """
    world = CraftingWorld()
    actions: list[GoldAction] = []

    def act(name: str, **arguments: Any) -> None:
        world.call(name, arguments)
        actions.append(GoldAction(name=name, arguments=arguments))

    def ensure(item: str, n: int, depth: int = 0) -> None:
        if depth > 30:
            raise RuntimeError(f"planner recursion too deep at {item}")
        for _ in range(10):
            have = world.inventory.get(item, 0)
            if have >= n:
                return
            need = n - have
            kind = method_of(item)
            if kind == "mine":
                tier = MINEABLE[item]
                if world._best_pickaxe() < tier:
                    ensure(TIER_PICKAXE[tier], 1, depth + 1)
                act("mine", block=item, count=need)
            elif kind == "smelt":
                _ensure_all({"furnace": 1, SMELTING[item]: need, FUEL: need}, depth)
                act("smelt", item=item, count=need)
            else:
                batch_yield, ingredients, needs_table = RECIPES[item]
                batches = math.ceil(need / batch_yield)
                wanted = {ing: q * batches for ing, q in ingredients.items()}
                if needs_table:
                    wanted = {"crafting_table": 1, **wanted}
                _ensure_all(wanted, depth)
                act("craft", item=item, count=need)
        raise RuntimeError(f"planner could not obtain {n} {item}")

    def _ensure_all(wanted: dict[str, int], depth: int) -> None:
        for _ in range(10):
            if all(world.inventory.get(i, 0) >= q for i, q in wanted.items()):
                return
            for ing, q in wanted.items():
                ensure(ing, q, depth + 1)
        raise RuntimeError(f"planner could not gather {wanted}")

    for _ in range(5):
        if all(world.inventory.get(i, 0) >= n for i, n in goal.items()):
            return actions
        for item, count in goal.items():
            ensure(item, count)
    raise RuntimeError(f"planner could not reach {goal}")


#: the tools factory of ``skills evaluate --world benchmarks.worlds.crafting:factory``
factory = evaluation_factory(CraftingWorld)
