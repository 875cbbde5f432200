"""Quickstart: learn a skill from one verified trace, fetch it for a new task, run it, record feedback.

    .venv/bin/python examples/quickstart.py

Runs offline in seconds (after the embedding model loads): the offline dataflow
generalizer writes the skill, the sandbox replays it against the trace before it is
saved, and the second run uses new arguments on the same tools.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_library import Outcome, Policy, SkillLibrary, ToolCall, ToolSpec, Trace  # noqa: E402

# A tiny order desk: the tools an agent can call.
USERS = {"alice@example.com": "u1", "bob@example.com": "u2"}
ORDERS = {"u1": ["W1", "W2"], "u2": ["W7", "W8", "W9"]}
CANCELLED: list[str] = []


def find_user(email: str) -> dict:
    return {"user_id": USERS[email]}


def list_orders(user_id: str) -> list[dict]:
    return [{"order_id": o, "status": "pending"} for o in ORDERS[user_id]]


def cancel_order(order_id: str, reason: str) -> dict:
    CANCELLED.append(order_id)
    return {"order_id": order_id, "status": "cancelled"}


TOOLS = {"find_user": find_user, "list_orders": list_orders, "cancel_order": cancel_order}

# 1. A trace an agent produced, checked by a verifier: the task, every call with its result.
trace = Trace(
    task="cancel every order of alice@example.com",
    params={"email": "alice@example.com"},
    calls=[
        ToolCall(name="find_user", arguments={"email": "alice@example.com"}, result={"user_id": "u1"}),
        ToolCall(name="list_orders", arguments={"user_id": "u1"},
                 result=[{"order_id": "W1", "status": "pending"}, {"order_id": "W2", "status": "pending"}]),
        ToolCall(name="cancel_order", arguments={"order_id": "W1", "reason": "customer request"},
                 result={"order_id": "W1", "status": "cancelled"}),
        ToolCall(name="cancel_order", arguments={"order_id": "W2", "reason": "customer request"},
                 result={"order_id": "W2", "status": "cancelled"}),
    ],
    outcome=Outcome(success=True, verifier="orders-db-check", evidence="W1, W2 cancelled"),
)

# The library opts in to auto-approval: cancel_order changes state, so under the default
# policy (auto_approve="read_only") the learned skill would wait for a human's approval
# (`skills approve` / library.approve). See docs/governance.md#governance.
with tempfile.TemporaryDirectory() as folder, SkillLibrary(folder, policy=Policy(auto_approve="all")) as library:
    # Declaring the tools says which ones only read, and what each does: a learned skill's
    # description is written from them (its steps in order, their loop, the lookups first).
    library.register_tools({
        "find_user": ToolSpec(side_effects=False, description="Find a customer by their email."),
        "list_orders": ToolSpec(side_effects=False, description="List a customer's orders."),
        "cancel_order": ToolSpec(description="Cancel a pending order."),
    })
    # 2. Learn: generalize, replay in the sandbox against the trace, store.
    learned = library.learn(trace)
    print(f"learn: {learned.status} -> {learned.skill.name} v{learned.skill.version}")
    print(f"when:  {learned.skill.when}")
    print(learned.skill.code)

    # 3. Fetch for a new task (reliability 2/3 after one verified success).
    task = "cancel every order of bob@example.com"
    match = library.fetch(task, k=1)[0]
    print(f"fetch: {match.skill.name} similarity={match.similarity:.2f} reliability={match.reliability:.2f}")

    # 4. Run it with new arguments; every tool call goes back to the host and is recorded.
    run = library.run(match.skill.name, {"email": "bob@example.com"}, TOOLS)
    print(f"run:   ok={run.ok} calls={[c.name for c in run.trace.calls]} cancelled={CANCELLED}")

    # 5. Your verifier checks the world, and the outcome feeds the skill's reliability.
    succeeded = CANCELLED == ["W7", "W8", "W9"]
    skill = library.feedback(match.skill.name, succeeded, trace_id=run.trace.id)
    print(f"feedback: {skill.successes} ok / {skill.failures} failed, reliability {skill.reliability:.2f}")
