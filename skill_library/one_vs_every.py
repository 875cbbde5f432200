"""One item or every item: telling a skill that loops over a lookup's items from its
look-alike that takes the item as a parameter (issue 21, the one-vs-every look-alikes).

Two learned skills often read alike and read the same things: ``remove_from_group(email,
group)`` removes an employee from the group the task names, its look-alike
``remove_every_from_group(email)`` loops over every group the lookup returns. A read-based
precondition cannot tell them apart (both read the same record); what tells them apart is
what the *task* names: a specific item, or "every" item. fetch's ranking
(:mod:`skill_library.ranking`) reads two signals of the task for every such pair:

* **names the item**: the task holds a value of the shape the one-item skill's parameter
  took in its example traces (the masked example params, ``xxx-xxxxxxxx`` for a group name,
  ``XX-0000`` for an asset tag, collapsed to a *role shape* ``x-x`` / ``X-0``; only shapes
  with a digit or a symbol count: a plain word could be anything), or the task names one of
  the identifier values the parameter's tool declares (an ``enum``: ``vpn`` of ``system``,
  skill_library.intent), or the caller's ``args`` give that parameter;
* **says every**: the task holds a word of the library's *every* vocabulary: the words the
  descriptions use for a loop (:data:`skill_library.induction.describe.LOOP_WORDS`, with the
  word forms that start with one of at least four letters: ``everything``), and the words the
  library's own example tasks use for looping: a word that occurs in at least two example
  tasks of a loop skill and in none of its one-item look-alike's, for at least
  :data:`MIN_PAIRS_FOR_WORD` pairs (so a topic word of one pair, ``lists``, is not one; a
  library whose users write another language learns their words). An every word right
  before a word of another skill's parameter names (``every system``, where a skill outside
  the pair takes a ``system``) is about that skill's items, not the loop's; one right before
  ``else`` (:data:`EXCEPTING`: "everything else stays") excepts the rest, it asks no loop.

What ranking does with them (:func:`Scope.judge`):

=====================  ==========================================================
the task               effect
=====================  ==========================================================
says every, no item    the one-item skill's parameter is *missing* (bindability)
names the item only    the loop skill is penalized (:data:`EVERY_PENALTY`, in its
                       ``specificity`` term: it would do more than the task asks)
neither                the loop skill is penalized; the one-item skill's parameter
                       is missing when its values have a role shape the task lacks;
                       if the loop skill still ranks first, both are ``ambiguous``
both                   both are flagged ``ambiguous`` and returned together
=====================  ==========================================================

so the loop skill, the destructive one of the pair, is never returned alone and unflagged
for a task that did not ask for every item. Pairs are found from the skills' code (an AST
read, no run): the loop skill has a ``for`` over a lookup's result (not over a parameter)
whose body calls a tool with an argument taken from the loop item; the look-alike calls the
same tool with that argument taken from one of its own parameters, the loop skill uses
every tool the one-item skill does (it may do more: revoke every system, then disable the
account, is the loop side of revoking one system), and the loop skill takes no parameter
the one-item skill lacks (a loop over a *colleague's* access, given the colleague's
email, is another workflow than granting one system). Function words
(:data:`FUNCTION_WORDS`: "of", "them") are never learned.
Computed once per index generation of a library (cached), from its active skills and
their stored example tasks (masked: no value of a trace is read, only its shape).
"""

from __future__ import annotations

import ast
import re
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skill_library.induction.describe import LOOP_WORDS, words_of
from skill_library.models import Skill
from skill_library.privacy import shape_dummy

if TYPE_CHECKING:
    from skill_library.protocols import Tenant

#: score penalty of a loop skill for a task that does not say every (added to its
#: ``specificity`` term; larger than the similarity gaps seen between such look-alikes)
EVERY_PENALTY = 0.1
#: a word of the example tasks joins the every vocabulary when it tells at least this many
#: loop skills from their one-item look-alikes
MIN_PAIRS_FOR_WORD = 2
#: ... and occurs in at least this many example tasks of each such loop skill
MIN_EXAMPLES_FOR_WORD = 2
#: a loop word at least this long also matches the words that start with it (``everything``)
MIN_PREFIX_LETTERS = 4
#: English function words (pronouns, prepositions, articles, auxiliaries) never join the
#: learned every vocabulary: they say nothing of one item or every item, and a handful of
#: example tasks can hold one on the loop side by chance ("of", "them")
FUNCTION_WORDS = frozenset("""a an the of to in on at by for from with about into onto off out up down over
under and or but nor so if then than as that this these those it its they them their theirs he him his she
her hers we us our you your yours i me my mine who whom whose which what there here is are was were be been
being am do does did has have had will would can could shall should may might must not no please""".split())

