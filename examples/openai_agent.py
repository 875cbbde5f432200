"""The loop an agent framework writes around the library, on the real ``openai`` client:
fetch skills for the task, expose them as tools, dispatch the model's calls, feed back the outcome.

    OPENAI_API_KEY=... .venv/bin/python examples/openai_agent.py          # or OPENAI_BASE_URL=...
    SKILL_LIBRARY_MODEL=gpt-4o-mini (default)

The library starts with one verified skill (cancel_every_order). The model sees it as a
function tool and as a prompt block; each call it makes runs in the sandbox through
``library.dispatch``; when the model is done, a check of the world decides the outcome that
is recorded for the runs (a failed run is recorded already, by ``run``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from skill_library import Skill, SkillLibrary  # noqa: E402

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


TOOLS: dict[str, Callable[..., Any]] = {
    "find_user": find_user, "list_orders": list_orders, "cancel_order": cancel_order,
}

SKILL = '''
def cancel_every_order(email: str) -> list:
    """Cancel all pending orders of a customer; returns the cancelled order ids."""
    user = find_user(email=email)
    return [cancel_order(order_id=o["order_id"], reason="customer request")["order_id"]
            for o in list_orders(user_id=user["user_id"])]
'''


def run_agent(library: SkillLibrary, client: Any, model: str, task: str, *, max_turns: int = 5) -> str:
    """Fetch, expose as tools, dispatch, and return the model's final answer."""
    matches = library.fetch(task, k=3)                      # 1. fetch before planning
    tools = library.as_openai_tools(matches)                # 2. expose them as function tools
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You help an order desk.\n\n" + library.render(matches, max_tokens=400)},
        {"role": "user", "content": task},
    ]
    runs = []
    for _ in range(max_turns):
        reply = client.chat.completions.create(model=model, messages=messages, tools=tools or None)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:                     # 3. dispatch each call in the sandbox
            answer = library.dispatch(call, TOOLS)
            print(f"tool {call.function.name}({call.function.arguments}) -> {answer['content']}")
            messages.append(answer)
            if answer.run is not None and answer.run.ok:
                runs.append(answer.run)
    succeeded = check_world(task)                           # 4. feed back the outcome
    for run in runs:
        skill = library.feedback(run.name, succeeded, trace_id=run.trace.id)
        print(f"feedback {skill.name}: {'success' if succeeded else 'failure'}, "
              f"reliability {skill.reliability:.2f}")
    return message.content or ""


def check_world(task: str) -> bool:
    """The verifier: every order of the customer named in the task is cancelled."""
    email = next(word for word in task.split() if "@" in word)
    return set(ORDERS[USERS[email]]) <= set(CANCELLED)


def main() -> int:
    from skill_library.errors import LLMError
    from skill_library.llm_endpoint import model_name, openai_client

    try:
        client = openai_client()
    except LLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder, SkillLibrary(folder) as library:
        library.add(Skill.from_function(SKILL, when="cancel every order of a customer by email",
                                        tools=list(TOOLS)), verified=True)
        answer = run_agent(library, client, model_name(), "cancel every order of bob@example.com")
        print(f"answer: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
