"""The order desk's host tools (a module: `skills serve-mcp --tools` loads it in a subprocess)."""

from __future__ import annotations

USERS = {"alice@example.com": "u1", "bob@example.com": "u2"}
ORDERS = {"u1": ["W1", "W2"], "u2": ["W7", "W8", "W9"]}
CANCELLED: list[str] = []


def find_user(email: str) -> dict:
    return {"user_id": USERS[email]}


def list_orders(user_id: str) -> list[dict]:
    print(f"listing orders of {user_id}")  # stray output: must not reach the MCP stdio stream
    return [{"order_id": o, "status": "pending"} for o in ORDERS[user_id]]


def cancel_order(order_id: str, reason: str) -> dict:
    CANCELLED.append(order_id)
    return {"order_id": order_id, "status": "cancelled"}


TOOLS = {"find_user": find_user, "list_orders": list_orders, "cancel_order": cancel_order}
