"""No tenant learns another's texts through the vector cache, and delete leaves none (issue 23, item 5).

``text_vectors`` had no tenant column and ``load_vectors`` answered any digest: a tenant
could confirm another's exact ``when`` (is its vector stored? then someone has that text;
the tenant's own embed of the same text also skipped the model). And ``delete()`` left the
vector of the embedded form ``index_text(text, params)`` of every example. Now every row is
keyed by the text's digest salted with its tenant (``text_vectors.tenant_key``, applied in
the store), and delete removes every embedded form.
"""

from __future__ import annotations

import sqlalchemy as sa

from skill_library.models import Skill
from skill_library.text_vectors import tenant_key, text_digest

SECRET_WHEN = "transfer the merger escrow to the cayman account"
CODE = 'def escrow(target: str) -> dict:\n    """move escrow"""\n    return {"target": target}\n'
INVOICE = {
    "task": "send the march invoice to alice@example.com",
    "params": {"customer": "alice@example.com"},
    "calls": [{"name": "send_invoice", "arguments": {"email": "alice@example.com", "month": "march"},
               "result": {"sent": True}}],
    "outcome": {"success": True, "verifier": "mail-log"},
}


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, real) -> None:
        self.real, self.model_name, self.texts = real, real.model_name, []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.real.embed(texts)


def _rows(library) -> int:
    with library.context.store.transaction(write=False) as conn:
        return int(conn.execute(sa.text("SELECT COUNT(*) FROM text_vectors")).scalar())


def test_a_tenant_cannot_confirm_another_tenants_exact_when(library, embedder):
    victim = library.for_tenant("victim")
    victim.add(Skill.from_function(CODE, when=SECRET_WHEN), verified=True)
    model = embedder.model_name
    digest = text_digest(SECRET_WHEN)
    from skill_library.induction.description import index_text

    indexed = text_digest(index_text(SECRET_WHEN))
    assert set(victim.context.store.load_vectors(model, [digest, indexed])) == {indexed}  # the victim's own
    attacker = library.for_tenant("attacker")
    # by the text's digest, or by the victim's own salted key: nothing answers
    guesses = [digest, indexed, tenant_key("victim", indexed), tenant_key("victim", digest)]
    assert attacker.context.store.load_vectors(model, guesses) == {}
    assert library.context.store.load_vectors(model, guesses) == {}  # nor the default tenant
    # and through the public API: the attacker's own embed of the same text asks the model
    counting = Counting(embedder)
    attacker._text_vectors.embedder = counting
    attacker._text_vectors.embed([index_text(SECRET_WHEN), "water the plants"])
    assert counting.texts == [index_text(SECRET_WHEN), "water the plants"]
    counting.texts.clear()
    attacker._text_vectors.embed([index_text(SECRET_WHEN)])  # its own vector now: no model
    assert counting.texts == []


def test_delete_removes_every_embedded_form(library):
    before = _rows(library)
    result = library.learn(INVOICE)
    assert result.skill is not None, result.reasons
    name = result.skill.name
    from skill_library.induction.description import index_text

    [example] = library.context.store.examples([name])[name]
    assert _rows(library) > before
    # the example's embedded form with its params is not its bare form: the one delete missed
    assert index_text(example.text, example.params) != index_text(example.text), example
    library.delete(name, actor=None)
    assert _rows(library) == before
