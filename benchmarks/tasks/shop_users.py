"""The shop "users" suite: support requests written the way customers write them.

Thirteen workflows over the shop world's tools. Every instruction is a customer's message:
a persona sentence with their name, zip and/or email ("I'm Viktor Varga from 62791,
viktor.varga82@example.com."), often a mood ("I am patient but busy."), the request in one of
several phrasings, and often chatter that binds nothing ("It was supposed to be a gift
for my brother."). ``params`` are the values from the message that the gold actions use,
by name; ``workflow`` names the workflow; ``gold`` is the reference solution.

* train: 16 tasks per workflow (208), five request phrasings per workflow, customers
  whose first name is not in ``TEST_FIRST_NAMES``; item workflows return or swap 1-2 items.
* test: 4 tasks per workflow (52), two held-out request phrasings per workflow, only
  customers whose first name is in ``TEST_FIRST_NAMES`` (so no test customer's name or
  email occurs in train); item workflows include tasks with 3 items, more than any train
  trace has.

Tasks are spread over many world seeds (``Task.seed``; the shop world builds its database
from it), so there are enough customers and orders; every gold solution is replayed on its
seed while generating.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

from benchmarks.worlds.base import GoldAction, Task
from benchmarks.worlds.shop import CANCEL_REASONS, CITIES, STREET_KINDS, STREETS, ShopWorld

SUITE_SEED = 0
TRAIN_PER_WORKFLOW = 16
TEST_PER_WORKFLOW = 4
TRAIN_PHRASINGS = 5  # the first five request phrasings of a workflow are train, the rest test
# customers with these first names appear only in test tasks
TEST_FIRST_NAMES = frozenset({"Chiara", "Hiro", "Kemi", "Pablo", "Wen"})
WORLD_SEEDS = range(1, 61)
TRAIN_ITEMS = (1, 2)  # items returned or swapped in a train task
TEST_ITEMS = (1, 3, 2, 3)  # ... in the test tasks of an item workflow, in turn

# -- the customer's voice ------------------------------------------------------------------

PERSONA_EMAIL = [
    "I'm {first} {last} from {zip}, {email}.",
    "Hi, this is {first} {last} ({email}).",
    "Hello, {first} here. My account email is {email}.",
    "My name is {first} {last}, zip {zip}, and I use {email} for my account.",
    "{email} is my email; I'm {first} {last} from {city}.",
]
PERSONA_NAME = [
    "I'm {first} {last} from {zip}.",
    "Hi, {first} {last} here, zip code {zip}. I don't remember which email I used.",
    "My name is {first} {last} and I live in {city}, {zip}.",
    "This is {first} {last} (zip {zip}).",
    "{first} {last}, {zip}. I lost access to my old email, {email}.",
]
MOODS = [
    "I am patient but busy.",
    "I'm in a bit of a rush.",
    "Honestly I'm pretty frustrated right now.",
    "No rush at all, take your time.",
    "I'm calm, I just want this sorted.",
    "I'm quite upset about this.",
    "",
]
CHATTER = [
    "My cat knocked the box off the porch, but that's another story.",
    "I've been a customer for 6 years.",
    "It was supposed to be a gift for my brother.",
    "The weather here has been awful all week.",
    "I'm writing from my phone, sorry for typos.",
    "My neighbour recommended your shop to me.",
    "Thanks so much in advance!",
    "I called yesterday too but the line was busy.",
    "",
    "",
]

# workflow -> (how the customer is identified, request phrasings: TRAIN_PHRASINGS train, rest test)
REQUESTS: dict[str, tuple[str, list[str]]] = {
    "cancel_order": ("email", [
        "Please cancel my pending order {order_id}. Reason: {reason}.",
        "I need order {order_id} cancelled, the reason is '{reason}'.",
        "Could you cancel {order_id} for me? Put the reason down as {reason}.",
        "Cancel order {order_id} please ({reason}).",
        "I want to call off order {order_id}; reason: {reason}.",
        "Kindly stop order {order_id} before it ships and cancel it, reason {reason}.",
        "Order {order_id} has to go, please cancel it. Reason for the record: {reason}.",
    ]),
    "cancel_order_by_name": ("name", [
        "Please cancel my order {order_id}. Reason: {reason}.",
        "I need order {order_id} cancelled, the reason is '{reason}'.",
        "Could you cancel {order_id}? Reason: {reason}.",
        "Cancel {order_id} please, {reason}.",
        "I'd like to call off order {order_id} (reason: {reason}).",
        "Kindly scrap order {order_id} before it ships; the reason is {reason}.",
        "Order {order_id} should not be sent, cancel it please. Reason: {reason}.",
    ]),
    "reroute_order": ("email", [
        "Please ship my pending order {order_id} to {address} instead.",
        "Can you change the delivery address of order {order_id} to {address}?",
        "Order {order_id} should go to {address}, not my usual address.",
        "I'd like {order_id} delivered to {address}.",
        "Send order {order_id} to {address} please.",
        "Could the shipping destination for {order_id} be updated to {address}?",
        "I'm away for a while, so redirect order {order_id} to {address}.",
    ]),
    "reroute_order_by_name": ("name", [
        "Please ship my pending order {order_id} to {address} instead.",
        "Can you change where order {order_id} is delivered? New address: {address}.",
        "Order {order_id} has to go to {address}.",
        "I'd like {order_id} sent to {address}.",
        "Deliver order {order_id} to {address} please.",
        "Could the shipping destination of {order_id} be switched to {address}?",
        "I won't be home, so redirect order {order_id} to {address}.",
    ]),
    "move_address": ("name", [
        "I've moved. Please update my default address to {new_address}.",
        "My new address is {new_address}, can you change it on my account?",
        "Please set my account address to {new_address}.",
        "Update my profile address to {new_address}.",
        "We relocated to {new_address}; please change my address.",
        "From now on my home address is {new_address}, please record that.",
        "Could you replace the address on file with {new_address}?",
    ]),
    "move_address_by_email": ("email", [
        "I've moved. Please update my default address to {new_address}.",
        "My new address is {new_address}, can you change it on my account?",
        "Please set my account address to {new_address}.",
        "Change the address on my profile to {new_address}.",
        "We just moved to {new_address}, update my address please.",
        "My home address from now on is {new_address}; please save it.",
        "Could you swap the address on file for {new_address}?",
    ]),
    "return_items": ("email", [
        "I'd like to return {items} from order {order_id}, refund to {payment_method_id}.",
        "Please process a return of {items} in my delivered order {order_id}; refund {payment_method_id}.",
        "I want to send back {items} (order {order_id}). Refund to {payment_method_id} please.",
        "Return {items} of order {order_id}, and put the money on {payment_method_id}.",
        "Can I return {items} from {order_id}? The refund should go to {payment_method_id}.",
        "{Items} from order {order_id} don't work for me: return them and refund {payment_method_id}.",
        "I'm not keeping {items} from order {order_id}. Please start a return, money back to {payment_method_id}.",
    ]),
    "return_items_by_name": ("name", [
        "I'd like to return {items} from order {order_id}, refund to {payment_method_id}.",
        "Please process a return of {items} in order {order_id}; refund {payment_method_id}.",
        "I want to send back {items} (order {order_id}), refunded to {payment_method_id}.",
        "Return {items} of my order {order_id}, money to {payment_method_id}.",
        "Can I return {items} from {order_id}? Refund {payment_method_id}.",
        "{Items} of order {order_id} are not for me; return them with the refund on {payment_method_id}.",
        "I'm not keeping {items} from order {order_id}; please start a return, money back to {payment_method_id}.",
    ]),
    "return_whole_order": ("email", [
        "I want to return everything in order {order_id}, refunded to the original payment method.",
        "Please return all the items of my delivered order {order_id}; refund the card I paid with.",
        "Send back the whole order {order_id} please, money back the way I paid.",
        "Return every item in order {order_id} to the original payment method.",
        "Can you process a full return of {order_id}? Refund however I paid.",
        "Nothing in order {order_id} is right, I'm returning all of it; refund my original payment.",
        "I'd like a complete return of order {order_id} with the refund to the method I used.",
    ]),
    "exchange_items": ("email", [
        "I'd like to exchange {items} from order {order_id} for {new_items}; use {payment_method_id} for any difference.",
        "Please swap {items} in my delivered order {order_id} for {new_items}, settle with {payment_method_id}.",
        "Exchange {items} of order {order_id} for {new_items} please. Pay the difference with {payment_method_id}.",
        "Can I trade {items} from {order_id} for {new_items}? Charge or refund {payment_method_id}.",
        "I want {new_items} instead of {items} in order {order_id}; {payment_method_id} covers the difference.",
        "{Items} of order {order_id} don't suit me, I'd rather have {new_items}; settle via {payment_method_id}.",
        "Replace {items} from my delivered order {order_id} with {new_items}, difference on {payment_method_id}.",
    ]),
    "modify_items": ("email", [
        "Before order {order_id} ships, please change {items} to {new_items}; use {payment_method_id} for the difference.",
        "In my pending order {order_id}, swap {items} for {new_items}, difference to {payment_method_id}.",
        "Please modify order {order_id}: {items} should become {new_items}. Settle with {payment_method_id}.",
        "Can you switch {items} in pending order {order_id} to {new_items}? Charge or refund {payment_method_id}.",
        "I'd prefer {new_items} over {items} in order {order_id} (not shipped yet); pay via {payment_method_id}.",
        "Order {order_id} hasn't shipped: I want {new_items} in place of {items}, balance on {payment_method_id}.",
        "Update my unshipped order {order_id} so that {items} are replaced by {new_items}; {payment_method_id} for the difference.",
    ]),
    "change_payment": ("email", [
        "Please pay for my pending order {order_id} with {payment_method_id} instead.",
        "Can you switch the payment of order {order_id} to {payment_method_id}?",
        "I want order {order_id} charged to {payment_method_id}.",
        "Change the payment method on {order_id} to {payment_method_id} please.",
        "Use {payment_method_id} for order {order_id} rather than what I picked.",
        "I'd rather order {order_id} were billed to {payment_method_id}; please change it.",
        "Move the charge for order {order_id} over to {payment_method_id}.",
    ]),
    "change_payment_by_name": ("name", [
        "Please pay for my pending order {order_id} with {payment_method_id} instead.",
        "Can you switch the payment of order {order_id} to {payment_method_id}?",
        "I want order {order_id} charged to {payment_method_id}.",
        "Change the payment method of {order_id} to {payment_method_id}, please.",
        "Use {payment_method_id} for order {order_id}, not the one I chose.",
        "I'd rather order {order_id} were billed to {payment_method_id}; please change it.",
        "Move the charge for order {order_id} over to {payment_method_id}.",
    ]),
}
WORKFLOWS = list(REQUESTS)
ITEM_WORKFLOWS = ("return_items", "return_items_by_name", "return_whole_order", "exchange_items", "modify_items")


def say_list(values: list[str]) -> str:
    """A list the way people write it: ``a``, ``a and b``, ``a, b and c``."""
    if len(values) == 1:
        return values[0]
    return ", ".join(values[:-1]) + " and " + values[-1]


def say_address(a: dict[str, str], prefix: str = "") -> str:
    zip_key = f"{prefix}zip" if prefix else "address_zip"
    return (f"{a[prefix + 'address1']}, {a[prefix + 'address2']}, {a[prefix + 'city']}, "
            f"{a[prefix + 'state']} {a[zip_key]}")


# -- making tasks ----------------------------------------------------------------------------


class _Seed:
    """One world seed's database, and the orders its tasks have used."""

    def __init__(self, seed: int) -> None:
        world = ShopWorld()
        world.reset(seed)
        self.seed, self.db = seed, world.db
        self.used_orders: set[str] = set()
        self.used_users: set[str] = set()

    def replays(self, gold: list[GoldAction]) -> bool:
        world = ShopWorld()
        world.reset(self.seed)
        return all(r["error"] is None for r in world.replay(gold))


