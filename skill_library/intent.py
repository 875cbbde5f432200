"""What a task asks for, read from its words, against what a skill would do (issue 21 item 4).

Similarity cannot tell "lock my laptop" from "unlock my laptop", "is my account locked?"
from "my account is locked, please unlock it", or "the contract was extended; nothing needs
to change" from a request to change the account: they share almost every word. Two general
rules of English requests do, and fetch uses them (:mod:`skill_library.ranking` demotes a
skill they rule out, :mod:`skill_library.abstention` abstains when the top match is still
one):

**1. What kind of message is it** (:func:`message_kind`). Each sentence (split after ``. ! ? ;`` and
new lines; a question's last clause, after a comma, colon or dash, is what it asks) is one of

* an *action request*: it holds a request marker (``please``, ``kindly``, a modal question
  ``can/could/would/will you ...``, ``can I/my ...``, ``I need/want/'d like ...``, ``needs
  to``, ``wants to``, ``wish to``, ``is it possible to``, ``is there a way to``) whose verb is
  not an information verb;
* an *information request*: a question that starts with a question word or an auxiliary
  (``what which who whose when where why how is are was were do does did has have had``, and
  ``should/shall I``), or a request whose verb asks to be told (``tell``, ``let ... know``,
  ``confirm``, ``explain``, ``show``, ``list``, ``advise``, ``clarify``, ``find out``, ``look
  up``);
* a *no-change statement* (:data:`NO_CHANGE_PATTERNS`): "nothing needs to change", "no
  action needed", "don't change anything", "no need to do anything", "just FYI";
* else a plain statement ("I'm locked out of my account", which implies its request; "please
  call me back if ...", which says how to reach the sender, is one too).

A message with an action request asks for an action; else one with a no-change statement
asks for nothing to change (``no_change``); else one with an information request asks for
information (``information``); else it is a statement (``statement``, no rule applies). A
state-changing skill (one with an acting tool: not declared read-only) never fits a
``no_change`` or ``information`` message.

**2. Does it ask for the opposite** (:meth:`Reading.conflict`). A skill's *acting verbs* are
the first words of its state-changing tools' names (``lock_device`` -> ``lock``) and of their
declared descriptions. Two verbs are *opposites* when the library's own tool vocabulary has
both as tool verbs and one is the other with a reversing prefix (``un``, ``dis``, ``de``;
``en``/``em`` against ``dis``/``de``: ``lock``/``unlock``, ``enable``/``disable``,
``activate``/``deactivate``, ``encrypt``/``decrypt``; a stem of at least four letters, five
for a plain verb against ``dis``/``de``, as short ones rarely are opposites: play/display),
or when a small general list of
English opposites (:data:`GENERAL_OPPOSITES`: add/remove, grant/revoke, open/close, ...)
pairs them. The task *asks for* a verb when the verb occurs as a word in its base or
``-ing`` form, not right after a determiner or possessive (``lift the lock`` names a thing;
``locked``, ``disabled`` describe a state, not a request) and not negated (``don't``, ``do
not``, ``never``, ``no need to``, ``without`` within two words before it). A skill
*conflicts* with the task when, for one of its acting verbs, the task asks for an opposite of
it and for no verb on the skill's side of that pair ("found my laptop, can you unlock it?"
against ``lock_device``), or negates the verb itself and does not ask for it elsewhere
("disable the account but don't revoke anything" against a skill that revokes), or says to
keep as it is (``keep|leave <thing> [exactly] as it is|as is|in place|unchanged|intact|
alone|untouched``; not a partial keep: "leave the rest of it alone") a thing one of the
skill's state-changing tools names (``revoke_access`` changes the ``access``).

**What fetch does with it.** Ranking subtracts :data:`CONFLICT_PENALTY` from every
candidate the task rules out, so a skill that fits comes first when there is one.
Abstention abstains when the first match is ruled out, and also when it is first only
because the candidate the task reads most like (the best score before this penalty) was
ruled out, or when a ruled-out candidate scored within the calibrated margin of it before
the penalty (the look-alikes were too close to call, and ruling one out does not make the
other right), unless the new first match changes nothing (a read-only skill answering a
question): the task most likely asks for a workflow the library does not have (the reverse
of one it has), and the next look-alike is no safer to run than the one that was ruled out.

Limits: lexical English rules. A request in words outside the lists ("hand it back", "switch
it off") is not read; a question that means a request without a modal ("is there any chance
you could ...": the modal inside is read) may be taken for one; sarcasm, quoting and other
languages are not read. Both rules only ever take a skill away from a task (a demotion, an
abstention), never give one.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_library.models import Skill
    from skill_library.protocols import Vocabularied

#: score penalty of a candidate the task rules out (ranking's ``intent`` term): larger than
#: the similarity gaps between look-alikes, so a skill that fits comes first when one exists
CONFLICT_PENALTY = 0.2

#: general English opposites, each side a set of verbs that mean the same here (a
#: linguistic list, not one domain's: a library's own tool names add their prefixed pairs)
GENERAL_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split())) for a, b in (
        ("lock block freeze", "unlock unblock unfreeze"),
        ("enable activate reactivate reenable", "disable deactivate"),
        ("add grant give assign include attach", "remove revoke withdraw unassign exclude detach"),
        ("open", "close"),
        ("start", "stop"),
        ("create", "delete"),
        ("subscribe", "unsubscribe"),
        ("connect", "disconnect"),
        ("install", "uninstall"),
        ("mount", "unmount"),
        ("approve", "reject deny decline"),
        ("increase raise", "decrease lower reduce"),
        ("archive", "unarchive"),
        ("publish", "unpublish"),
        ("hide", "unhide"),
        ("mute", "unmute"),
        ("follow", "unfollow"),
        ("pause suspend", "resume"),
        ("encrypt", "decrypt"),
        ("register", "unregister deregister"),
        ("import", "export"),
        ("upgrade", "downgrade"),
    ))
#: reversing prefixes (``lock``/``unlock``) and the prefixes they replace (``enable``/``disable``)
REVERSING_PREFIXES = ("un", "dis", "de")
PLAIN_PREFIXES = ("", "en", "em")
#: a derived opposite's stem has at least this many letters: ``un`` pairs (``lock``) and
#: ``en``/``em`` against ``dis``/``de`` (``able`` of enable/disable) ...
MIN_STEM = 4
#: ... and a plain verb against ``dis``/``de`` (``connect``/``disconnect``, ``activate``/
#: ``deactivate``): a longer stem, since most short ones are not opposites (play/display, sign/design)
MIN_STEM_DIS_DE = 5

#: sentences that say no change is wanted (lower-cased text)
NO_CHANGE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\bnothing (?:\w+ ){0,2}(?:needs?|has|have|should|must|is) (?:to )?(?:be )?(?:change|changed|done|do)\b",
    r"\bno (?:further )?(?:action|change|changes|update|updates)\b(?: \w+){0,2} "
    r"(?:needed|required|necessary|wanted|please)\b",
    r"\bno (?:action|change|changes) (?:is |are )?(?:needed|required|necessary)\b",
    r"\b(?:don't|dont|do not|please don't|please do not) (?:\w+ )?(?:change|touch|modify|do) anything\b",
    r"\bno need to (?:do|change) anything\b",
    r"\b(?:leave|keep) (?:everything|it all|things) (?:as it is|as is|unchanged|the same)\b",
    r"^(?:just )?(?:an? )?fyi\b|\bjust (?:an? )?fyi\b|\bfor your information\b",
))

_WH = frozenset("what which who whom whose when where why how".split())
_AUX = frozenset("is are am was were do does did has have had isn't aren't doesn't don't didn't hasn't "
                 "haven't".split())
_ADVICE_MODAL = frozenset("should shall".split())
_SUBJECTS = frozenset("i we".split())
#: verbs that ask to be told something, not to change it
INFO_VERBS = frozenset("tell confirm explain show list advise clarify know inform remind".split())
#: verbs that say how to reach the sender ("please call me back"), with ``me``/``us``/``back``
CONTACT_VERBS = frozenset("call phone ring contact email mail text message ping reach reply respond write "
                          "get".split())
_CONTACT_OBJECTS = frozenset("me us back".split())
_INFO_PHRASES = (re.compile(r"\blet (?:me|us|\w+) know\b"), re.compile(r"\bfind out\b"),
                 re.compile(r"\blook (?:it |this |that )?up\b"))
_DETERMINERS = frozenset("the a an my your his her its our their this that these those any some no each "
                         "every".split())
_NEGATIONS = (("don't",), ("dont",), ("do", "not"), ("never",), ("no", "need", "to"), ("without",),
              ("please", "don't"), ("not", "to"))
#: "keep all of their access exactly as it is", "leave my files in place": what must not change
_KEEP_RE = re.compile(r"\b(?:keep|leave)\s+((?:[\w'-]+\s+){0,6}?)(?:exactly\s+|just\s+)?"
                      r"(?:as it is|as is|as they are|in place|unchanged|intact|alone|untouched|the same)\b")
#: "leave the rest of their access alone": a partial keep, which implies a change of the rest
_PARTIAL_KEEP = frozenset("rest else other others remaining".split())
_POSSIBLE_RE = re.compile(r"\bis it possible\b|\bis there (?:a|any) way\b|\bwould it be possible\b")
_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE_RE = re.compile(r"[,:\u2013\u2014]|\s-\s")
_REQUEST_RE = re.compile(
    r"\b(?:please|pls|plz|kindly)\b"
    r"|\b(?:can|could)\s+(?:you|u|someone|somebody|anyone|i|we|my|our|it|this|that|the|their|his|her)\b"
    r"|\b(?:would|will|may)\s+(?:you|u|someone|somebody|anyone|i|we)\b"
    r"|\b(?:i|we)(?:'d| would) like\b|\b(?:i|we) (?:need|want|require)\b(?! (?:it|this|that|them)\b)"
    r"|\b(?:needs?|wants?|wish(?:es)?) to\b|\bneeds? \w+ing\b"
    r"|\bis it possible\b|\bis there (?:a|any) way\b|\bwould it be possible\b|\bhelp me\b|\bhelp\b[.!]?$")


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower().replace("\u2019", "'"))


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_RE.split(sentence) if c.strip()]


_CONJUNCTIONS = frozenset("and but or so also then plus".split())


def _without_conjunction(clause: str) -> str:
    first, _, rest = clause.partition(" ")
    return rest if first in _CONJUNCTIONS and rest else clause


def sentence_kind(sentence: str) -> str:
    """``action``, ``information``, ``no_change`` or ``statement`` (module doc, rule 1)."""
    text = " ".join(sentence.lower().replace("\u2019", "'").split())
    if not text:
        return "statement"
    if any(p.search(text) for p in NO_CHANGE_PATTERNS):
        return "no_change"
    question = text.rstrip().endswith("?")
    clauses = [_without_conjunction(c) for c in _clauses(text.rstrip("?!.; "))]
    clause = clauses[-1] if question and clauses else text
    words = _words(clause)
    first = words[0] if words else ""
    if any(p.search(clause) for p in _INFO_PHRASES):
        return "information"
    if question:
        if first in _WH or (first in _ADVICE_MODAL and len(words) > 1 and words[1] in _SUBJECTS):
            return "information"  # "what do I need to do?", "should I ...?"
        if first in _AUX and not _POSSIBLE_RE.search(clause):
            return "information"  # "is my account locked?", but not "is it possible to ...?"
    marker = _REQUEST_RE.search(clause)
    if marker:
        rest = [w for w in _words(clause[marker.end():]) if w not in _SKIPPED]
        verb = rest[0] if rest else ""
        if verb in CONTACT_VERBS and len(rest) > 1 and rest[1] in _CONTACT_OBJECTS:
            return "statement"  # "please call me back if ...": how to reach the sender, not a request
        return "information" if verb in INFO_VERBS else "action"
    return "statement"


#: words between a request marker and its verb (``please just tell``, ``can you also check``)
_SKIPPED = frozenset("just also quickly kindly please you u someone somebody i we me us to be so simply "
                     "maybe possibly help".split())


def sentences(text: str) -> list[str]:
    """``text`` split into sentences (at ``. ! ? ;`` and new lines), end marks kept."""
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip()]


#: the words of a sentence that only says who the requester is or how to reach them (names
#: are masked as ``someone`` first, values by their role: ``(an email address)``)
IDENTITY_WORDS = frozenset("""someone name first last full surname email mail address zip postal postcode
code number phone mobile contact tel telephone work user account username id""".split())
#: "You are patient, shy, direct." / "I'm calm and polite.": a list of what someone is like
_TRAITS_RE = re.compile(r"^(?:[Yy]ou are|[Yy]ou're|I am|I'm)\s+(?:very\s+|quite\s+)?[a-z]+"
                        r"(?:\s*(?:,|\band\b|, and\b)\s*[a-z]+)+\s*[.!]?$")


def about_requester(sentence: str) -> bool:
    """Whether ``sentence`` only says who the requester is ("Your name is <name> and your zip
    code is <zip>.", "My work email is <email>.") or what they are like ("You are patient,
    shy, direct."): a statement of the person, not of the request."""
    return _requester_kind(sentence) is not None


def _requester_kind(sentence: str) -> str | None:
    """``traits``, ``identity`` or None (:func:`about_requester`)."""
    text = sentence.strip()
    if _TRAITS_RE.match(text):
        return "traits"
    if sentence_kind(text) != "statement":
        return None
    found = _masked_words(text)
    return "identity" if found and found <= IDENTITY_WORDS and found - {"someone"} else None


def _masked_words(sentence: str) -> set[str]:
    """The content words of ``sentence`` with its names as ``someone`` and its values by
    their role (``(an email address)``: ``email``, ``address``)."""
    from skill_library import mentions, privacy

    return mentions.words(privacy.mask_names(privacy.scrub_shapes(sentence)))


#: words of a parameter that takes who a person is (``email``, ``first_name``, ``user_id``)
PERSON_WORDS = frozenset("name email mail phone mobile user username login employee customer".split())


def looks_people_up(skills: Iterable["Skill"], read_only: Iterable[str]) -> bool:
    """Whether some of ``skills`` find a person by who they are: a read-only tool they call
    names an identity word (``find_user_id_by_email``), or a parameter does (``email``,
    ``first_name``: a lookup the library was not told is read-only)."""
    from skill_library.mentions import words

    read = set(read_only)
    for skill in skills:
        if any(t in read and words(t.replace("_", " ")) & IDENTITY_WORDS for t in skill.tools):
            return True
        params = (skill.parameters or {}).get("properties", {})
        if any(words(p.replace("_", " ")) & PERSON_WORDS for p in params):
            return True
    return False


def without_requester(text: str, keep_identity: bool = False) -> str:
    """``text`` less its sentences :func:`about_requester` (``text`` when that leaves
    nothing): what fetch embeds. With ``keep_identity`` (the library's skills look people
    up: :func:`looks_people_up`) the sentences saying who the requester is stay, whatever
    they give ("Hiro Fischer, 29628."): a skill reads them, and its examples keep them with
    the values bound; a description of what the requester is like never stays.

    A long brief's persona and traits ("Your name is <name> and your zip code is <zip>. You
    are patient, shy, direct.") outweigh its one request, and stored examples of a library
    whose skills look nobody up never keep them (the masking pass drops what binds no
    parameter and names nothing the skill does)."""
    dropped = {"traits"} if keep_identity else {"traits", "identity"}
    kept = [s for s in sentences(text) if _requester_kind(s) not in dropped]
    return " ".join(kept) if kept else text


def message_kind(text: str) -> str:
    """What the whole message asks for: ``action``, ``no_change``, ``information`` or
    ``statement`` (module doc, rule 1)."""
    kinds = {sentence_kind(s) for s in sentences(text)}
    for kind in ("action", "no_change", "information"):
        if kind in kinds:
            return kind
    return "statement"


def _negated(words: list[str], i: int) -> bool:
    before = words[max(0, i - 4):i]
    for neg in _NEGATIONS:
        n = len(neg)
        for start in range(len(before) - n + 1):
            if tuple(before[start:start + n]) == neg and len(before) - (start + n) <= 2:
                return True
    return False


@dataclass(frozen=True)
class Verbs:
    """The verbs a task asks for and the verbs it negates (module doc, rule 2), and the
    things it says to keep as they are."""

    asked: frozenset[str]
    negated: frozenset[str]
    kept: frozenset[str] = frozenset()


def kept_things(text: str) -> frozenset[str]:
    """The words of what ``text`` says to keep or leave as it is ("keep all of their access
    exactly as it is" -> ``access``), singular; none for a partial keep ("leave the rest of
    it alone": the rest, so something else changes)."""
    out: set[str] = set()
    for found in _KEEP_RE.finditer(text.lower().replace("\u2019", "'")):
        words = _words(found.group(1))
        if not words or _PARTIAL_KEEP & set(words):
            continue
        out.update(_singular(w) for w in words if w not in _DETERMINERS and w not in _FILLER)
    return frozenset(out)


_FILLER = frozenset("all of them it everything things".split())


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def verbs(text: str, vocabulary: Iterable[str]) -> Verbs:
    """Which of ``vocabulary``'s verbs ``text`` asks for (base or ``-ing`` form, not after a
    determiner, not negated) and which it negates."""
    words = _words(text)
    known = frozenset(vocabulary)
    asked: set[str] = set()
    negated: set[str] = set()
    for i, word in enumerate(words):
        verb = word if word in known else _base_of_ing(word, known)
        if verb is None:
            continue
        if i > 0 and words[i - 1] in _DETERMINERS:
            continue  # "lift the lock": a thing, not a request
        (negated if _negated(words, i) else asked).add(verb)
    return Verbs(frozenset(asked), frozenset(negated), kept_things(text))


def _base_of_ing(word: str, known: frozenset[str]) -> str | None:
    if not word.endswith("ing") or len(word) < 6:
        return None
    stem = word[:-3]
    for candidate in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else ""):
        if candidate and candidate in known:
            return candidate
    return None


