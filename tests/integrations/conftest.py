"""A library holding two skills of the order desk (desk_tools.py), for the integrations."""

from __future__ import annotations

import pytest
from desk_tools import CANCEL_CODE, CANCELLED, COUNT_CODE


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
