"""Does a task name what a skill does or acts on? (issue 21: abstention's uncertain zone)

The calibrated floor (:mod:`skill_library.abstention`, rule 1) is set on the library's own
example tasks, which read more like each other than a new requester's words do: a request
of a covered workflow in words the library has not seen ("could I leave the book-club
distribution list?") often scores a little under it, next to out-of-scope requests of the
same domain ("please change how my name is displayed in the address book", nearest to a
password reset). Similarity alone cannot tell them apart there; the request's words can: the
first names the list the skill removes an employee from, the second names nothing a
password reset does or acts on.

A skill's *action words* are the content words of what it does: its description's action
sentence (the ``when`` text before the lookups it makes, ``(after: ...)``, or before the
first full stop) and its parameters' names, singular, without function words
(:data:`skill_library.one_vs_every.FUNCTION_WORDS`) and without the words most of the
library's skills share (:func:`common_words`: "employee" in a helpdesk, "order" in a shop;
they tell no skill from another). The task *names* a skill when it holds one of them
(:func:`mentioned`). Abstention uses it only between the floor and a lower one
(``Calibration.mention_floor``): there, a top match is answered when the task mentions it,
names one of the identifier values its tool declares for a parameter (the ``book-club`` list,
the ``payroll`` system: :meth:`skill_library.intent.Reading.named_values`), and it changes one
thing (:func:`changes_one_thing`); else it abstains, as under the floor. A mention alone is
too weak: "the Wi-Fi password in room 4 does not work" mentions a password reset, "my
account: ..." every account skill; a named value is what a request of the skill's own
workflow carries, and the cost of a wrong run grows with what it changes ("account in
question: ..." must not start an offboarding).

Limits: lexical, English-centred (a word form the description does not use, "withdrawn"
for revoke, is not read); a description word that is also chatter ("back" in "switch an
account back on" against "call me back") is dropped only when it is a function word.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from skill_library.models import Skill
from skill_library.one_vs_every import FUNCTION_WORDS

#: a word in more than this share of a library's skills' action words is common to them
COMMON_SHARE = 0.5
#: fewer skills than this: no word is common (too few to tell)
MIN_SKILLS_FOR_COMMON = 4
#: shorter words are not read
MIN_LETTERS = 3

_WORD_RE = re.compile(r"[^\W\d_]+")
#: words descriptions use for how, not what
_DESCRIPTION_WORDS = frozenset("needs need applies when after every each all one like".split())
#: the loop phrase of a description (induction.describe): ", for every one that list devices returns"
_LOOP_RE = re.compile(r",? for (?:every|each|all) one that [\w ]+? returns")


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _folded(text: str) -> str:
    """Lower case, accents folded (``Zurücksetzen`` -> ``zurucksetzen``)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> set[str]:
    """The content words of ``text``: lower case, accents folded, singular, no function words."""
    out = set()
    for raw in _WORD_RE.findall(_folded(text).replace("'s", "")):
        word = _singular(raw)
        if len(word) >= MIN_LETTERS and word not in FUNCTION_WORDS and raw not in FUNCTION_WORDS:
            out.add(word)
    return out


def action_sentence(when: str) -> str:
    """The part of a ``when`` text that says what the skill does: before ``(after:`` or the
    first full stop."""
    text = _LOOP_RE.sub("", when.split("(after:", 1)[0])  # the loop's lookup is not what it does
    return re.split(r"\.\s", text + " ", maxsplit=1)[0].strip()


def action_words(skill: Skill) -> set[str]:
    """The words of what ``skill`` does and of its parameters' names (module doc)."""
    names = " ".join(n.replace("_", " ") for n in (skill.parameters or {}).get("properties", {}))
    return words(f"{action_sentence(skill.when)} {names}") - _DESCRIPTION_WORDS


def common_words(skills: Iterable[Skill]) -> frozenset[str]:
    """The action words more than :data:`COMMON_SHARE` of ``skills`` have."""
    found = [action_words(s) for s in skills]
    if len(found) < MIN_SKILLS_FOR_COMMON:
        return frozenset()
    counts = Counter(w for ws in found for w in ws)
    return frozenset(w for w, n in counts.items() if n > COMMON_SHARE * len(found))


def mentioned(task: str, skill: Skill, common: Iterable[str] = ()) -> set[str]:
    """The action words of ``skill`` (less ``common``) that ``task`` holds."""
    return (action_words(skill) - set(common)) & words(task)


def changes_one_thing(skill: Skill, read_only: Iterable[str]) -> bool:
    """Whether ``skill`` visibly makes one change, once: a code skill with one state-changing
    tool, called at one place that no loop, comprehension or function encloses, and never
    passed around as a value (``map(tool, ...)``). Anything this cannot read (an instruction
    skill, code that does not parse) does not qualify."""
    acting = set(skill.tools) - set(read_only)
    if skill.kind != "code" or not skill.code or len(acting) != 1:
        return False
    (tool,) = acting
    try:
        tree = ast.parse(skill.code)
    except (SyntaxError, ValueError):
        return False
    calls = 0
    for node, enclosing in _walk(tree, ()):
        if isinstance(node, ast.Name) and node.id == tool:
            parent = enclosing[-1] if enclosing else None
            if not (isinstance(parent, ast.Call) and parent.func is node):
                return False  # the tool used as a value: how often it runs cannot be read
            calls += 1
            if any(isinstance(n, _REPEATING) for n in enclosing) or \
                    sum(isinstance(n, _FUNCTIONS) for n in enclosing) > 1:
                return False
    return calls == 1


#: nodes whose body may run more than once
_REPEATING = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
              ast.Lambda)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _walk(node: ast.AST, enclosing: tuple[ast.AST, ...]) -> Iterable[tuple[ast.AST, tuple[ast.AST, ...]]]:
    yield node, enclosing
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, (*enclosing, node))
