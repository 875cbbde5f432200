"""Generate the task suites: ``python -m benchmarks.tasks.generate`` (deterministic).

Writes ``benchmarks/tasks/<world>.jsonl``; the tests check the committed files are in sync
with this script (``--check`` does the same from the command line).

crafting: single-item train tasks follow a curriculum up the tech tree (logs ... diamond
pickaxe), some workflows twice with other counts. Test tasks (1) repeat train workflows
with other counts (some inside the range a count-parametric skill handles, some outside),
(2) ask for items never trained whose recipes combine trained parts (iron sword, compass,
clock...), and (3) combine two goals in one instruction.

shop: eight support workflows (cancel by email / by name and zip, re-address a pending
order, change a user's address, return, exchange, swap items of a pending order, change a
pending order's payment); three train and two test tasks each with other customers and
orders, plus test tasks combining two workflows for one customer.

shop_users (the shop world's ``users`` suite, see ``shop_users.py``): thirteen workflows
written as customers write, persona, mood and chatter around several phrasings of each
request; 208 train tasks, 52 test tasks with unseen customers, held-out phrasings and
more items than any train task.

helpdesk (the look-alike suite, see ``helpdesk.py``): twelve IT-helpdesk workflows in
look-alike pairs (one vs every item, an account state, a role), tickets with greetings,
signatures and third-person requests; held-out phrasings and people at test, and
out-of-scope requests that no workflow covers.

office (the paraphrase suite, see ``office.py``): 32 office-assistant workflows with one
train request each and three rewordings each that share no content word with it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from benchmarks.tasks.helpdesk import helpdesk_tasks
from benchmarks.tasks.office import office_tasks
from benchmarks.tasks.shop_users import shop_users_tasks
from benchmarks.worlds.base import GoldAction, Task
from benchmarks.worlds.crafting import phrase, plan
from benchmarks.worlds.shop import CANCEL_REASONS, CITIES, STREET_KINDS, STREETS, ShopWorld

#: the arguments of find_user_id_by_name_zip
NAME_ZIP = ("first_name", "last_name", "zip")

TASKS_DIR = Path(__file__).resolve().parent

# -- crafting ---------------------------------------------------------------------------------

CRAFTING_TRAIN: list[tuple[str, int]] = [
    ("log", 5),
    ("planks", 6),
    ("stick", 5),
    ("crafting_table", 1),
    ("wooden_pickaxe", 1),
    ("cobblestone", 6),
    ("coal", 5),
    ("torch", 6),
    ("wooden_sword", 2),
    ("stone_pickaxe", 1),
    ("furnace", 1),
    ("iron_ore", 5),
    ("iron_ingot", 5),
    ("sand", 6),
    ("glass", 5),
    ("stone_sword", 2),
    ("chest", 1),
    ("iron_pickaxe", 1),
    ("bucket", 1),
    ("redstone", 5),
    ("gold_ingot", 5),
    ("diamond", 5),
    ("diamond_pickaxe", 1),
    ("iron_ingot", 7),
    ("log", 7),
]
CRAFTING_TEST_SAME: list[tuple[str, int]] = [
    ("log", 9),
    ("planks", 3),
    ("stick", 8),
    ("cobblestone", 12),
    ("coal", 10),
    ("torch", 8),
    ("torch", 12),
    ("iron_ingot", 3),
    ("iron_ingot", 10),
    ("glass", 9),
    ("stone_pickaxe", 2),
    ("iron_pickaxe", 2),
    ("diamond", 3),
]
CRAFTING_TEST_NEW: list[tuple[str, int]] = [
    ("iron_sword", 1),
    ("shears", 1),
    ("compass", 1),
    ("rail", 16),
    ("clock", 1),
    ("diamond_sword", 1),
    ("enchanting_table", 1),
    ("brick", 5),
]
CRAFTING_TEST_COMBO: list[tuple[tuple[str, int], tuple[str, int]]] = [
    (("iron_pickaxe", 1), ("torch", 8)),
    (("bucket", 1), ("glass", 4)),
    (("diamond_pickaxe", 1), ("iron_sword", 1)),
    (("furnace", 1), ("chest", 1)),
]


def crafting_tasks() -> list[Task]:
    tasks: list[Task] = []

    def single(split: str, n: int, item: str, count: int, workflow: str) -> Task:
        return Task(
            id=f"crafting-{split}-{n:02d}-{item}-{count}",
            world="crafting",
            instruction=phrase(item, count),
            params={"count": count},
            split=split,  # type: ignore[arg-type]
            workflow=workflow,
            goal={"items": {item: count}},
            gold=plan({item: count}),
        )

    for n, (item, count) in enumerate(CRAFTING_TRAIN, 1):
        tasks.append(single("train", n, item, count, f"obtain:{item}"))
    n = 0
    for item, count in CRAFTING_TEST_SAME:
        n += 1
        tasks.append(single("test", n, item, count, f"obtain:{item}"))
    for item, count in CRAFTING_TEST_NEW:
        n += 1
        tasks.append(single("test", n, item, count, f"new:{item}"))
    for (a, ca), (b, cb) in CRAFTING_TEST_COMBO:
        n += 1
        second = phrase(b, cb)
        tasks.append(
            Task(
                id=f"crafting-test-{n:02d}-{a}-{ca}+{b}-{cb}",
                world="crafting",
                instruction=f"{phrase(a, ca)}, then {second[0].lower()}{second[1:]}",
                params={f"{a}_count": ca, f"{b}_count": cb},
                split="test",
                workflow=f"combo:{a}+{b}",
                goal={"items": {a: ca, b: cb}},
                gold=plan({a: ca, b: cb}),
            )
        )
    return tasks


# -- shop ---------------------------------------------------------------------------------------

SHOP_WORKFLOWS = [
    "cancel_by_email",
    "cancel_by_name",
    "order_address",
    "user_address",
    "return_items",
    "exchange_items",
    "modify_items",
    "modify_payment",
]
SHOP_COMBOS = [("cancel_by_email", "user_address"), ("modify_payment", "user_address"),
               ("return_items", "user_address")]
TEMPLATES = {
    "cancel_by_email": "The customer with email {email} wants to cancel pending order "
    "{order_id}. Reason given: {reason}.",
    "cancel_by_name": "{first_name} {last_name} from zip code {zip} calls to cancel order "
    "{order_id}, saying it was {reason}.",
    "order_address": "The customer with email {email} wants pending order {order_id} shipped "
    "to {address1}, {address2}, {city}, {state} {address_zip}, USA instead.",
    "user_address": "{first_name} {last_name} (zip {zip}) has moved. Update their default "
    "address to {new_address1}, {new_address2}, {new_city}, {new_state} {new_zip}, USA.",
    "return_items": "The customer with email {email} wants to return item(s) {item_ids} of "
    "delivered order {order_id}, refunded to {payment_method_id}.",
    "exchange_items": "The customer with email {email} wants to exchange item(s) {item_ids} of "
    "delivered order {order_id} for {new_item_ids}, settling any difference with "
    "{payment_method_id}.",
    "modify_items": "The customer with email {email} wants to swap item(s) {item_ids} in "
    "pending order {order_id} for {new_item_ids}; charge or refund the difference via "
    "{payment_method_id}.",
    "modify_payment": "The customer with email {email} wants to pay for pending order "
    "{order_id} with {payment_method_id} instead.",
}


def render(template: str, params: dict[str, Any]) -> str:
    """The instruction for ``params`` (lists are written comma-separated)."""
    text = {k: ", ".join(v) if isinstance(v, list) else v for k, v in params.items()}
    return template.format(**text)


class _ShopMaker:
    def __init__(self, seed: int = 0) -> None:
        self.world = ShopWorld()
        self.world.reset(seed)
        self.seed = seed
        self.db = self.world.db
        self.rng = random.Random(f"shop-tasks-{seed}")
        self.used_orders: set[str] = set()
        self.seen: set[str] = set()  # workflow + params of every task made so far

    def orders(self, status: str) -> list[dict[str, Any]]:
        return [o for o in self.db["orders"].values() if o["status"] == status]

    def pick_order(self, status: str, need=lambda o: True) -> dict[str, Any]:
        fresh = [o for o in self.orders(status) if o["order_id"] not in self.used_orders and need(o)]
        pool = fresh or [o for o in self.orders(status) if need(o)]
        order = self.rng.choice(pool)
        self.used_orders.add(order["order_id"])
        return order

    def user(self, order: dict[str, Any]) -> dict[str, Any]:
        return self.db["users"][order["user_id"]]

    def new_address(self, prefix: str = "") -> dict[str, str]:
        city, state, zip3 = self.rng.choice(CITIES)
        return {
            f"{prefix}address1": f"{self.rng.randrange(10, 999)} {self.rng.choice(STREETS)} "
            f"{self.rng.choice(STREET_KINDS)}",
            f"{prefix}address2": f"Apt {self.rng.randrange(1, 99)}",
            f"{prefix}city": city,
            f"{prefix}state": state,
            f"{prefix}zip" if prefix else "address_zip": f"{zip3}{self.rng.randrange(10, 99)}",
        }

    def swaps(self, order: dict[str, Any], n: int) -> tuple[list[str], list[str]] | None:
        """Up to ``n`` items of ``order`` with an available other variant each."""
        olds, news = [], []
        for item in order["items"]:
            product = self.db["products"][item["product_id"]]
            options = [
                v["item_id"] for v in product["variants"].values()
                if v["available"] and v["item_id"] != item["item_id"]
            ]
            if options and item["item_id"] not in olds:
                olds.append(item["item_id"])
                news.append(self.rng.choice(sorted(options)))
            if len(olds) == n:
                break
        return (olds, news) if olds else None

    def workflow(self, name: str) -> tuple[dict[str, Any], list[GoldAction]]:
        """Params and gold actions for one fresh instance of workflow ``name``."""
        for _ in range(200):
            made = getattr(self, f"_{name}")()
            if not made:
                continue
            key = json.dumps([name, made[0]], sort_keys=True)
            if key not in self.seen and self.replays(made[1]):
                self.seen.add(key)
                return made
        raise RuntimeError(f"could not make a valid {name} task")

    def replays(self, gold: list[GoldAction]) -> bool:
        world = ShopWorld()
        world.reset(self.seed)
        return all(r["error"] is None for r in world.replay(gold))

    # one method per workflow ------------------------------------------------------------

    def _cancel_by_email(self):
        order = self.pick_order("pending")
        user = self.user(order)
        p = {"email": user["email"], "order_id": order["order_id"], "reason": self.rng.choice(CANCEL_REASONS)}
        return p, [
            GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(name="cancel_pending_order", arguments={"order_id": p["order_id"], "reason": p["reason"]}),
        ]

    def _cancel_by_name(self):
        order = self.pick_order("pending")
        user = self.user(order)
        p = {
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            "zip": user["address"]["zip"],
            "order_id": order["order_id"],
            "reason": self.rng.choice(CANCEL_REASONS),
        }
        return p, [
            GoldAction(name="find_user_id_by_name_zip", arguments={k: p[k] for k in NAME_ZIP}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(name="cancel_pending_order", arguments={"order_id": p["order_id"], "reason": p["reason"]}),
        ]

    def _order_address(self):
        order = self.pick_order("pending")
        user = self.user(order)
        p = {"email": user["email"], "order_id": order["order_id"], **self.new_address()}
        address = {
            "address1": p["address1"], "address2": p["address2"], "city": p["city"],
            "state": p["state"], "country": "USA", "zip": p["address_zip"],
        }
        return p, [
            GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(name="modify_pending_order_address", arguments={"order_id": p["order_id"], **address}),
        ]

    def _user_address(self, user: dict[str, Any] | None = None):
        if user is None:
            user = self.rng.choice(sorted(self.db["users"].values(), key=lambda u: u["user_id"]))
        p = {
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            "zip": user["address"]["zip"],
            **self.new_address("new_"),
        }
        address = {
            "address1": p["new_address1"], "address2": p["new_address2"], "city": p["new_city"],
            "state": p["new_state"], "country": "USA", "zip": p["new_zip"],
        }
        return p, [
            GoldAction(name="find_user_id_by_name_zip", arguments={k: p[k] for k in NAME_ZIP}),
            GoldAction(name="get_user_details", arguments={"user_id": user["user_id"]}),
            GoldAction(name="modify_user_address", arguments={"user_id": user["user_id"], **address}),
        ]

    def _return_items(self):
        order = self.pick_order("delivered")
        user = self.user(order)
        ids = [i["item_id"] for i in order["items"]]
        chosen = sorted(self.rng.sample(ids, self.rng.choice([1, 1, 2]) if len(ids) > 1 else 1))
        gifts = [m for m in user["payment_methods"] if m.startswith("gift_card")]
        method = order["payment_history"][0]["payment_method_id"]
        if gifts and self.rng.random() < 0.3:
            method = gifts[0]
        p = {"email": user["email"], "order_id": order["order_id"], "item_ids": chosen, "payment_method_id": method}
        return p, [
            GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(
                name="return_delivered_order_items",
                arguments={"order_id": p["order_id"], "item_ids": chosen, "payment_method_id": method},
            ),
        ]

    def _swap(self, status: str, tool: str):
        order = self.pick_order(status, need=lambda o: self.swaps(o, 1) is not None)
        user = self.user(order)
        olds, news = self.swaps(order, self.rng.choice([1, 1, 2]))  # type: ignore[misc]
        method = self.rng.choice(sorted(user["payment_methods"]))
        p = {
            "email": user["email"], "order_id": order["order_id"], "item_ids": olds,
            "new_item_ids": news, "payment_method_id": method,
        }
        product_id = next(i["product_id"] for i in order["items"] if i["item_id"] == olds[0])
        return p, [
            GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(name="get_product_details", arguments={"product_id": product_id}),
            GoldAction(
                name=tool,
                arguments={
                    "order_id": p["order_id"], "item_ids": olds, "new_item_ids": news, "payment_method_id": method,
                },
            ),
        ]

    def _exchange_items(self):
        return self._swap("delivered", "exchange_delivered_order_items")

    def _modify_items(self):
        return self._swap("pending", "modify_pending_order_items")

    def _modify_payment(self):
        order = self.pick_order("pending")
        user = self.user(order)
        current = order["payment_history"][0]["payment_method_id"]
        others = sorted(m for m in user["payment_methods"] if m != current)
        if not others:
            return None
        p = {"email": user["email"], "order_id": order["order_id"], "payment_method_id": self.rng.choice(others)}
        return p, [
            GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]}),
            GoldAction(name="get_user_details", arguments={"user_id": user["user_id"]}),
            GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
            GoldAction(
                name="modify_pending_order_payment",
                arguments={"order_id": p["order_id"], "payment_method_id": p["payment_method_id"]},
            ),
        ]


def shop_tasks(seed: int = 0) -> list[Task]:
    maker = _ShopMaker(seed)
    tasks: list[Task] = []

    def add(split: str, n: int, workflow: str, params: dict[str, Any], gold: list[GoldAction], text: str) -> None:
        tasks.append(
            Task(
                id=f"shop-{split}-{n:02d}-{workflow}",
                world="shop",
                instruction=text,
                params=params,
                split=split,  # type: ignore[arg-type]
                workflow=workflow,
                gold=gold,
                seed=seed,
            )
        )

    n = 0
    for _round in range(3):  # train: the workflows in turn, three times
        for workflow in SHOP_WORKFLOWS:
            n += 1
            params, gold = maker.workflow(workflow)
            add("train", n, workflow, params, gold, render(TEMPLATES[workflow], params))
    n = 0
    for _round in range(2):
        for workflow in SHOP_WORKFLOWS:
            n += 1
            params, gold = maker.workflow(workflow)
            add("test", n, workflow, params, gold, render(TEMPLATES[workflow], params))
    for _round in range(2):
        for first, second in SHOP_COMBOS:
            n += 1
            for _ in range(200):
                p1, g1 = maker.workflow(first)
                user = maker.db["users"][maker.world.find_user_id_by_email(p1["email"])]
                p2, g2 = maker._user_address(user)
                if maker.replays(g1 + g2):
                    break
            params = {**p1, **p2}
            text = render(TEMPLATES[first], p1) + " Also, " + render(TEMPLATES[second], p2)
            add("test", n, f"{first}+{second}", params, g1 + g2, text)
    return tasks


# file stem -> generator; "shop_users" is the shop world's "users" suite (shop_users.py)
SUITES = {"crafting": crafting_tasks, "shop": shop_tasks, "shop_users": shop_users_tasks,
          "helpdesk": helpdesk_tasks, "office": office_tasks}


def to_jsonl(tasks: list[Task]) -> str:
    return "".join(json.dumps(t.model_dump(mode="json"), sort_keys=True) + "\n" for t in tasks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tasks.generate", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed file is out of date")
    parser.add_argument("--out", type=Path, default=TASKS_DIR)
    args = parser.parse_args(argv)
    stale = []
    for world, make in SUITES.items():
        text = to_jsonl(make())
        path = args.out / f"{world}.jsonl"
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        tasks = make()
        splits = {s: sum(1 for t in tasks if t.split == s) for s in ("train", "test")}
        print(f"{path}: {len(tasks)} tasks ({splits['train']} train, {splits['test']} test)")
    if stale:
        print("out of date (run python -m benchmarks.tasks.generate): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
