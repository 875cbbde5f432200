"""Finding skills for a query vector: the index query, growing while filtering leaves too
few, the per-skill best text, the status/reliability/confidence/tools filters, value-fit
re-scoring and ranking; and next-skill prefetch from a subject's usage pattern.
``SkillLibrary.fetch`` is :func:`fetch`, which embeds the task and calls :func:`search`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from skill_library import intent, one_vs_every, phrases, prototypes, ranking, value_fit
from skill_library.errors import SkillNotFoundError
from skill_library.models import Match, Skill, SkillKind
from skill_library.vector_index import IndexHit, VectorIndex, best_per_skill

if TYPE_CHECKING:
    from skill_library.abstention import FetchResult
    from skill_library.protocols import Fetching, Searching, Tenant

#: fetch asks the index for max(FETCH_OVERFETCH * k, k + FETCH_MIN_EXTRA) skills' worth of
#: entries (ENTRIES_PER_SKILL_GUESS texts each), and FETCH_GROWTH times more while
#: filtering, or several texts of one skill, leave fewer than k skills. One text per skill
#: is the fast guess (a larger first query cost ~1 ms at every fetch, measured with
#: benchmarks/perf_fetch.py); skills with many examples take the growth step when needed.
FETCH_OVERFETCH = 4
#: (24: ranking by evidence, bindability and specificity needs a pool to choose from; a
#: skill that binds may read a little less alike than a dozen copies that do not)
FETCH_MIN_EXTRA = 24
ENTRIES_PER_SKILL_GUESS = 1
FETCH_GROWTH = 4
#: how often one fetch reopens the index when another writer changed the records meanwhile
FETCH_REFRESHES = 3
#: how often one fetch embeds the task again when the search read a generation whose
#: skills change what is embedded (intent.without_requester)
FORM_REFRESHES = 2
#: least confidence of a procedure fetch returns (procedures are filtered by confidence)
PROCEDURE_FETCH_CONFIDENCE = 0.55
#: fetch(subject=, state=) adds the predicted next skill only when at least this many of the
#: subject's transitions from ``state`` back the prediction
PREFETCH_MIN_N = 5


class Searched(NamedTuple):
    """What :func:`searched` found: the matches, the task's reading ranking used (None: not
    read) and the records generation the hits were read at (None: an index of the caller's)."""

    matches: list[Match]
    reading: intent.Reading | None
    generation: int | None


def searched(
    library: "Searching",
    embedding: Sequence[float],
    k: int,
    threshold: float,
    kinds: Sequence[SkillKind] | None,
    index: VectorIndex | None = None,
    *,
    floor: float = -1.0,
    tools: frozenset[str] | None = None,
    values: value_fit.TaskValues | None = None,
    args: Mapping[str, Any] | None = None,
    explain: bool = False,
    extra: int = 0,
    reading: intent.Reading | None = None,
    read: Callable[[int | None], intent.Reading] | None = None,
) -> Searched:
    """The ``k`` best qualifying skills for a query ``embedding`` (see ``SkillLibrary.fetch``),
    with the reading and generation it used: asks the index for a few entries per wanted skill
    and more while filtering leaves fewer than ``k``; ``values`` re-scores the candidates by
    value fit, and :mod:`skill_library.ranking` orders them (evidence, bindability from
    ``args`` and the task's values, specificity, reliability; ``explain`` keeps the
    breakdown). ``extra`` more matches than ``k`` are returned when qualifying (the
    abstention margin rule reads the runner-up). ``reading``: the task read by
    :mod:`skill_library.intent` (ranking demotes the skills it rules out). ``read``: the task's reading
    at a generation (fetch's :func:`skill_library.intent.reading`), called with the one the
    hits' records were read at, in place of ``reading`` (one read of the generation serves
    the index check, the reading's vocabulary and read-only tools, the one-vs-every scope
    and the caller's calibration)."""
    wanted_kinds = set(kinds) if kinds is not None else None
    # the library's own index is checked against the records optimistically: the
    # generation is read in the same read as the records the hits name, and a change
    # (another writer) reopens the index and asks again
    synced = library.context.index if index is None else None
    if synced is not None:
        index = synced.opened()
    assert index is not None
    refreshes = 0
    n = max(FETCH_OVERFETCH * k, k + FETCH_MIN_EXTRA) * ENTRIES_PER_SKILL_GUESS
    needs: dict[str, frozenset[str] | None] = {}
    read_at: int | None = None  # the generation ``reading`` was read at (with ``read``)
    while True:
        try:
            found = index.query(embedding, n)  # fewer than n: the index has no more
        except Exception:
            if synced is None or refreshes >= FETCH_REFRESHES:
                raise
            # the unchecked index may be gone (another process rebuilt it): check, ask again
            refreshes += 1
            index = synced.current()
            continue
        below = bool(found) and found[-1].similarity < floor  # the rest is further away
        hits = [
            h for h in best_per_skill(found)
            if (wanted_kinds is None or h.kind in wanted_kinds) and h.similarity >= floor
        ]
        keys = [(h.name, h.version) for h in hits]
        generation: int | None = None
        if synced is None:
            records = library.context.store.get_many(keys)
        else:
            records, generation = library.context.store.get_many_and_generation(keys)
            if generation != synced.seen_generation and refreshes < FETCH_REFRESHES:
                refreshes += 1
                index = synced.current()  # reopened and checked against the records
                continue
        if read is not None and (reading is None or read_at != generation):
            reading, read_at = read(generation), generation  # the task's, at the records' generation
        named = {name: ranking.named_choices(reading, name) for name in {h.name for h in found}}
        fitted = {id(h): ranking.entry_fit(values, h, named[h.name]) if values is not None else h.similarity
                  for h in found}
        by_entry: dict[str, dict[str, float]] = {}
        for h in found:
            kinds_seen = by_entry.setdefault(h.name, {})
            kind = entry_kind(h)
            kinds_seen[kind] = max(kinds_seen.get(kind, -1.0), h.similarity)
        # each skill's best plain cosine (the floor compares it) and best fitted entry
        cosine = {h.name: h.similarity for h in reversed(found)}
        best_entry: dict[str, IndexHit] = {}
        for h in found:
            if h.name not in best_entry or fitted[id(h)] > fitted[id(best_entry[h.name])]:
                best_entry[h.name] = h
        confidence = (library.procedures.confidences([h.name for h in hits if h.kind == "instruction"])
                      if any(h.kind == "instruction" for h in hits) else {})
        candidates = []
        # the tenant's read-only tools: as the task's reading saw them (cached per generation)
        read_only = (reading.read_only if reading is not None else library.read_only_tools) if hits else frozenset()
        for hit in hits:
            skill = records.get((hit.name, hit.version))
            if skill is None:
                continue
            if skill.kind == "instruction":
                if skill.status != "active" or confidence.get(skill.name, 0.0) < PROCEDURE_FETCH_CONFIDENCE:
                    continue
            elif not ranking.qualifies(skill, threshold):
                continue
            if tools is not None:
                need = tools_needed(library, skill, needs)
                if need is None or not need <= tools:
                    continue
            best = best_entry[hit.name]
            needed = tools_needed(library, skill, needs) if skill.depends_on else None
            candidates.append(ranking.Candidate(
                skill=skill, similarity=cosine[hit.name], fitted=fitted[id(best)], entry=entry_kind(best),
                best_cosine=best.similarity, by_entry=by_entry[hit.name], shapes=_shapes_of(best, found),
                acting=ranking.acting_tools(skill, read_only, needed),
            ))
        if len(candidates) >= k + extra or len(found) < n or below:
            ranked = ranking.rank_candidates(candidates, values, args, explain=explain, limit=k + extra,
                                             scope=one_vs_every.scope(library, generation), reading=reading)
            return Searched(ranked, reading, generation)
        n *= FETCH_GROWTH


def entry_kind(hit: IndexHit) -> str:
    """``when``, ``phrase``, ``example`` or ``prototype``: which of a skill's texts an index hit is."""
    if not hit.key or hit.key == hit.name:
        return "when"
    if phrases.is_phrase_key(hit.key):
        return "phrase"
    return "prototype" if hit.key.endswith(prototypes.KEY_SUFFIX) else "example"


def _shapes_of(best: IndexHit, found: Sequence[IndexHit]) -> dict[str, list[str]] | None:
    """Parameter -> value shapes of a skill: its best entry's, else any entry's that has them."""
    for hit in [best, *(h for h in found if h.name == best.name)]:
        decoded = value_fit.decode(hit.shapes)
        if decoded:
            return decoded
    return None


def tools_needed(
    library: "Tenant", skill: Skill, memo: dict[str, frozenset[str] | None]
) -> frozenset[str] | None:
    """Every tool ``skill`` and the skills it calls declare; None if one is missing."""
    if skill.name in memo:
        return memo[skill.name]
    memo[skill.name] = frozenset(skill.tools)  # a cycle ends here
    need = set(skill.tools)
    for dep in skill.depends_on:
        try:
            sub = tools_needed(library, library.context.store.get(dep), memo)
        except SkillNotFoundError:
            sub = None
        if sub is None:
            memo[skill.name] = None
            return None
        need |= sub
    memo[skill.name] = frozenset(need)
    return memo[skill.name]


def prefetch(library: "Fetching", subject: str, state: str, matches: Sequence[Match],
             threshold: float) -> list[Match]:
    """The skill ``subject``'s usage pattern predicts after ``state``, flagged
    ``prefetch=True``, when :data:`PREFETCH_MIN_N` transitions back it and it is fetchable."""
    predicted = library.patterns.predict(subject, state, min_n=PREFETCH_MIN_N)
    if predicted is None or predicted in {m.skill.name for m in matches}:
        return []
    try:
        skill = library.context.store.get(predicted)
    except SkillNotFoundError:
        return []  # a product state, not a skill
    if skill.kind != "code" or not ranking.qualifies(skill, threshold):
        return []
    match = ranking.make_match(skill, 0.0)
    return [match.model_copy(update={"prefetch": True})]


def fetch(
    library: "Fetching",
    task: str,
    k: int = 2,
    *,
    min_reliability: float | None = None,
    min_similarity: float | None = None,
    tools: Iterable[str] | None = None,
    kinds: Sequence[SkillKind] | None = None,
    subject: str | None = None,
    state: str | None = None,
    session: str | None = None,
    cohort: str | None = None,
    args: Mapping[str, Any] | None = None,
    explain: bool = False,
    abstain: bool = True,
    plan: bool = False,
    read_tools: Mapping[str, Callable[..., Any]] | None = None,
) -> "FetchResult":
    """``SkillLibrary.fetch`` (its docstring says what each option does): check the
    options, embed the task, :func:`search`, then prefetch, canary routing, abstention,
    preconditions, the uplift holdout and the plan, in that order."""
    from skill_library import abstention
    from skill_library import uplift as holdout
    from skill_library.induction import description, preconditions

    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not isinstance(task, str) or not task.strip():
        raise ValueError("task must be a non-empty string")
    if isinstance(tools, str):
        raise TypeError("tools must be a collection of tool names, not one string")
    threshold = library.min_reliability if min_reliability is None else min_reliability
    floor = library.min_similarity if min_similarity is None else min_similarity
    if args is not None and not isinstance(args, Mapping):
        raise TypeError("args must be a mapping of parameter name -> value")
    # what is embedded: the task less what only says who the requester is or what they are
    # like (intent.without_requester), as the skills of the generation this process saw last
    # look people up; a search that reads a newer generation where that changes embeds again
    people = intent.known(library, library.context.index.seen_generation).people
    form = intent.without_requester(task, people)
    values = value_fit.TaskValues.of(task)
    for _ in range(FORM_REFRESHES + 1):
        embedding = library.embedder.embed([description.query_text(form)])[0]
        # the index generation search reads with the hits' records serves everything cached by
        # it (the vocabulary and declared read-only tools of the task's reading, the one-vs-every
        # scope and the calibration): no read of its own
        found = searched(library, embedding, k, threshold, kinds, floor=floor,
                         tools=None if tools is None else frozenset(tools),
                         values=values, args=args, explain=explain,
                         extra=abstention.EXTRA_FOR_MARGIN if abstain else 0,
                         read=(lambda generation: intent.reading(library, task, generation)) if abstain else None)
        if found.generation is None or intent.known(library, found.generation).people == people:
            break
        people = not people
        if (newer := intent.without_requester(task, people)) == form:
            break  # the task says nothing about its requester: the same text
        form = newer
    matches, reading, generation = found.matches, found.reading, found.generation
    if subject is not None and state is not None:
        matches.extend(prefetch(library, subject, state, matches, threshold))
    if session is not None or cohort is not None:
        from skill_library.governance import canary

        matches = canary.route(library, matches, session=session, cohort=cohort,
                               generation=library.context.index.seen_generation)
    result = (abstention.unflagged(matches, k) if not abstain
              else abstention.decide(matches, k, abstention.calibration(library, generation), reading))
    if read_tools is not None:  # issue 21 item 3: which candidates apply to this caller's data
        result = preconditions.rank_applicable(library, result, args or {}, read_tools, abstain=abstain,
                                               runners_up=matches, reading=reading)
    if session is not None:  # the uplift holdout (skill_library.uplift): held_back, abstains
        result = holdout.hold_back(library, result, session, library.context.index.seen_generation)
    if plan:  # a compound task: the skills that together cover it, in order
        result.plan = library.plan(task, tools=tools, min_reliability=min_reliability)
    return result