#: a word right after an every word that excepts the rest instead of naming it: "everything
#: else stays", "everyone else" (not a request to loop over every item)
EXCEPTING = frozenset({"else"})

_WORD_RE = re.compile(r"[^\W\d_]+")
_PLACEHOLDER_RE = re.compile(r"\{[^{}]*\}|\([^()]*\)")
_EDGE = ".,;:!?()[]{}'\"<>"
_RUN_RE = re.compile(r"X+x+|x+|X+|0+")


def role_shape(value: str) -> str:
    """A value's shape with runs collapsed: letters by case (``x``, ``X``, ``Xx`` for a
    capitalized word), digits ``0``, other characters kept: ``eng-platform`` -> ``x-x``,
    ``LT-1234`` -> ``X-0``. Applied to a masked value (``xxx-xxxxxxxx``) it gives the same."""
    masked = shape_dummy(value)
    return _RUN_RE.sub(lambda m: "Xx" if ("X" in m.group(0) and "x" in m.group(0)) else m.group(0)[0], masked)


def is_structured(shape: str) -> bool:
    """Whether a role shape says something: one token with a digit or a symbol (not a
    plain or capitalized word, which any word of a task could be)."""
    return bool(shape) and not any(c.isspace() for c in shape) and bool(re.search(r"[^xX]", shape))


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` (letters only)."""
    return [w.lower() for w in _WORD_RE.findall(text)]


@dataclass(frozen=True)
class Pair:
    """A loop skill and its one-item look-alike."""

    every: str  # the skill looping over a lookup's items
    one: str  # the skill taking the item as ``parameter``
    parameter: str
    shapes: frozenset[str] = frozenset()  # structured role shapes of the parameter's example values
    own: frozenset[str] = frozenset()  # the words of both skills' parameter names


@dataclass(frozen=True)
class Judgement:
    """What the task says of one pair (:meth:`Scope.judge`)."""

    pair: Pair
    says_every: bool
    names_item: bool | None  # None: the parameter's values have no structured shape

    @property
    def kind(self) -> str:
        """``every``, ``one``, ``both`` or ``neither``."""
        item = bool(self.names_item)
        if self.says_every:
            return "both" if item else "every"
        return "one" if item else "neither"


@dataclass(frozen=True)
class Scope:
    """A library's one-vs-every pairs and its every vocabulary."""

    pairs: tuple[Pair, ...] = ()
    learned: frozenset[str] = frozenset()
    base: tuple[str, ...] = LOOP_WORDS
    #: the words of every active skill's parameter names (what the library's skills act on)
    items: frozenset[str] = frozenset()
    generation: int | None = None
    _by_skill: dict[str, list[Pair]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for pair in self.pairs:
            self._by_skill.setdefault(pair.every, []).append(pair)
            self._by_skill.setdefault(pair.one, []).append(pair)

    def of(self, names: Iterable[str]) -> list[Pair]:
        """The pairs with a side among ``names``."""
        seen: dict[tuple[str, str, str], Pair] = {}
        for name in names:
            for pair in self._by_skill.get(name, ()):
                seen[(pair.every, pair.one, pair.parameter)] = pair
        return list(seen.values())

    def is_every(self, word: str) -> bool:
        """Whether ``word`` (lower case) is in the every vocabulary (module doc)."""
        if word in self.learned or word in self.base:
            return True
        return any(len(b) >= MIN_PREFIX_LETTERS and word.startswith(b) for b in self.base)

    def says_every(self, text: str, pair: Pair | None = None) -> bool:
        """Whether ``text`` holds a word of the every vocabulary (module doc); with ``pair``,
        not one right before a word naming what *another* skill acts on (``every system``,
        where ``system`` is a parameter of a skill outside the pair, is not about its items)."""
        found = words(text)
        other = self.items - pair.own if pair is not None else frozenset()
        for i, word in enumerate(found):
            if not self.is_every(word):
                continue
            after = found[i + 1] if i + 1 < len(found) else ""
            if after in EXCEPTING:  # "everything else stays": the rest is kept, not looped over
                continue
            if other and (after in other or after.removesuffix("s") in other):
                continue
            return True
        return False

    def judge(self, pair: Pair, text: str, args: Mapping[str, Any] | None = None,
              named: Iterable[str] = ()) -> Judgement:
        """What ``text`` (and ``args``, the caller's values by parameter name) says of ``pair``;
        ``named``: the one-item skill's parameters whose declared identifier values the task
        names (skill_library.ranking.named_choices: ``vpn`` of ``system``), which name the item."""
        every = self.says_every(text, pair)
        if (args is not None and pair.parameter in args) or pair.parameter in set(named):
            return Judgement(pair, every, True)
        if not pair.shapes:
            return Judgement(pair, every, None)
        tokens = {t.strip(_EDGE) for t in text.split()} - {""}
        return Judgement(pair, every, any(role_shape(t) in pair.shapes for t in tokens))


def adjustments(scope: Scope | None, names: Sequence[str], text: str, args: Mapping[str, Any] | None,
                named: Mapping[str, Sequence[str]] | None = None
                ) -> tuple[dict[str, float], dict[str, list[str]], list[Judgement]]:
    """For the candidates ``names`` of one fetch: ``(penalty by skill, extra missing
    parameters by skill, the judgements)`` (module doc's table); ``named``: skill -> the
    parameters whose declared identifier values the task names (:meth:`Scope.judge`)."""
    penalty: dict[str, float] = {}
    missing: dict[str, list[str]] = {}
    judged: list[Judgement] = []
    if scope is None or not scope.pairs:
        return penalty, missing, judged
    present = set(names)
    for pair in scope.of(present):
        j = scope.judge(pair, text, args, (named or {}).get(pair.one, ()))
        judged.append(j)
        if not j.says_every and pair.every in present:
            penalty[pair.every] = max(penalty.get(pair.every, 0.0), EVERY_PENALTY)
        if pair.one in present and not j.names_item and (j.says_every or j.names_item is False):
            missing.setdefault(pair.one, []).append(pair.parameter)
    return penalty, missing, judged


def ambiguous_names(ranked_names: Sequence[str], judged: Sequence[Judgement]) -> set[str]:
    """The skills to flag ``ambiguous`` among ``ranked_names`` (best first): both sides of a
    pair the task names the item of and says every of, and both sides of a pair whose loop
    skill still ranks first though the task does not say every."""
    if not ranked_names:
        return set()
    top = ranked_names[0]
    flagged: set[str] = set()
    for j in judged:
        sides = {j.pair.every, j.pair.one} & set(ranked_names)
        if top not in sides:
            continue
        if j.kind == "both" or (top == j.pair.every and not j.says_every):
            flagged |= sides
    return flagged


# -- finding the pairs ---------------------------------------------------------------------------


def _function(skill: Skill) -> ast.FunctionDef | None:
    if skill.kind != "code" or not skill.code:
        return None
    try:
        tree = ast.parse(skill.code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == skill.name:
            return node
    return None


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _tool_calls(node: ast.AST, tools: set[str]) -> Iterable[ast.Call]:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in tools:
            yield n


def loops(skill: Skill) -> set[tuple[str, str]]:
    """``(tool, argument)`` of each call in ``skill``'s code that takes ``argument`` from the
    item of a loop over a lookup's result (not over a parameter of the skill)."""
    fn = _function(skill)
    if fn is None:
        return set()
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    tools = set(skill.tools)
    found: set[tuple[str, str]] = set()
    for node in ast.walk(fn):
        if not isinstance(node, ast.For) or not isinstance(node.target, ast.Name):
            continue
        source = _names_in(node.iter)
        if source & params and not (source - params):
            continue  # a loop over a parameter's items: the caller names them
        item = node.target.id
        for statement in node.body:
            for call in _tool_calls(statement, tools):
                for kw in call.keywords:
                    if kw.arg and item in _names_in(kw.value):
                        found.add((call.func.id, kw.arg))  # type: ignore[attr-defined]
    return found


def takes(skill: Skill) -> dict[tuple[str, str], str]:
    """``(tool, argument) -> parameter`` of each call outside a loop that passes one of the
    skill's own parameters as that argument."""
    fn = _function(skill)
    if fn is None:
        return {}
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    in_loops = {id(c) for n in ast.walk(fn) if isinstance(n, ast.For) for c in ast.walk(n)}
    out: dict[tuple[str, str], str] = {}
    for call in _tool_calls(fn, set(skill.tools)):
        if id(call) in in_loops:
            continue
        for kw in call.keywords:
            if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in params:
                out[(call.func.id, kw.arg)] = kw.value.id  # type: ignore[attr-defined]
    return out


def find_pairs(skills: Sequence[Skill]) -> list[tuple[Skill, Skill, str]]:
    """``(loop skill, one-item skill, parameter)`` for every pair among ``skills`` (module doc)."""
    looping = [(s, loops(s)) for s in skills]
    taking = [(s, takes(s)) for s in skills]
    out = []
    for every, found in looping:
        if not found:
            continue
        for one, passed in taking:
            if one.name == every.name or not set(one.tools) <= set(every.tools):
                continue  # the loop skill uses the one-item skill's tools (it may do more)
            if not set(_parameter_names(every)) <= set(_parameter_names(one)):
                continue  # the loop needs an input the one-item skill lacks: another workflow
            for key in sorted(found):
                if key in passed:
                    out.append((every, one, passed[key]))
                    break
    return out


def _example_words(texts: Sequence[str]) -> Counter[str]:
    """In how many of ``texts`` each word occurs (placeholders and masked names left out)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(words(_PLACEHOLDER_RE.sub(" ", text))))
    return counts


def build(skills: Sequence[Skill], examples: Mapping[str, Sequence[Any]],
          generation: int | None = None, found: Sequence[tuple[Skill, Skill, str]] | None = None) -> Scope:
    """The scope of ``skills`` (active code skills) with their ``examples`` (name -> stored
    :class:`~skill_library.models.Example` list); ``found``: their :func:`find_pairs`."""
    pairs = []
    votes: Counter[str] = Counter()
    voted: set[tuple[str, str]] = set()
    for every, one, parameter in (find_pairs(skills) if found is None else found):
        shapes = set()
        for example in examples.get(one.name, ()):
            value = (getattr(example, "params", None) or {}).get(parameter)
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and is_structured(s := role_shape(v)):
                    shapes.add(s)
        own = frozenset(w for s in (every, one) for p in _parameter_names(s) for w in words_of(p))
        pairs.append(Pair(every=every.name, one=one.name, parameter=parameter, shapes=frozenset(shapes), own=own))
        loop_words = _example_words([e.text for e in examples.get(every.name, ())])
        one_words = _example_words([e.text for e in examples.get(one.name, ())])
        for word, n in loop_words.items():
            if (n >= MIN_EXAMPLES_FOR_WORD and word not in one_words and word not in FUNCTION_WORDS
                    and (every.name, word) not in voted):
                voted.add((every.name, word))
                votes[word] += 1
    learned = frozenset(w for w, n in votes.items() if n >= MIN_PAIRS_FOR_WORD)
    items = frozenset(w for s in skills for p in _parameter_names(s) for w in words_of(p)) if pairs else frozenset()
    return Scope(pairs=tuple(pairs), learned=learned, items=items, generation=generation)


def _parameter_names(skill: Skill) -> list[str]:
    return [str(p) for p in (skill.parameters or {}).get("properties", {})]


_CACHE: "weakref.WeakKeyDictionary[Any, Scope]" = weakref.WeakKeyDictionary()


def scope(library: "Tenant", generation: int | None = None) -> Scope:
    """``library``'s scope, rebuilt when its index generation changed (a skill learned,
    revised, retired or quarantined; ``generation``: the one the caller just read, else
    read here)."""
    if generation is None:
        generation = library.context.store.index_generation()
    cached = _CACHE.get(library)
    if cached is not None and cached.generation == generation:
        return cached
    skills = [s for s in library.context.store.list(status="active") if s.kind == "code" and s.code]
    pairs = find_pairs(skills)
    names = sorted({n for every, one, _ in pairs for n in (every.name, one.name)})
    built = build(skills, library.context.store.examples(names) if names else {}, generation, pairs)
    _CACHE[library] = built
    return built