# -- the library's verbs and their opposites ---------------------------------------------------


def tool_words(name: str) -> list[str]:
    """A tool name's words (``remove_from_group`` -> ``remove from group``, camelCase too)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def tool_verb(name: str) -> str:
    """The first word of a tool's name (``lock_device`` -> ``lock``, ``unlockAccount`` -> ``unlock``)."""
    parts = tool_words(name)
    return parts[0] if parts else ""


def derived_opposites(verbs_seen: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of ``verbs_seen`` that are one another with a reversing prefix (module doc)."""
    seen = sorted(set(verbs_seen))
    out = []
    for a in seen:
        for b in seen:
            if a >= b:
                continue
            for x, y in ((a, b), (b, a)):
                for rev in REVERSING_PREFIXES:
                    if not y.startswith(rev):
                        continue
                    stem = y[len(rev):]
                    for plain in PLAIN_PREFIXES:
                        least = MIN_STEM_DIS_DE if (rev != "un" and plain == "") else MIN_STEM
                        if len(stem) >= least and x == plain + stem:
                            out.append((x, y))
    return sorted(set(out))


@dataclass(frozen=True)
class Vocabulary:
    """A library's verb pairs: ``opposites`` (verb -> its opposites) and ``sides`` (verb ->
    the verbs on its side of a pair, itself included)."""

    opposites: Mapping[str, frozenset[str]] = field(default_factory=dict)
    sides: Mapping[str, frozenset[str]] = field(default_factory=dict)
    generation: int | None = None

    @property
    def words(self) -> frozenset[str]:
        """Every verb of the pairs."""
        return frozenset(self.opposites) | frozenset(w for s in self.sides.values() for w in s)

    @classmethod
    def of(cls, tool_verbs: Iterable[str], generation: int | None = None) -> "Vocabulary":
        """The general opposites plus the pairs derived from ``tool_verbs``."""
        opposites: dict[str, set[str]] = {}
        sides: dict[str, set[str]] = {}
        pairs = list(GENERAL_OPPOSITES) + [(frozenset([a]), frozenset([b]))
                                            for a, b in derived_opposites(tool_verbs)]
        for a, b in pairs:
            for one, other in ((a, b), (b, a)):
                for verb in one:
                    opposites.setdefault(verb, set()).update(other)
                    sides.setdefault(verb, set()).update(one)
        return cls(opposites={k: frozenset(v) for k, v in opposites.items()},
                   sides={k: frozenset(v) for k, v in sides.items()}, generation=generation)


@dataclass
class Reading:
    """One task read once per fetch: its kind and verbs, judged against candidate skills."""

    text: str
    vocabulary: Vocabulary
    read_only: frozenset[str]
    descriptions: Mapping[str, str] = field(default_factory=dict)
    #: skill -> parameter -> the identifier values its tool allows (:func:`skill_choices`)
    choices: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    kind: str = field(init=False)
    verbs: Verbs = field(init=False)
    #: set by ranking: the candidate that would have come first but for its conflict, and why
    displaced: tuple[str, str] | None = field(default=None, init=False)
    #: set by ranking: each candidate it ruled out -> (its score without the penalty, why)
    ruled_out: dict[str, tuple[float, str]] = field(default_factory=dict, init=False)
    #: set by ranking: candidate -> why a state the task names rules its precondition out
    #: (:func:`named_states` over every candidate; None: not ranked yet)
    excluded_states: dict[str, str] | None = field(default=None, init=False)
    _memo: dict[str, str | None] = field(default_factory=dict, init=False, repr=False)
    _acting: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _named: dict[str, dict[str, set[str]]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.kind = message_kind(self.text)
        self.verbs = verbs(self.text, self.vocabulary.words)

    def acting_verbs(self, skill: "Skill") -> set[str]:
        """The verbs of ``skill``'s state-changing tools: their names' and descriptions' first words."""
        out = set()
        for tool in skill.tools:
            if tool in self.read_only:
                continue
            out.add(tool_verb(tool))
            described = _words(self.descriptions.get(tool, ""))
            if described:
                out.add(described[0])
        return {v for v in out if v}

    def conflict(self, skill: "Skill", acting: int | None = None) -> str | None:
        """Why the task rules ``skill`` out, or None (module doc); ``acting``: its count of
        state-changing tools (with the skills it calls), when known."""
        if skill.name in self._memo:
            return self._memo[skill.name]
        changes = acting if acting is not None else len(set(skill.tools) - self.read_only)
        self._acting[skill.name] = changes
        found = self._conflict(skill, changes)
        self._memo[skill.name] = found
        return found

    def unnamed(self, skill: "Skill") -> list[str]:
        """The parameters of ``skill`` whose tool allows only some identifiers (``system`` in
        ``email vpn crm ...``) none of which the task names: it cannot supply them."""
        return [p for p, values in self.choices.get(skill.name, {}).items() if not names_value(self.text, values)]

    def named_values(self, name: str) -> dict[str, set[str]]:
        """Parameter -> the identifier values (:func:`skill_choices`) of skill ``name`` that the
        task names (``system`` -> ``{"git"}``), for the parameters it names one of."""
        found = self._named.get(name)
        if found is None:
            found = {p: named for p, values in self.choices.get(name, {}).items()
                     if (named := {v for v in values if names_value(self.text, [v])})}
            self._named[name] = found
        return found

    def asks_for(self, verb: str) -> bool:
        """Whether the task asks for ``verb`` (any verb, in the library's pairs or not): as a
        word in its base or ``-ing`` form, not after a determiner, not negated (:func:`verbs`)."""
        return verb in verbs(self.text, [verb]).asked

    def changes_state(self, skill: "Skill") -> bool:
        """Whether ``skill`` has a state-changing tool (as counted when it was judged)."""
        if skill.name not in self._acting:
            self.conflict(skill)
        return self._acting[skill.name] > 0

    def stand_in(self, skill: "Skill", score: float | None = None, margin: float = 0.0) -> str | None:
        """Why ``skill``, the first match (ranking ``score``), may not run in place of a skill
        the task ruled out that scored above it, or within ``margin`` of it, before the
        penalty (module doc: a demotion only ever hands the task to a skill that changes
        nothing), or None."""
        if not self.changes_state(skill):
            return None
        if self.displaced is not None and self.displaced[0] != skill.name:
            name, why = self.displaced
            return f"{why}; the task reads most like {name}, so {skill.name} is not run in its place"
        if score is None or margin <= 0:
            return None
        close = sorted((n for n, (before, _) in self.ruled_out.items() if n != skill.name and before > score - margin),
                       key=lambda n: -self.ruled_out[n][0])
        if not close:
            return None
        return (f"too close to call: {skill.name} and {close[0]}, which the task rules out "
                f"({self.ruled_out[close[0]][1]}), within the margin {margin:.3f}")

    def _conflict(self, skill: "Skill", changes: int) -> str | None:
        if changes <= 0:
            return None
        if self.kind == "information":
            return f"the task asks for information and {skill.name} changes state"
        if self.kind == "no_change":
            return f"the task says nothing should change and {skill.name} changes state"
        for verb in sorted(self.acting_verbs(skill)):
            opposite = self.vocabulary.opposites.get(verb, frozenset()) & self.verbs.asked
            side = self.vocabulary.sides.get(verb, frozenset([verb]))
            if opposite and not (side & self.verbs.asked):
                return (f"the task asks to {sorted(opposite)[0]} and {skill.name} does the opposite "
                        f"({verb})")
            if verb in self.verbs.negated and not (side & self.verbs.asked):
                return f"the task says not to {verb} and {skill.name} does"
        for tool in sorted(set(skill.tools) - self.read_only):
            things = {_singular(w) for w in tool_words(tool)[1:]} & self.verbs.kept
            if things:
                return f"the task says to keep the {sorted(things)[0]} as it is and {skill.name} changes it ({tool})"
        return None