def _find(kind: str, p: dict[str, Any]) -> GoldAction:
    if kind == "email":
        return GoldAction(name="find_user_id_by_email", arguments={"email": p["email"]})
    return GoldAction(name="find_user_id_by_name_zip",
                      arguments={k: p[k] for k in ("first_name", "last_name", "zip")})


class _Maker:
    def __init__(self, seed: int = SUITE_SEED) -> None:
        self.rng = random.Random(f"shop-users-{seed}")
        self.seeds = [_Seed(s) for s in WORLD_SEEDS]
        self.turn = 0
        self.seen: set[str] = set()

    def address(self, prefix: str = "") -> dict[str, str]:
        city, state, zip3 = self.rng.choice(CITIES)
        return {
            f"{prefix}address1": f"{self.rng.randrange(10, 999)} {self.rng.choice(STREETS)} "
            f"{self.rng.choice(STREET_KINDS)}",
            f"{prefix}address2": f"Apt {self.rng.randrange(1, 99)}",
            f"{prefix}city": city,
            f"{prefix}state": state,
            f"{prefix}zip" if prefix else "address_zip": f"{zip3}{self.rng.randrange(10, 99)}",
        }

    def swaps(self, db: dict[str, Any], order: dict[str, Any], n: int) -> tuple[list[str], list[str]] | None:
        """``n`` items of ``order`` and an available other variant for each, or None."""
        items = [i for i in order["items"]]
        self.rng.shuffle(items)
        olds, news = [], []
        for item in items:
            variants = db["products"][item["product_id"]]["variants"].values()
            options = sorted(v["item_id"] for v in variants if v["available"] and v["item_id"] != item["item_id"])
            if options and item["item_id"] not in olds:
                olds.append(item["item_id"])
                news.append(self.rng.choice(options))
            if len(olds) == n:
                return olds, news
        return None

    def make(self, workflow: str, split: str, n_items: int) -> tuple[_Seed, dict[str, Any], dict[str, Any], list[GoldAction]]:
        """(seed, customer, params, gold) of a fresh instance of ``workflow``."""
        for _ in range(400):
            seed = self.seeds[self.turn % len(self.seeds)]
            self.turn += 1
            made = self._instance(workflow, seed, split, n_items)
            if made is None:
                continue
            user, params, gold = made
            key = json.dumps([workflow, seed.seed, params], sort_keys=True)
            if key in self.seen or not seed.replays(gold):
                continue
            self.seen.add(key)
            seed.used_users.add(user["user_id"])
            for action in gold:
                if "order_id" in action.arguments:
                    seed.used_orders.add(action.arguments["order_id"])
            return seed, user, params, gold
        raise RuntimeError(f"could not make a {split} {workflow} task")

    def _customers(self, seed: _Seed, split: str) -> list[dict[str, Any]]:
        users = sorted(seed.db["users"].values(), key=lambda u: u["user_id"])
        mine = [u for u in users if (u["name"]["first_name"] in TEST_FIRST_NAMES) == (split == "test")]
        fresh = [u for u in mine if u["user_id"] not in seed.used_users]
        return fresh or mine

    def _order(self, seed: _Seed, split: str, status: str, need: Callable[[dict[str, Any]], bool]):
        customers = {u["user_id"]: u for u in self._customers(seed, split)}
        orders = [
            o for o in sorted(seed.db["orders"].values(), key=lambda o: o["order_id"])
            if o["status"] == status and o["user_id"] in customers
            and o["order_id"] not in seed.used_orders and need(o)
        ]
        if not orders:
            return None
        order = self.rng.choice(orders)
        return customers[order["user_id"]], order

    def _instance(self, workflow: str, seed: _Seed, split: str, n_items: int):
        kind, _ = REQUESTS[workflow]
        db = seed.db

        def who(user: dict[str, Any]) -> dict[str, Any]:
            if kind == "email":
                return {"email": user["email"]}
            return {"first_name": user["name"]["first_name"], "last_name": user["name"]["last_name"],
                    "zip": user["address"]["zip"]}

        if workflow.startswith("cancel_order"):
            found = self._order(seed, split, "pending", lambda o: True)
            if not found:
                return None
            user, order = found
            p = {**who(user), "order_id": order["order_id"], "reason": self.rng.choice(CANCEL_REASONS)}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name="cancel_pending_order", arguments={"order_id": p["order_id"], "reason": p["reason"]}),
            ]
        if workflow.startswith("reroute_order"):
            found = self._order(seed, split, "pending", lambda o: True)
            if not found:
                return None
            user, order = found
            p = {**who(user), "order_id": order["order_id"], **self.address()}
            address = {"address1": p["address1"], "address2": p["address2"], "city": p["city"],
                       "state": p["state"], "country": "USA", "zip": p["address_zip"]}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name="modify_pending_order_address", arguments={"order_id": p["order_id"], **address}),
            ]
        if workflow.startswith("move_address"):
            customers = self._customers(seed, split)
            user = self.rng.choice(customers)
            p = {**who(user), **self.address("new_")}
            address = {"address1": p["new_address1"], "address2": p["new_address2"], "city": p["new_city"],
                       "state": p["new_state"], "country": "USA", "zip": p["new_zip"]}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_user_details", arguments={"user_id": user["user_id"]}),
                GoldAction(name="modify_user_address", arguments={"user_id": user["user_id"], **address}),
            ]
        if workflow in ("return_items", "return_items_by_name"):
            # a train return keeps some items, so that no train trace of it is also a
            # whole-order return (the same calls); at test, 3 of 3 items may be returned
            more = (lambda o: len(o["items"]) > n_items) if split == "train" else (lambda o: len(o["items"]) >= n_items)
            found = self._order(seed, split, "delivered", more)
            if not found:
                return None
            user, order = found
            ids = sorted(self.rng.sample([i["item_id"] for i in order["items"]], n_items))
            if len(set(ids)) != len(ids):
                return None
            method = order["payment_history"][0]["payment_method_id"]
            gifts = sorted(m for m in user["payment_methods"] if m.startswith("gift_card"))
            if gifts and self.rng.random() < 0.3:
                method = gifts[0]
            p = {**who(user), "order_id": order["order_id"], "item_ids": ids, "payment_method_id": method}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name="return_delivered_order_items",
                           arguments={"order_id": p["order_id"], "item_ids": ids, "payment_method_id": method}),
            ]
        if workflow == "return_whole_order":
            found = self._order(seed, split, "delivered", lambda o: len(o["items"]) == n_items
                                and len({i["item_id"] for i in o["items"]}) == n_items)
            if not found:
                return None
            user, order = found
            ids = [i["item_id"] for i in order["items"]]
            method = order["payment_history"][0]["payment_method_id"]
            p = {**who(user), "order_id": order["order_id"]}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name="return_delivered_order_items",
                           arguments={"order_id": p["order_id"], "item_ids": ids, "payment_method_id": method}),
            ]
        if workflow in ("exchange_items", "modify_items"):
            status, tool = (("delivered", "exchange_delivered_order_items") if workflow == "exchange_items"
                            else ("pending", "modify_pending_order_items"))
            found = self._order(seed, split, status, lambda o: len(o["items"]) >= n_items)
            if not found:
                return None
            user, order = found
            swap = self.swaps(db, order, n_items)
            if swap is None:
                return None
            olds, news = swap
            method = self.rng.choice(sorted(user["payment_methods"]))
            p = {**who(user), "order_id": order["order_id"], "item_ids": olds, "new_item_ids": news,
                 "payment_method_id": method}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name=tool, arguments={"order_id": p["order_id"], "item_ids": olds,
                                                 "new_item_ids": news, "payment_method_id": method}),
            ]
        if workflow.startswith("change_payment"):
            def other_method(o: dict[str, Any]) -> bool:
                methods = db["users"][o["user_id"]]["payment_methods"]
                return any(m != o["payment_history"][0]["payment_method_id"] for m in methods)

            found = self._order(seed, split, "pending", other_method)
            if not found:
                return None
            user, order = found
            current = order["payment_history"][0]["payment_method_id"]
            method = self.rng.choice(sorted(m for m in user["payment_methods"] if m != current))
            p = {**who(user), "order_id": order["order_id"], "payment_method_id": method}
            return user, p, [
                _find(kind, p),
                GoldAction(name="get_user_details", arguments={"user_id": user["user_id"]}),
                GoldAction(name="get_order_details", arguments={"order_id": p["order_id"]}),
                GoldAction(name="modify_pending_order_payment",
                           arguments={"order_id": p["order_id"], "payment_method_id": method}),
            ]
        raise KeyError(workflow)

    def message(self, workflow: str, split: str, index: int, user: dict[str, Any], params: dict[str, Any]) -> str:
        """The customer's message: persona, maybe a mood, the request, maybe chatter."""
        kind, phrasings = REQUESTS[workflow]
        pool = phrasings[:TRAIN_PHRASINGS] if split == "train" else phrasings[TRAIN_PHRASINGS:]
        request = pool[index % len(pool)]
        values = {k: say_list(v) if isinstance(v, list) else v for k, v in params.items()}
        if "item_ids" in params:
            values["items"] = ("item " if len(params["item_ids"]) == 1 else "items ") + values["item_ids"]
            values["Items"] = values["items"].capitalize()
        if "new_item_ids" in params:
            values["new_items"] = values["new_item_ids"]
        if "address1" in params:
            values["address"] = say_address(params)
        if "new_address1" in params:
            values["new_address"] = say_address(params, "new_")
        persona = self.rng.choice(PERSONA_EMAIL if kind == "email" else PERSONA_NAME).format(
            first=user["name"]["first_name"], last=user["name"]["last_name"], zip=user["address"]["zip"],
            email=user["email"], city=user["address"]["city"],
        )
        mood, chatter = self.rng.choice(MOODS), self.rng.choice(CHATTER)
        parts = [persona, mood, request.format(**values), chatter]
        if mood and self.rng.random() < 0.3:  # sometimes the mood comes last
            parts = [persona, request.format(**values), chatter, mood]
        return " ".join(p for p in parts if p)


def shop_users_tasks(seed: int = SUITE_SEED) -> list[Task]:
    maker = _Maker(seed)
    tasks: list[Task] = []
    for split, per_workflow in (("train", TRAIN_PER_WORKFLOW), ("test", TEST_PER_WORKFLOW)):
        n = 0
        for round_ in range(per_workflow):  # the workflows in turn
            for workflow in WORKFLOWS:
                n += 1
                if workflow in ITEM_WORKFLOWS:
                    n_items = TRAIN_ITEMS[round_ % len(TRAIN_ITEMS)] if split == "train" else TEST_ITEMS[round_]
                else:
                    n_items = 1
                world_seed, user, params, gold = maker.make(workflow, split, n_items)
                tasks.append(Task(
                    id=f"shop-users-{split}-{n:03d}-{workflow}",
                    world="shop",
                    instruction=maker.message(workflow, split, round_, user, params),
                    params=params,
                    split=split,  # type: ignore[arg-type]
                    workflow=workflow,
                    gold=gold,
                    seed=world_seed.seed,
                ))
    return tasks
