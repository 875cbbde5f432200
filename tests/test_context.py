"""The per-tenant context (skill_library.context, issue 24): each tenant view has its own,
and its one ``sync`` keeps the index equal to the records, given skills or names."""

from __future__ import annotations

from skill_library.context import CanaryRoutes, TenantContext
from skill_library.models import Skill

WHENS = {
    "cancel_order": "cancel a pending order for a customer",
    "book_flight": "book a flight ticket to another city",
}


def skill(name: str, when: str, value: str = "v") -> Skill:
    return Skill.from_function(f'def {name}(target: str) -> str:\n    return target + "{value}"\n', when=when)


def index_matches_records(library) -> bool:
    return library.index.entries() == {e.id: e.version for e in library.context.index.expected_entries()}


def test_a_tenant_view_gets_a_context_of_its_own(library):
    acme = library.for_tenant("acme")
    assert acme.context is not library.context
    assert (library.context.tenant, acme.context.tenant) == ("default", "acme")
    assert acme.context.store is acme.context.store and acme.context.index.tenant == "acme"
    assert acme.context.routes is not library.context.routes
    library.context.routes.sessions[("s1", "greet")] = 2
    library.context.routes.cache = (1, {})
    assert acme.context.routes == CanaryRoutes()  # nothing of the root's routing state
    assert library.for_tenant("acme").context is acme.context  # the same view, the same context


def test_sync_by_record_and_by_name_makes_the_index_equal_to_the_records(library):
    for name, when in WHENS.items():
        library.add(skill(name, when), verified=True)
    assert index_matches_records(library)
    context: TenantContext = library.context
    with context.index.writing() as index:
        index.delete("cancel_order")
        index.delete("book_flight")
    assert library.index.entries() == {}
    with context.index.writing() as index:
        context.sync(index, [library.get("cancel_order")])  # a record
        context.sync(index, ["book_flight"])  # a name, read from the store
    assert index_matches_records(library) and len(library.index.entries()) == 2


def test_sync_takes_a_skill_that_is_not_active_out_of_the_index(library):
    for name, when in WHENS.items():
        library.add(skill(name, when), verified=True)
    context = library.context
    stale = context.index.expected_entries([library.get("book_flight")])  # while it was active
    retired = library.retire("book_flight")
    assert retired.status == "retired"
    with context.index.writing() as index:
        index.upsert(stale, context.vectors.embed([e.when for e in stale]))  # left behind
    assert any(e.id in library.index.entries() for e in stale)
    with context.index.writing() as index:
        context.sync(index, [retired])
    assert not any(e.id in library.index.entries() for e in stale)
    assert index_matches_records(library)
    with context.index.writing() as index:
        index.upsert(stale, context.vectors.embed([e.when for e in stale]))
        context.sync(index, ["book_flight", "no_such_skill"])  # by name: read, not active
    assert index_matches_records(library)


def test_sync_fills_the_known_vectors_it_computed(library):
    library.add(skill("cancel_order", WHENS["cancel_order"]), verified=True)
    context = library.context
    with context.index.writing() as index:
        index.delete("cancel_order")
        known: dict = {}
        context.sync(index, ["cancel_order"], known=known)
    assert known and all(len(v) == 384 for v in known.values())
    assert index_matches_records(library)
