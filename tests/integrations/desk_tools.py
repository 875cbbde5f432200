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

# the sources of two skills over these tools
CANCEL_CODE = '''
def cancel_every_order(email: str) -> list:
    """Cancel all pending orders of a customer."""
    user = find_user(email=email)
    done = []
    for order in list_orders(user_id=user["user_id"]):
        done.append(cancel_order(order_id=order["order_id"], reason="customer request")["order_id"])
    return done
'''

COUNT_CODE = '''
def count_orders(email: str, status: str = "pending") -> int:
    """How many orders of a customer have a status."""
    user = find_user(email=email)
    return len([o for o in list_orders(user_id=user["user_id"]) if o["status"] == status])
'''
