"""A procedure's version and its audit event are written in one transaction (issue 24,
defect 7): a failure between the two writes leaves neither."""

from __future__ import annotations

import pytest

from skill_library.errors import SkillNotFoundError
from skill_library.governance import audit


class AuditDown(RuntimeError):
    pass


def test_a_failed_audit_write_leaves_no_active_procedure(library, monkeypatch):
    def failing_write(*args, **kwargs):
        raise AuditDown("the audit write failed")

    monkeypatch.setattr(audit, "write", failing_write)
    with pytest.raises(AuditDown):
        library.add_procedure("Quantify the worst case", "When the user asks about an investment",
                              "State the worst plausible loss in money before recommending anything.")
    monkeypatch.undo()
    name = "quantify_the_worst_case"
    with pytest.raises(SkillNotFoundError):  # was: an active procedure with no audit event
        library.get(name)
    assert library.audit(name) == []
    assert library.fetch("the user asks about an investment", k=3) == []
    # and the same call, once the audit can be written, stores both
    stored = library.add_procedure("Quantify the worst case", "When the user asks about an investment",
                                   "State the worst plausible loss in money before recommending anything.")
    assert stored.version == 1 and library.get(name).status == "active"
    assert [(e.version, e.to_status) for e in library.audit(name)] == [(1, "active")]