# -- values the task must name ------------------------------------------------------------------


def identifier_choices(schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Argument -> the values a tool's JSON Schema allows (``enum``), for the arguments whose
    values are identifiers: at least two, none with a space (``hr_portal``, ``read``,
    ``eng-platform``). A user must name one of those to pick it; values with spaces ("no
    longer needed") are categories a user describes in their own words, and are left out."""
    out: dict[str, tuple[str, ...]] = {}
    for name, prop in ((schema or {}).get("properties") or {}).items():
        values = prop.get("enum") if isinstance(prop, Mapping) else None
        if (isinstance(values, list) and len(values) >= 2 and all(isinstance(v, str) and v.strip() for v in values)
                and not any(any(c.isspace() for c in v) for v in values)):
            out[str(name)] = tuple(values)
    return out


def _value_tokens(value: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", value.lower()) if w]


def names_value(text: str, values: Iterable[str]) -> bool:
    """Whether ``text`` names one of ``values``: the value's words (split at ``_``, ``-`` and
    other symbols) in a row among the text's, each word equal to the text's or, from three
    letters on, its start (``admin`` in ``administrator``)."""
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]
    for value in values:
        tokens = _value_tokens(value)
        if not tokens:
            continue
        for i in range(len(words) - len(tokens) + 1):
            if all(w == t or (len(t) >= 3 and w.startswith(t)) for w, t in zip(words[i:], tokens)):
                return True
    return False


def skill_choices(skill: "Skill", schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Parameter -> the identifier values (:func:`identifier_choices`) of the tool argument
    ``skill``'s code passes it to unchanged (outside a loop)."""
    from skill_library.one_vs_every import takes

    out: dict[str, tuple[str, ...]] = {}
    for (tool, argument), parameter in takes(skill).items():
        values = identifier_choices(schemas.get(tool) or {}).get(argument)
        if values:
            out[parameter] = values
    return out


@dataclass(frozen=True)
class _Known:
    vocabulary: Vocabulary
    read_only: frozenset[str]
    descriptions: Mapping[str, str]
    choices: Mapping[str, Mapping[str, tuple[str, ...]]]
    #: whether the active skills look people up (:func:`looks_people_up`)
    people: bool = False


_CACHE: "weakref.WeakKeyDictionary[Any, _Known]" = weakref.WeakKeyDictionary()


def known(library: "Vocabularied", generation: int | None = None) -> _Known:
    """What ``library``'s tools and skills tell the readings (cached per index generation:
    tools declared later count from the next index change; ``generation``: the one the
    caller just read, else read here)."""
    if generation is None:
        generation = library.context.store.index_generation()
    cached = _CACHE.get(library)
    if cached is None or cached.vocabulary.generation != generation:
        specs = library.tool_specs()
        skills = list(library.context.store.list(status="active"))
        tools = set(specs) | {t for s in skills for t in s.tools}
        descriptions = {name: (spec.description or "") for name, spec in specs.items()}
        verbs_seen = {tool_verb(t) for t in tools} | {w[0] for d in descriptions.values() if (w := _words(d))}
        schemas = {name: spec.schema_ for name, spec in specs.items()}
        choices = {s.name: found for s in skills if s.kind == "code" and (found := skill_choices(s, schemas))}
        read_only = library.read_only_tools
        cached = _Known(Vocabulary.of(verbs_seen, generation), read_only, descriptions, choices,
                        looks_people_up(skills, read_only))
        _CACHE[library] = cached
    return cached


def reading(library: "Vocabularied", text: str, generation: int | None = None) -> Reading:
    """``text`` read against ``library``'s vocabulary (cached per index generation;
    ``generation``: the one the caller just read)."""
    found = known(library, generation)
    return Reading(text=text, vocabulary=found.vocabulary, read_only=found.read_only,
                   descriptions=found.descriptions, choices=found.choices)


#: score penalty of a candidate whose precondition excludes a state the task names (ranking's
#: ``intent`` term; smaller than CONFLICT_PENALTY: the run's precondition check still stops it)
STATE_PENALTY = 0.1


def _state_values(condition: Any) -> list[str]:
    values = condition.value if condition.op == "in" else [condition.value] if condition.op == "eq" else []
    return [v for v in values if isinstance(v, str) and v.strip()] if isinstance(values, list) else []


def named_states(text: str, skills: Iterable["Skill"]) -> dict[str, str]:
    """Skill name -> why the task's own words rule out its precondition (issue 21 item 3,
    read from the text): a state value the task names ("contractor", "locked",
    "disabled") at a read another candidate's precondition admits and this one's excludes.
    The categories are the candidates' own mined conditions (the read's tool and path and
    the values they name), so only a library's own states are read, never a word list.
    A value counts when the task names it (:func:`names_value`: ``contractors`` names
    ``contractor``); a question about a state is abstention's (a message kind), not this."""
    by_read: dict[tuple[str, tuple[str, ...]], dict[str, set[str]]] = {}
    for skill in skills:
        for condition in skill.provenance.preconditions:
            states = _state_values(condition)
            if states:
                key = (condition.tool, tuple(condition.path))
                by_read.setdefault(key, {}).setdefault(skill.name, set()).update(states)
    out: dict[str, str] = {}
    for (tool, path), admitted in by_read.items():
        if len(admitted) < 2:
            continue
        every = set().union(*admitted.values())
        named = {v for v in every if names_value(text, [v])}
        if not named:
            continue
        for name, values in admitted.items():
            if named & values:
                continue  # it admits a state the task names
            if any(named & others for other, others in admitted.items() if other != name):
                what = " ".join(path) or tool
                out[name] = (f"the task names {sorted(named)[0]!r} ({what}), which {name}'s precondition "
                             f"excludes (it applies to {' or '.join(sorted(values))})")
    return out
