"""Usage-pattern memory: per subject, which state follows which (a habit stored as data).

Recording a transition is one insert and is kept apart from acting on it: what the library
does with the counts (predicting, prefetching) reads them later, through thresholds with
names. Drift (skill_library.patterns.drift) keeps the historical distribution as ``stable``
and the recent one as ``emerging``; emerging replaces stable only once it has
:data:`PROMOTE_MIN_N` transitions of its own and still differs from it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from skill_library.errors import LLMError, PatternError
from skill_library.patterns import drift as drift_rule
from skill_library.patterns.tables import sql_store
from skill_library.storage.patterns import PatternRows

if TYPE_CHECKING:
    import openai

    from skill_library.embeddings import Embedder
    from skill_library.record_store import RecordStore

TEMPLATES = Path(__file__).with_name("templates")
#: classify_state returns None when the best state's combined score is below this
CLASSIFY_MIN_CONFIDENCE = 0.35
#: weight of the transition prior (P(state | last recent state)) added to the similarity
CLASSIFY_PRIOR_WEIGHT = 0.15
#: softmax temperature turning combined scores into the returned confidence
CLASSIFY_TEMPERATURE = 0.05
#: an emerging distribution becomes the stable one with at least this many transitions
PROMOTE_MIN_N = 30
#: predict's default evidence floor (transitions of the stable distribution)
PREDICT_MIN_N = 5


class State(BaseModel):
    """One state of a product's state space, with what it looks like."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    examples: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Classified:
    """A turn's state, its confidence (softmax over states) and its raw similarity."""

    state: str
    confidence: float
    similarity: float


@dataclass(frozen=True)
class Recorded:
    """What record_transition did: ``recorded`` False says why (``reason``)."""

    recorded: bool
    reason: str = ""
    id: int | None = None


