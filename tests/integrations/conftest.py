"""A library holding two skills of the order desk (desk_tools.py), for the integrations."""

from __future__ import annotations

import pytest
from desk_tools import CANCELLED

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


@pytest.fixture
def desk(library):
    """``library`` with cancel_every_order and count_orders, each with one verified success."""
    from skill_library.models import Skill

    CANCELLED.clear()
    library.add(
        Skill.from_function(CANCEL_CODE, when="cancel every order of a customer by email",
                            tools=["find_user", "list_orders", "cancel_order"]),
        verified=True,
    )
    library.add(
        Skill.from_function(COUNT_CODE, when="count how many orders a customer has",
                            tools=["find_user", "list_orders"]),
        verified=True,
    )
    return library
