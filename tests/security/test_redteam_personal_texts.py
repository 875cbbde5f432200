"""Personal data in a trace never reaches the shared texts (issue 23, item 3; the review's case).

The review learned a trace whose task named an IBAN ("my late husband's account") and a
health detail ("chemotherapy"), with a recipient named only in a call's arguments: all of
them reached ``when``, the docstring, the examples and SKILL.md. This checks every text a
skill carries out of the library against that exact case. The recipient, a constant the
agent chose that names a person, would also have been the target of every later transfer:
such a version is held for a person (governance/grounding.py), so it is never active and
never exported; its draft code keeps the constant for the reviewer to see.
"""

from __future__ import annotations

import re

from skill_library.integrations.agent_skills import export_library

IBAN = "DE89 3704 0044 0532 0130 00"
RECIPIENT = "Marta Kowalczyk"
TRACE = {
    "task": (f"Please send 200 euros to the account {IBAN}, it was my late husband's account. "
             "I am in chemotherapy this month so please hurry."),
    "params": {"iban": IBAN, "amount": 200},
    "calls": [
        {"name": "send_transfer", "arguments": {"iban": IBAN, "amount": 200, "recipient": RECIPIENT},
         "result": {"status": "sent", "transfer_id": "T-881"}},
    ],
    "outcome": {"success": True, "verifier": "bank-ledger"},
}
#: what must not appear in any shared text (case-insensitive; the IBAN with or without spaces)
SECRETS = ("chemotherapy", "husband", "Kowalczyk", "Marta", "DE89", "37040044", "0532", "T-881")


def _leaks(text: str) -> list[str]:
    flat = re.sub(r"\s+", "", text).lower()
    return [s for s in SECRETS if s.lower() in text.lower() or re.sub(r"\s+", "", s).lower() in flat]


def test_no_iban_health_detail_or_recipient_reaches_a_shared_text(library, tmp_path):
    result = library.learn(TRACE)
    assert result.skill is not None, result.reasons
    skill = library.get(result.skill.name, result.skill.version)
    assert skill.status != "active", skill.status
    events = library.audit(skill.name) if hasattr(library, "audit") else []
    assert any("recipient='Marta Kowalczyk'" in str(getattr(e, "evidence", "")) + str(getattr(e, "reason", ""))
               for e in events) or any("recipient=" in r for r in result.reasons), (result.reasons, events)
    docstring = (skill.code or "").split('"""')[1] if '"""' in (skill.code or "") else ""
    texts = {"when": skill.when, "description": skill.description or "", "docstring": docstring}
    for n, example in enumerate(library.context.store.examples([skill.name])[skill.name]):
        texts[f"example {n}"] = example.text
        texts[f"example {n} params"] = repr(example.params)
    export_library(library, tmp_path / "out")  # active skills only: this one is not among them
    if (tmp_path / "out").exists():
        for path in (tmp_path / "out").rglob("*"):
            if path.is_file():
                texts[str(path.relative_to(tmp_path))] = path.read_text()
    found = {where: _leaks(text) for where, text in texts.items() if _leaks(text)}
    assert found == {}, found