class Patterns:
    """Usage-pattern memory of one library (``library.patterns``)."""

    def __init__(self, store: "RecordStore", embedder: "Embedder") -> None:
        self._store = sql_store(store)
        #: the pattern rows of this library's tenant (skill_library.storage.patterns)
        self._rows = PatternRows(self._store)
        self._embedder = embedder
        self._vectors: dict[str, list[list[float]]] | None = None

    # -- the state space ------------------------------------------------------------------
    def define_states(self, space: Iterable[State | Mapping[str, Any] | str]) -> list[State]:
        """Replace the state space: each state a name, or a mapping/State with a
        description and a few example turns. Returns the states stored."""
        states = [s if isinstance(s, State) else State(name=s) if isinstance(s, str) else State(**s)
                  for s in space]
        names = [s.name for s in states]
        if len(set(names)) != len(names):
            twice = sorted(n for n in names if names.count(n) > 1)[0]
            raise PatternError(f"the state space names a state twice: {twice}")
        self._rows.replace_states([s.model_dump() for s in states])
        self._vectors = None
        return states

    def states(self) -> list[State]:
        """The defined state space (empty when none was defined)."""
        return [State(**row) for row in self._rows.states()]

    def _check_state(self, state: str, known: set[str]) -> None:
        if known and state not in known and state not in set(self._store.names(prefix=state)):
            raise PatternError(f"unknown state {state!r}: define it with define_states() (or name a skill)")

    def classify_state(
        self,
        text: str,
        *,
        recent_states: Sequence[str] = (),
        subject: str | None = None,
        llm: bool = False,
        client: "openai.OpenAI | None" = None,
        model: str | None = None,
    ) -> Classified | None:
        """The state of one turn, offline: cosine similarity of ``text`` to each state's
        description and examples (the best of them), plus :data:`CLASSIFY_PRIOR_WEIGHT` x
        P(state | the last of ``recent_states``) from the recorded transitions (the
        subject's when given, none for a subject who opted out, else everyone's who did not
        opt out). ``None`` when the best
        combined score is below :data:`CLASSIFY_MIN_CONFIDENCE` or no state is defined.
        ``llm=True`` asks the chat model instead (``client``, else the ``OPENAI_*``
        endpoint) with the states and the recent ones; its confidence is the model's."""
        states = self.states()
        if not states:
            return None
        known = {s.name for s in states}
        for state in recent_states:
            self._check_state(state, known)
        if llm:
            return self._classify_by_llm(text, states, recent_states, client, model)
        if self._vectors is None:
            texts = {s.name: [t for t in [s.description or s.name, *s.examples] if t.strip()] for s in states}
            flat = [t for ts in texts.values() for t in ts]
            embedded = iter(self._embedder.embed(flat))
            self._vectors = {name: [next(embedded) for _ in ts] for name, ts in texts.items()}
        query = self._embedder.embed([text])[0]
        prior: dict[str, float] = {}
        if recent_states and not (subject and self.opted_out(subject)):
            counts = self._counts(subject, recent_states[-1]) if subject else self._pooled(recent_states[-1])
            total = sum(counts.values())
            prior = {s: c / total for s, c in counts.items()} if total else {}
        scores = {}
        sims = {}
        for name, vectors in self._vectors.items():
            sims[name] = max(sum(a * b for a, b in zip(query, v)) for v in vectors)
            scores[name] = sims[name] + CLASSIFY_PRIOR_WEIGHT * prior.get(name, 0.0)
        best = max(scores, key=lambda n: (scores[n], n))
        if scores[best] < CLASSIFY_MIN_CONFIDENCE:
            return None
        top = max(scores.values())
        weights = {n: math.exp((s - top) / CLASSIFY_TEMPERATURE) for n, s in scores.items()}
        return Classified(state=best, confidence=weights[best] / sum(weights.values()), similarity=sims[best])

    def _classify_by_llm(
        self, text: str, states: list[State], recent_states: Sequence[str],
        client: "openai.OpenAI | None", model: str | None,
    ) -> Classified | None:
        import json
        import secrets

        import jinja2

        from skill_library.llm_endpoint import model_name, openai_client
        from skill_library.procedures.extract import complete

        environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                                         undefined=jinja2.StrictUndefined)
        nonce = secrets.token_hex(6)
        prompt = environment.get_template("classify.j2").render(
            states=states, recent_states=list(recent_states), text=text.replace(nonce, ""), nonce=nonce)
        client = client if client is not None else openai_client()
        content = complete(client, model_name(model), [{"role": "user", "content": prompt}])
        try:
            data = json.loads(content)
            state, confidence = data["state"], float(data["confidence"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise LLMError(f'the model\'s state is not JSON {{"state", "confidence"}}: {content[:200]!r}') from None
        if state not in {s.name for s in states}:
            raise LLMError(f"the model named the unknown state {state!r}")
        if confidence < CLASSIFY_MIN_CONFIDENCE:
            return None
        return Classified(state=state, confidence=min(1.0, max(0.0, confidence)), similarity=float("nan"))

    # -- recording ------------------------------------------------------------------------
    def opted_out(self, subject: str) -> bool:
        """True when ``subject`` asked that nothing about them be recorded or used (an
        opt-out kept through ``forget`` is stored as a salted hash: skill_library.erasure)."""
        return self._rows.opted_out(subject)

    def opted_out_subjects(self) -> frozenset[str]:
        """Every subject who opted out."""
        return self._rows.opted_out_subjects()

    def record_transition(
        self, subject: str, from_state: str, to_state: str, *, session: str, at: datetime | None = None
    ) -> Recorded:
        """Append one transition (one insert; nothing is recomputed). An opted-out subject
        records nothing: the result says so. Unknown states are errors when a state space
        is defined (skill names are states too)."""
        if not subject or not from_state or not to_state:
            raise PatternError("subject, from_state and to_state must be non-empty")
        if self.opted_out(subject):
            return Recorded(recorded=False, reason=f"{subject!r} opted out: nothing is recorded")
        known = {s.name for s in self.states()}
        self._check_state(from_state, known)
        self._check_state(to_state, known)
        key = self._rows.add_transition(subject, from_state, to_state, session=session, at=at)
        return Recorded(recorded=True, id=key)

    def record_invocation(self, subject: str, skill: str, *, session: str) -> Recorded:
        """A skill invocation as a transition: from the skill the subject invoked last in
        ``session`` to ``skill`` (the session's first invocation only opens it)."""
        if self.opted_out(subject):
            return Recorded(recorded=False, reason=f"{subject!r} opted out: nothing is recorded")
        last = self._rows.advance_session(subject, session, skill)
        if last is None:
            return Recorded(recorded=False, reason=f"the first invocation of session {session!r}")
        return self.record_transition(subject, last, skill, session=session)

    def _sequence(self, subject: str, from_state: str, since: int = 0) -> list[tuple[int, str]]:
        return self._rows.sequence(subject, from_state, since)

    def _counts(self, subject: str, from_state: str) -> Counter[str]:
        return Counter(s for _, s in self._sequence(subject, from_state))

    def _pooled(self, from_state: str) -> Counter[str]:
        return Counter(self._rows.pooled(from_state))

    # -- reading --------------------------------------------------------------------------
    def distribution(
        self, subject: str, from_state: str, *, last_n: int | None = None
    ) -> dict[str, tuple[float, int]]:
        """``{next state: (probability, count)}`` over all (or the last ``last_n``) recorded
        transitions from ``from_state``; empty for an opted-out subject."""
        if self.opted_out(subject):
            return {}
        sequence = [s for _, s in self._sequence(subject, from_state)]
        if last_n is not None:
            sequence = sequence[-last_n:] if last_n > 0 else []
        return _as_distribution(Counter(sequence))

    def _marks(self, subject: str, from_state: str) -> tuple[int, int | None]:
        return self._rows.marks(subject, from_state)

    def _set_marks(self, subject: str, from_state: str, stable: int, emerging: int | None) -> None:
        self._rows.set_marks(subject, from_state, stable, emerging)

    def stable(self, subject: str, from_state: str) -> dict[str, tuple[float, int]]:
        """The stable distribution: transitions since the last promotion, less an emerging one."""
        if self.opted_out(subject):
            return {}
        stable_since, emerging_since = self._marks(subject, from_state)
        return _as_distribution(Counter(
            s for i, s in self._sequence(subject, from_state, stable_since)
            if emerging_since is None or i < emerging_since
        ))

    def emerging(self, subject: str, from_state: str) -> dict[str, tuple[float, int]]:
        """The emerging distribution (since drift was detected), empty when there is none."""
        _, emerging_since = self._marks(subject, from_state)
        if emerging_since is None or self.opted_out(subject):
            return {}
        return _as_distribution(Counter(s for _, s in self._sequence(subject, from_state, emerging_since)))

    def predict(self, subject: str, state: str, *, min_n: int = PREDICT_MIN_N) -> str | None:
        """The most likely next state after ``state`` in the stable distribution, only when
        at least ``min_n`` transitions back it; else None (also for an opted-out subject)."""
        dist = self.stable(subject, state)
        total = sum(c for _, c in dist.values())
        if total < min_n or not dist:
            return None
        return min(dist, key=lambda s: (-dist[s][1], s))

    def detect_drift(
        self,
        subject: str,
        from_state: str,
        *,
        recent: int = drift_rule.DRIFT_RECENT,
        history: int = drift_rule.DRIFT_HISTORY,
        threshold: float = drift_rule.DRIFT_THRESHOLD,
        min_lead: int = drift_rule.DRIFT_MIN_LEAD,
    ) -> drift_rule.Drift:
        """Drift of the recent window from the stable history (skill_library.patterns.drift).

        On drift the transitions since the estimated change (``Drift.change_n`` of the recent
        window) start an ``emerging`` distribution (the stable one is kept). Once emerging
        holds :data:`PROMOTE_MIN_N` transitions and its top has replaced the history's before
        it (``drift.winner``: a lead of ``min_lead`` with more than ``threshold`` nats) both
        over the whole emerging span and over the last ``recent`` transitions (a burst that
        has passed is not a habit), it becomes the stable distribution. When its most likely
        state is the historical one again, it is dropped (the habit came back).
        """
        stable_since, emerging_since = self._marks(subject, from_state)
        if self.opted_out(subject):
            return drift_rule.Drift(detected=False, old_top=None, new_top=None, recent_n=0, divergence=0.0)
        rows = self._sequence(subject, from_state, stable_since)
        found = drift_rule.detect(
            [s for _, s in rows], recent=recent, history=history, threshold=threshold, min_lead=min_lead
        )
        if emerging_since is None:
            if found.detected and rows:
                # emerging starts where the new habit began (drift.change_start)
                self._set_marks(subject, from_state, stable_since, rows[len(rows) - max(1, found.change_n)][0])
            return found
        emerging_rows = Counter(s for i, s in rows if i >= emerging_since)
        older = Counter([s for i, s in rows if i < emerging_since][-history:])
        if drift_rule.top(emerging_rows) == drift_rule.top(older):
            self._set_marks(subject, from_state, stable_since, None)  # the habit came back
        elif (sum(emerging_rows.values()) >= PROMOTE_MIN_N
              and drift_rule.winner(emerging_rows, older, threshold=threshold, min_lead=min_lead)
              and drift_rule.winner(Counter(s for _, s in rows[-recent:]), older,
                                    threshold=threshold, min_lead=min_lead)):
            self._set_marks(subject, from_state, emerging_since, None)  # the new habit holds
        return found

    # -- transparency ---------------------------------------------------------------------
    def summary(self, subject: str) -> list[dict[str, Any]]:
        """Per from-state: transitions, the stable and emerging distributions."""
        starts = self._rows.from_states(subject)
        out = []
        for start in starts:
            dist = self.distribution(subject, start)
            out.append({
                "from_state": start,
                "transitions": sum(c for _, c in dist.values()),
                "distribution": {s: {"probability": round(p, 4), "count": c} for s, (p, c) in dist.items()},
                "stable": {s: round(p, 4) for s, (p, _) in self.stable(subject, start).items()},
                "emerging": {s: round(p, 4) for s, (p, _) in self.emerging(subject, start).items()},
                "predicts": self.predict(subject, start),
            })
        return out

    def forget(self, subject: str) -> int:
        """Delete every transition and mark of ``subject``; returns the transitions deleted."""
        return self._rows.forget(subject)

    def forget_matching(self, names: "Callable[[Any], bool]") -> int:
        """Delete every transition, mark and open session whose subject or session id
        ``names`` (skill_library.erasure's matcher), and keep an opt-out of such a subject
        only as a salted hash; returns the transitions deleted."""
        return self._rows.forget_matching(names)

    def opt_out(self, subject: str) -> None:
        """Stop recording and using anything about ``subject`` (what exists is kept until
        :meth:`forget`)."""
        self._rows.opt_out(subject)

    def opt_in(self, subject: str) -> None:
        """Undo :meth:`opt_out`."""
        self._rows.opt_in(subject)


def _as_distribution(counts: Counter[str]) -> dict[str, tuple[float, int]]:
    total = sum(counts.values())
    return {s: (c / total, c) for s, c in sorted(counts.items(), key=lambda x: (-x[1], x[0]))} if total else {}
