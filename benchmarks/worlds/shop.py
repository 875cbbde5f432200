"""A customer-service world: users, products with variants, orders with payment history.

``reset(seed)`` generates the whole database from the seed. Tools look users up (by email,
or by name and zip), read orders and products, and change data: cancel a pending order,
change a pending order's address, items or payment method, change a user's address,
return or exchange items of a delivered order. A task succeeds when the final database
equals the database after replaying the task's gold actions on the same seed.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from benchmarks.worlds.base import (
    GoldAction,
    PersonalValue,
    Task,
    ToolError,
    Verdict,
    World,
    deep_copy,
    evaluation_factory,
    params_values,
)

FIRST_NAMES = [
    "Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kemi", "Lars", "Maya", "Nikhil", "Olga", "Pablo", "Quinn", "Rosa", "Sven", "Tariq",
    "Uma", "Viktor", "Wen", "Yara", "Zoe",
]
LAST_NAMES = [
    "Abara", "Berg", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
    "Jensen", "Kowalski", "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov", "Rossi",
    "Silva", "Tanaka", "Varga", "Weber", "Young",
]
CITIES = [
    ("Springfield", "IL", "627"), ("Riverton", "WY", "825"), ("Lakewood", "CO", "802"),
    ("Fairview", "TX", "750"), ("Madison", "WI", "537"), ("Georgetown", "KY", "403"),
    ("Salem", "OR", "973"), ("Clinton", "NY", "133"), ("Ashland", "OH", "448"),
    ("Greenville", "SC", "296"),
]
STREETS = ["Oak", "Maple", "Cedar", "Pine", "Elm", "Birch", "Willow", "Hill", "Lake", "Park"]
STREET_KINDS = ["Street", "Avenue", "Road", "Lane", "Drive"]
CARD_BRANDS = ["visa", "mastercard", "amex"]

# product name -> option name -> values; base price
CATALOG: dict[str, tuple[dict[str, list[str]], float]] = {
    "T-Shirt": ({"color": ["black", "white", "red", "blue"], "size": ["S", "M", "L"]}, 19.0),
    "Water Bottle": ({"capacity": ["500ml", "750ml", "1000ml"], "material": ["steel", "glass"]}, 24.0),
    "Headphones": ({"type": ["in-ear", "over-ear"], "color": ["black", "silver", "blue"]}, 89.0),
    "Backpack": ({"size": ["small", "medium", "large"], "color": ["green", "grey"]}, 64.0),
    "Desk Lamp": ({"brightness": ["low", "medium", "high"], "power": ["usb", "battery"]}, 38.0),
    "Running Shoes": ({"size": ["8", "9", "10", "11"], "color": ["black", "orange"]}, 112.0),
    "Coffee Maker": ({"capacity": ["4 cups", "8 cups", "12 cups"], "type": ["drip", "espresso"]}, 145.0),
    "Keyboard": ({"switch": ["linear", "tactile", "clicky"], "layout": ["full", "compact"]}, 79.0),
}

CANCEL_REASONS = ["no longer needed", "ordered by mistake"]
ORDER_STATUSES = ["pending", "processed", "delivered", "cancelled"]

_ADDRESS_PROPS = {
    "address1": {"type": "string"},
    "address2": {"type": "string"},
    "city": {"type": "string"},
    "state": {"type": "string"},
    "country": {"type": "string"},
    "zip": {"type": "string"},
}
_ADDRESS_KEYS = list(_ADDRESS_PROPS)
_ID_LIST = {"type": "array", "items": {"type": "string"}, "minItems": 1}

#: the task params whose values are a person's data (PersonalValue kinds); cities, states and
#: countries alone identify nobody, product and item ids are the catalog's
PERSONAL_PARAMS = {
    "email": "email", "first_name": "first_name", "last_name": "last_name", "user_id": "user_id",
    "order_id": "order_id", "payment_method_id": "payment_id", "zip": "zip", "address_zip": "zip",
    "new_zip": "zip", "address1": "address", "address2": "address", "new_address1": "address",
    "new_address2": "address",
}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
    }


def _money(x: float) -> float:
    return round(x + 0.0, 2)


class ShopWorld(World):
    """An online shop's support back office, generated from a seed."""

    name = "shop"
    description = (
        "The customer-support back office of an online shop: users with addresses and "
        "payment methods, products with variants, and orders. The tools look users up (by "
        "email, or by name and zip code), read user, order and product details, and change "
        "data on a customer's behalf: cancel a pending order or change its address, items or "
        "payment method, change a user's address, and return or exchange items of a "
        "delivered order."
    )

    def __init__(self) -> None:
        super().__init__()
        self.db: dict[str, Any] = {"users": {}, "products": {}, "orders": {}}

    # -- generation -------------------------------------------------------------------

    def reset(self, seed: int = 0, task: Task | None = None) -> None:
        """Generate the database for ``seed`` (tasks carry the seed they were written for)."""
        if task is not None:
            seed = task.seed
        self.seed = seed
        rng = random.Random(f"shop-{seed}")
        products: dict[str, Any] = {}
        used_ids: set[str] = set()

        def fresh_id(digits: int) -> str:
            while True:
                value = str(rng.randrange(10 ** (digits - 1), 10**digits))
                if value not in used_ids:
                    used_ids.add(value)
                    return value

        for name, (options, base) in CATALOG.items():
            product_id = fresh_id(10)
            variants: dict[str, Any] = {}
            keys = list(options)
            combos: list[dict[str, str]] = [{}]
            for key in keys:
                combos = [{**c, key: v} for c in combos for v in options[key]]
            for combo in combos:
                item_id = fresh_id(10)
                variants[item_id] = {
                    "item_id": item_id,
                    "options": combo,
                    "price": _money(base * rng.uniform(0.85, 1.25)),
                    "available": rng.random() > 0.2,
                }
            products[product_id] = {"name": name, "product_id": product_id, "variants": variants}

        users: dict[str, Any] = {}
        names = [(first, last) for first in FIRST_NAMES for last in LAST_NAMES]
        rng.shuffle(names)
        for first, last in names[:24]:
            user_id = f"{first.lower()}_{last.lower()}_{rng.randrange(1000, 9999)}"
            methods: dict[str, Any] = {}
            card = f"credit_card_{fresh_id(7)}"
            methods[card] = {
                "source": "credit_card",
                "id": card,
                "brand": rng.choice(CARD_BRANDS),
                "last_four": str(rng.randrange(1000, 9999)),
            }
            if rng.random() < 0.6:
                gift = f"gift_card_{fresh_id(7)}"
                methods[gift] = {"source": "gift_card", "id": gift, "balance": float(rng.randrange(20, 300))}
            if rng.random() < 0.4:
                paypal = f"paypal_{fresh_id(7)}"
                methods[paypal] = {"source": "paypal", "id": paypal}
            users[user_id] = {
                "user_id": user_id,
                "name": {"first_name": first, "last_name": last},
                "email": f"{first.lower()}.{last.lower()}{rng.randrange(10, 99)}@example.com",
                "address": self._random_address(rng),
                "payment_methods": methods,
                "orders": [],
            }

        orders: dict[str, Any] = {}
        product_list = list(products.values())
        for user in users.values():
            for _ in range(rng.randrange(2, 5)):
                order_id = f"#W{fresh_id(7)}"
                items = []
                for product in rng.sample(product_list, rng.randrange(1, 4)):
                    variant = rng.choice(list(product["variants"].values()))
                    items.append(
                        {
                            "name": product["name"],
                            "product_id": product["product_id"],
                            "item_id": variant["item_id"],
                            "price": variant["price"],
                            "options": dict(variant["options"]),
                        }
                    )
                method = rng.choice(
                    [m for m in user["payment_methods"] if not m.startswith("gift_card")]
                )
                total = _money(sum(i["price"] for i in items))
                orders[order_id] = {
                    "order_id": order_id,
                    "user_id": user["user_id"],
                    "address": dict(user["address"]),
                    "items": items,
                    "status": rng.choice(ORDER_STATUSES),
                    "payment_history": [
                        {"transaction_type": "payment", "amount": total, "payment_method_id": method}
                    ],
                }
                user["orders"].append(order_id)
        self.db = {"users": users, "products": products, "orders": orders}

    @staticmethod
    def _random_address(rng: random.Random) -> dict[str, str]:
        city, state, zip3 = rng.choice(CITIES)
        return {
            "address1": f"{rng.randrange(10, 999)} {rng.choice(STREETS)} {rng.choice(STREET_KINDS)}",
            "address2": f"Suite {rng.randrange(100, 999)}",
            "city": city,
            "state": state,
            "country": "USA",
            "zip": f"{zip3}{rng.randrange(10, 99)}",
        }

    # -- World API --------------------------------------------------------------------

    def tool_functions(self):
        return {
            "find_user_id_by_email": self.find_user_id_by_email,
            "find_user_id_by_name_zip": self.find_user_id_by_name_zip,
            "get_user_details": self.get_user_details,
            "get_order_details": self.get_order_details,
            "get_product_details": self.get_product_details,
            "list_all_product_types": self.list_all_product_types,
            "cancel_pending_order": self.cancel_pending_order,
            "modify_pending_order_address": self.modify_pending_order_address,
            "modify_pending_order_items": self.modify_pending_order_items,
            "modify_pending_order_payment": self.modify_pending_order_payment,
            "modify_user_address": self.modify_user_address,
            "return_delivered_order_items": self.return_delivered_order_items,
            "exchange_delivered_order_items": self.exchange_delivered_order_items,
        }

    def read_only_tools(self) -> frozenset[str]:
        return frozenset({"find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details",
                          "get_order_details", "get_product_details", "list_all_product_types"})

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        s = {"type": "string"}
        return {
            "find_user_id_by_email": _obj({"email": s}),
            "find_user_id_by_name_zip": _obj({"first_name": s, "last_name": s, "zip": s}),
            "get_user_details": _obj({"user_id": s}),
            "get_order_details": _obj({"order_id": s}),
            "get_product_details": _obj({"product_id": s}),
            "list_all_product_types": _obj({}),
            "cancel_pending_order": _obj(
                {"order_id": s, "reason": {"type": "string", "enum": CANCEL_REASONS}}
            ),
            "modify_pending_order_address": _obj({"order_id": s, **_ADDRESS_PROPS}),
            "modify_pending_order_items": _obj(
                {"order_id": s, "item_ids": _ID_LIST, "new_item_ids": _ID_LIST, "payment_method_id": s}
            ),
            "modify_pending_order_payment": _obj({"order_id": s, "payment_method_id": s}),
            "modify_user_address": _obj({"user_id": s, **_ADDRESS_PROPS}),
            "return_delivered_order_items": _obj(
                {"order_id": s, "item_ids": _ID_LIST, "payment_method_id": s}
            ),
            "exchange_delivered_order_items": _obj(
                {"order_id": s, "item_ids": _ID_LIST, "new_item_ids": _ID_LIST, "payment_method_id": s}
            ),
        }

    def tool_descriptions(self) -> dict[str, str]:
        return {
            "find_user_id_by_email": "Find a user's id from their email address.",
            "find_user_id_by_name_zip": "Find a user's id from first name, last name and the zip of their address.",
            "get_user_details": "A user's name, email, address, payment methods and order ids.",
            "get_order_details": "An order's status, items, address and payment history.",
            "get_product_details": "A product's variants: item ids, options, price, availability.",
            "list_all_product_types": "Product name -> product id for every product type.",
            "cancel_pending_order": "Cancel a pending order (reason: 'no longer needed' or "
            "'ordered by mistake'); the payment is refunded to the original method.",
            "modify_pending_order_address": "Change the shipping address of a pending order.",
            "modify_pending_order_items": "Swap items of a pending order for other available "
            "variants of the same product (once per order); the price difference is charged "
            "or refunded to the given payment method.",
            "modify_pending_order_payment": "Pay a pending order with another of the user's payment methods.",
            "modify_user_address": "Change a user's default address.",
            "return_delivered_order_items": "Request a return of items of a delivered order; "
            "the refund goes to the original payment method or a gift card.",
            "exchange_delivered_order_items": "Request an exchange of items of a delivered order "
            "for available variants of the same products; the difference is settled with the "
            "given payment method.",
        }

    def state(self) -> dict[str, Any]:
        return deep_copy(self.db)

    def personal_values(self, tasks: Sequence[Task]) -> list[PersonalValue]:
        """Every user's names, email, id, street address and zip, order ids and payment method
        ids on every seed of ``tasks``, and the personal params of the tasks (a new address).
        Card brands and last four digits, cities and states are left out (they identify nobody
        alone, and four digits match too much else)."""
        out: list[PersonalValue] = []
        for seed in sorted({t.seed for t in tasks}):
            world = ShopWorld()
            world.reset(seed)
            for user in world.db["users"].values():
                owner = f"{seed}:{user['user_id']}"
                first, last = user["name"]["first_name"], user["name"]["last_name"]
                address = user["address"]
                out += [PersonalValue(first, "first_name", owner), PersonalValue(last, "last_name", owner),
                        PersonalValue(f"{first} {last}", "name", owner), PersonalValue(user["email"], "email", owner),
                        PersonalValue(user["user_id"], "user_id", owner),
                        PersonalValue(address["address1"], "address", owner),
                        PersonalValue(address["address2"], "address", owner),
                        PersonalValue(address["zip"], "zip", owner)]
                out += [PersonalValue(m, "payment_id", owner) for m in user["payment_methods"]]
                out += [PersonalValue(o, "order_id", owner) for o in user["orders"]]
        out += params_values(tasks, PERSONAL_PARAMS)
        return out

    def verify(self, task: Task) -> Verdict:
        """Success when the database equals the one reached by replaying the gold actions."""
        return self.verify_against_gold(task, "database")

    # -- read tools -------------------------------------------------------------------

    def find_user_id_by_email(self, email: str) -> str:
        for user in self.db["users"].values():
            if user["email"].lower() == email.strip().lower():
                return user["user_id"]
        raise ToolError(f"no user has the email {email!r}; check the spelling or look the user up by name and zip")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user in self.db["users"].values():
            name = user["name"]
            if (
                name["first_name"].lower() == first_name.strip().lower()
                and name["last_name"].lower() == last_name.strip().lower()
                and user["address"]["zip"] == zip.strip()
            ):
                return user["user_id"]
        raise ToolError(f"no user named {first_name} {last_name} with zip {zip!r}")

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return deep_copy(self._user(user_id))

    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return deep_copy(self._order(order_id))

    def get_product_details(self, product_id: str) -> dict[str, Any]:
        if product_id not in self.db["products"]:
            raise ToolError(
                f"no product with id {product_id!r}; list_all_product_types gives the product ids"
            )
        return deep_copy(self.db["products"][product_id])

    def list_all_product_types(self) -> dict[str, str]:
        return {p["name"]: p["product_id"] for p in self.db["products"].values()}

    # -- write tools ------------------------------------------------------------------

    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        order = self._order(order_id, status="pending", action="cancelled")
        if reason not in CANCEL_REASONS:
            raise ToolError(f"reason must be one of {CANCEL_REASONS}, got {reason!r}")
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        for payment in [p for p in order["payment_history"] if p["transaction_type"] == "payment"]:
            order["payment_history"].append(
                {
                    "transaction_type": "refund",
                    "amount": payment["amount"],
                    "payment_method_id": payment["payment_method_id"],
                }
            )
            self._credit(order["user_id"], payment["payment_method_id"], payment["amount"])
        return deep_copy(order)

    def modify_pending_order_address(self, order_id: str, **address: str) -> dict[str, Any]:
        order = self._order(order_id, status="pending", action="re-addressed")
        order["address"] = {k: address[k] for k in _ADDRESS_KEYS}
        return deep_copy(order)

    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, status="pending", action="modified")
        diff = self._swap_items(order, item_ids, new_item_ids, payment_method_id)
        for old, new in zip(item_ids, new_item_ids):
            item = next(i for i in order["items"] if i["item_id"] == old)
            variant = self.db["products"][item["product_id"]]["variants"][new]
            item.update(item_id=new, price=variant["price"], options=dict(variant["options"]))
        if diff:
            kind = "payment" if diff > 0 else "refund"
            order["payment_history"].append(
                {"transaction_type": kind, "amount": _money(abs(diff)), "payment_method_id": payment_method_id}
            )
            self._credit(order["user_id"], payment_method_id, -diff)
        order["status"] = "pending (item modified)"
        return deep_copy(order)

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        order = self._order(order_id, status="pending", action="given a new payment method")
        payments = [p for p in order["payment_history"] if p["transaction_type"] == "payment"]
        current = payments[0]
        if current["payment_method_id"] == payment_method_id:
            raise ToolError(f"order {order_id} is already paid with {payment_method_id}")
        self._method(order["user_id"], payment_method_id, amount=current["amount"])
        order["payment_history"] += [
            {"transaction_type": "payment", "amount": current["amount"], "payment_method_id": payment_method_id},
            {
                "transaction_type": "refund", "amount": current["amount"],
                "payment_method_id": current["payment_method_id"],
            },
        ]
        self._credit(order["user_id"], payment_method_id, -current["amount"])
        self._credit(order["user_id"], current["payment_method_id"], current["amount"])
        return deep_copy(order)

    def modify_user_address(self, user_id: str, **address: str) -> dict[str, Any]:
        user = self._user(user_id)
        user["address"] = {k: address[k] for k in _ADDRESS_KEYS}
        return deep_copy(user)

    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, status="delivered", action="returned")
        self._check_items(order, item_ids)
        original = order["payment_history"][0]["payment_method_id"]
        method = self._method(order["user_id"], payment_method_id)
        if payment_method_id != original and method["source"] != "gift_card":
            raise ToolError(
                f"a refund goes to the original payment method ({original}) or a gift card, "
                f"not {payment_method_id}"
            )
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return deep_copy(order)

    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        order = self._order(order_id, status="delivered", action="exchanged")
        self._swap_items(order, item_ids, new_item_ids, payment_method_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        return deep_copy(order)

    # -- internals --------------------------------------------------------------------

    def _user(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.db["users"]:
            raise ToolError(
                f"no user with id {user_id!r}; find it with find_user_id_by_email or find_user_id_by_name_zip"
            )
        return self.db["users"][user_id]

    def _order(self, order_id: str, status: str | None = None, action: str = "") -> dict[str, Any]:
        if order_id not in self.db["orders"]:
            hint = " (order ids look like '#W1234567')" if not order_id.startswith("#W") else ""
            raise ToolError(f"no order with id {order_id!r}{hint}")
        order = self.db["orders"][order_id]
        if status and order["status"] != status:
            raise ToolError(
                f"order {order_id} is {order['status']}; only {status} orders can be {action}"
            )
        return order

    def _method(self, user_id: str, method_id: str, amount: float = 0.0) -> dict[str, Any]:
        methods = self.db["users"][user_id]["payment_methods"]
        if method_id not in methods:
            raise ToolError(
                f"{method_id!r} is not a payment method of user {user_id}; "
                f"their methods are: {', '.join(methods)}"
            )
        method = methods[method_id]
        if method["source"] == "gift_card" and amount > method["balance"] + 1e-9:
            raise ToolError(
                f"gift card {method_id} has a balance of {method['balance']:.2f}, "
                f"less than the {amount:.2f} to pay"
            )
        return method

    def _credit(self, user_id: str, method_id: str, amount: float) -> None:
        method = self.db["users"][user_id]["payment_methods"].get(method_id)
        if method and method["source"] == "gift_card":
            method["balance"] = _money(method["balance"] + amount)

    def _check_items(self, order: dict[str, Any], item_ids: list[str]) -> None:
        present = [i["item_id"] for i in order["items"]]
        for item_id in item_ids:
            if item_id not in present:
                raise ToolError(
                    f"item {item_id} is not in order {order['order_id']}; its items are: {', '.join(present)}"
                )
        if len(set(item_ids)) != len(item_ids):
            raise ToolError("item_ids lists the same item twice")

    def _swap_items(
        self, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str], method_id: str
    ) -> float:
        """Check a swap of items for variants; return the price difference (new - old)."""
        self._check_items(order, item_ids)
        if len(item_ids) != len(new_item_ids):
            raise ToolError(
                f"item_ids has {len(item_ids)} item(s) but new_item_ids has {len(new_item_ids)}; "
                "give one new item per item"
            )
        diff = 0.0
        for old, new in zip(item_ids, new_item_ids):
            item = next(i for i in order["items"] if i["item_id"] == old)
            product = self.db["products"][item["product_id"]]
            if new not in product["variants"]:
                raise ToolError(
                    f"new item {new} is not a variant of {product['name']} (product "
                    f"{product['product_id']}); get_product_details lists its variants"
                )
            variant = product["variants"][new]
            if new == old:
                raise ToolError(f"new item {new} is the same variant as item {old}")
            if not variant["available"]:
                raise ToolError(f"item {new} ({product['name']}, {variant['options']}) is not available")
            diff += variant["price"] - item["price"]
        self._method(order["user_id"], method_id, amount=max(diff, 0.0))
        return _money(diff)


def gold(*actions: tuple[str, dict[str, Any]]) -> list[GoldAction]:
    """Shorthand: ``gold(("get_order_details", {"order_id": "#W1"}), ...)``."""
    return [GoldAction(name=name, arguments=arguments) for name, arguments in actions]


#: the tools factory of ``skills evaluate --world benchmarks.worlds.shop:factory``
factory = evaluation_factory(ShopWorld)
