"""One masking pass for every text the library stores or shows about a skill.

:func:`redact` turns a requester's message into an example task that carries the words of
the request and nobody's data:

1. values bound to the skill's parameters become ``{placeholders}``;
2. every other value the trace holds (its params, the calls' arguments and results: names,
   emails, ids, addresses, ...) becomes its role in words (``(a name)``, ``(an address)``);
3. common personal-data shapes are masked even when no tool returned them: emails, phone
   and card numbers, IBANs, long digit runs, ``#W123...``-style ids;
4. capitalized words that are not common words and not the domain's vocabulary (the tools'
   words), after a greeting, a sign-off or "my name is", or as a run of two, are names:
   ``someone``;
5. a clause that binds no parameter and shares no word with what the skill does (context,
   reasons, feelings, health or family details) is dropped, not masked.

What a rule cannot catch: meaning-level data written in common words ("my late husband's
account", a diagnosis in lowercase words that share a word with the domain) survives step 5
when it shares a word with the skill's tools. Such a library can add an LLM redaction pass
(``SkillLibrary(..., redactor=...)`` is the documented place for it; docs/privacy.md).

:func:`dummy` gives a typed stand-in for a value (for usage lines and examples shown in a
prompt), never the value itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

#: Shortest trace value (characters) masked by its role when found in a text.
MIN_KNOWN_CHARS = 3

EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
IBAN_RE = re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,4})?\b")
CARD_RE = re.compile(r"(?<![\w{])(?:\d[ -]?){12,18}\d(?![\w}])")
PHONE_RE = re.compile(r"(?<![\w{])\+?\(?\d{2,4}\)?[ .-]?\d{2,4}[ .-]?\d{2,5}(?:[ .-]?\d{2,5})?(?![\w}])")
ID_RE = re.compile(r"(?<![\w{@])#?[A-Z]{1,3}\d{4,}(?![\w}])|(?<![\w{@])#\d{3,}(?![\w}])")
TOKEN_ID_RE = re.compile(r"(?<![\w{@])[A-Za-z]+_[A-Za-z_]*\d{3,}(?![\w}])")
DIGITS_RE = re.compile(r"(?<![\w{])\d{4,}(?![\w}])")
_PLACEHOLDER_RE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_CLAUSE_RE = re.compile(
    r"(?<=[,;:])\s+|\s+[-–—]\s+|\s+(?=(?:because|since|as|but|so|though|although|while|"
    r"after|before|when|if)\s)", re.IGNORECASE)
_SENTENCE_RE = re.compile(r".+?(?:[.!?]+(?=\s|$)|\n|$)", re.DOTALL)
_PERSONA_RE = re.compile(
    r"\b(?:my name is|my name's|name is|i am|i'm|this is|call me|it's|it is|here is|signed|"
    r"regards|cheers|thanks|thank you|best|sincerely|yours|hi|hello|hey|dear)\b[,:]?\s*$",
    re.IGNORECASE)
_ROLE_WORDS = {"email": "an email address", "name": "a name", "first_name": "a name",
               "last_name": "a name", "address": "an address", "address1": "an address",
               "address2": "an address", "city": "a city", "zip": "a zip code",
               "phone": "a phone number", "user_id": "a user id"}

#: Words that, after a capitalized word starting a sentence, make it a person's name.
_NAME_FOLLOWERS = frozenset("""here from is was has had will would needs need wants want can
cannot could left joined joins asked asks says said just still""".split())

#: Words written with a capital that are not names (sentence starts, days, greetings...).
COMMON_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
out over own same she should so some such than that the their theirs them then there these
they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself please thanks thank hi hello hey dear
regards cheers best sincerely yes ok okay sure also could would should can may might must
monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday january
february march april may june july august september october november december i'm i've i'd
i'll it's that's there's don't can't won't isn't aren't didn't doesn't we're they're you're
let let's new old one two three first second last next every each order item account user
customer team support admin manager office company kind note urgent asap quick re fw fwd
via per vs etc mr mrs ms dr sir madam hr it
""".split())


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u200b", "").replace("\u200c", "")


def _value_forms(value: Any) -> list[str]:
    """The ways a value may be written in a text, longest first."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        forms = [str(value)]
        if isinstance(value, float) and value.is_integer():
            forms.append(str(int(value)))
        return forms
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        texts = [str(v) for v in value]
        forms = [", ".join(texts), " and ".join(texts)]
        if len(texts) > 2:
            forms.append(", ".join(texts[:-1]) + " and " + texts[-1])
            forms.append(", ".join(texts[:-1]) + ", and " + texts[-1])
        return forms
    return []


def _sub_values(text: str, spots: Mapping[str, str]) -> str:
    if not spots:
        return text
    ordered = sorted(spots, key=len, reverse=True)
    pattern = re.compile("|".join(r"(?<![\w{])" + re.escape(v) + r"(?![\w}])" for v in ordered),
                         re.IGNORECASE)
    lowered = {k.casefold(): v for k, v in spots.items()}
    return pattern.sub(lambda m: lowered.get(m.group(0).casefold(), m.group(0)), text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, in order (a sentence ends at ``.``, ``!`` or
    ``?`` followed by a space or the end, or at a line break: ``a.b@x.org`` stays whole)."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def mask_bound(text: str, bindings: Mapping[str, Any]) -> str:
    """``text`` with each bound value (as whole words) replaced by ``{name}``."""
    spots: dict[str, str] = {}
    for name, value in bindings.items():
        for form in _value_forms(value):
            spots.setdefault(form, "{" + name + "}")
        if isinstance(value, (list, tuple)):
            for item in value:
                for form in _value_forms(item):
                    spots.setdefault(form, "{" + name + "}")
    masked = _sub_values(text, spots)
    # a list written item by item masks to "{x}, {x} and {x}": one placeholder is enough
    return re.sub(r"(\{\w+\})(?:(?:,\s*|\s+and\s+|,\s*and\s+|\s+)\1)+", r"\1", masked)


def _walk(value: Any, role: str, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            _walk(item, str(key), out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, role, out)
    elif isinstance(value, str):
        text = value.strip()
        if len(text) >= MIN_KNOWN_CHARS and len(text) <= 200:
            out.setdefault(text, role)
            try:  # a tool result written as JSON holds its fields' values too
                import json

                parsed = json.loads(text)
            except (ValueError, TypeError):
                return
            if isinstance(parsed, (dict, list)):
                _walk(parsed, role, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) >= 1000:
        out.setdefault(str(value), role)


def trace_values(params: Mapping[str, Any], calls: Iterable[Any]) -> dict[str, str]:
    """Every string value a trace holds (its params, its calls' arguments and results), with
    the name of the field it stood in: the values a stored text must not carry."""
    out: dict[str, str] = {}
    _walk(dict(params), "value", out)
    for call in calls:
        _walk(dict(getattr(call, "arguments", {}) or {}), "value", out)
        _walk(getattr(call, "result", None), "value", out)
        error = getattr(call, "error", None)
        if error:
            _walk(error, "value", out)
    return out


def may_identify(value: str, vocabulary: Iterable[str] = ()) -> bool:
    """Whether a value a trace holds may point at someone: it has a digit, an ``@``, a
    capitalized word or several words (names, emails, ids, addresses, free text). A single
    lowercase word (a status such as ``pending``, a color, a size) or a word of the domain's
    vocabulary says what the request is about, not who made it."""
    text = value.strip()
    if any(ch.isdigit() for ch in text) or "@" in text:
        return True
    words = re.findall(r"[^\W\d_]+", text)
    if not words:
        return False
    if len(words) == 1:
        return words[0][:1].isupper() and words[0].casefold() not in set(vocabulary)
    return True


def role_words(role: str) -> str:
    """How a value's role is written in a masked text: ``(an email address)``."""
    key = role.lower()
    if key in _ROLE_WORDS:
        return f"({_ROLE_WORDS[key]})"
    words = " ".join(w for w in re.split(r"[^a-z0-9]+", key) if w) or "value"
    return f"({'an' if words[0] in 'aeiou' else 'a'} {words})"


def scrub_shapes(text: str) -> str:
    """Common personal-data shapes replaced by neutral words, wherever they come from."""
    text = EMAIL_RE.sub("(an email address)", text)
    text = IBAN_RE.sub("(an account number)", text)
    text = CARD_RE.sub("(a card number)", text)
    text = ID_RE.sub("(an id)", text)
    text = TOKEN_ID_RE.sub("(an id)", text)
    text = PHONE_RE.sub(lambda m: "(a number)" if sum(c.isdigit() for c in m.group(0)) >= 6
                        else m.group(0), text)
    return DIGITS_RE.sub("(a number)", text)


def shape_problems(text: str) -> list[str]:
    """Personal-data shapes found in ``text``, one reason per kind (none: clean)."""
    problems = []
    for label, pattern in (("an email address", EMAIL_RE), ("an account number", IBAN_RE),
                           ("a card number", CARD_RE), ("an id", ID_RE)):
        if pattern.search(text):
            problems.append(f"the text holds {label}")
    return problems


def _is_name(word: str, vocabulary: set[str]) -> bool:
    if not word[:1].isupper():
        return False
    low = word.casefold().strip("'’-")
    base = re.sub(r"['’]s$", "", low)
    return base not in COMMON_WORDS and base not in vocabulary and low not in COMMON_WORDS


def mask_names(text: str, vocabulary: Iterable[str] = ()) -> str:
    """Names written with a capital replaced by ``someone``: a capitalized word that is not
    a common word nor the domain's vocabulary, in the middle of a sentence, after a
    greeting, a sign-off or "my name is", or in a run of two (a full name)."""
    vocab = {v.casefold() for v in vocabulary}
    out: list[str] = []
    sentence_start = True
    pos = 0
    tokens = list(_WORD_RE.finditer(text))
    for n, match in enumerate(tokens):
        word = match.group(0)
        between = text[pos:match.start()]
        if re.search(r"[.!?\n]\s*$", between) or (pos == 0 and not between.strip()):
            sentence_start = True
        out.append(between)
        pos = match.end()
        candidate = _is_name(word, vocab)
        if candidate and sentence_start:
            after = tokens[n + 1] if n + 1 < len(tokens) else None
            before_text = "".join(out)
            run = after is not None and text[match.end():after.start()].strip() == "" and \
                _is_name(after.group(0), vocab)
            follows = text[match.end():match.end() + 3]
            persona = bool(_PERSONA_RE.search(before_text[-40:])) or follows.startswith(
                (" (", "'s", "’s", ",")) or (
                after is not None and after.group(0).casefold() in _NAME_FOLLOWERS)
            candidate = run or persona
        out.append("someone" if candidate else word)
        sentence_start = False
    out.append(text[pos:])
    return re.sub(r"\bsomeone(?:\s+someone)+\b", "someone", "".join(out))


def _words(text: str) -> set[str]:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return set(re.findall(r"[a-z]{3,}", ascii_text))


_ROLE_RE = re.compile(r"\((?:an?|the) [a-z ]+\)")


def _clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE_RE.split(sentence) if c and c.strip()]


def redact(
    text: str,
    bindings: Mapping[str, Any] | None = None,
    known: Mapping[str, str] | None = None,
    *,
    topic: Iterable[str] = (),
    vocabulary: Iterable[str] = (),
) -> str:
    """``text`` as a stored example: bound values as ``{name}``, other trace values
    (``known``: value -> role) as roles, shapes and names masked, clauses that bind nothing
    and share no word with ``topic`` dropped (see the module docstring). Never empty when
    the text binds a parameter; ``""`` when nothing of it is the request."""
    text = _norm(text or "").strip()
    if not text:
        return ""
    text = mask_bound(text, bindings or {})
    vocab = {*(w.casefold() for w in vocabulary), *(w.casefold() for w in topic)}
    roles = {value: role_words(role) for value, role in (known or {}).items()
             if len(value) >= MIN_KNOWN_CHARS and may_identify(value, vocab)}
    text = _sub_values(text, roles)
    text = scrub_shapes(text)
    text = mask_names(text, vocab)
    topic_words = {w.casefold() for w in topic if len(w) >= 3}
    kept: list[str] = []
    for sentence in sentences(text):
        parts = []
        for clause in _clauses(sentence):
            plain = _ROLE_RE.sub(" ", clause)
            if _PLACEHOLDER_RE.search(clause) or (_words(plain) & topic_words):
                parts.append(clause.strip())
        if not parts:
            continue
        joined = " ".join(parts).strip(" ,;:-")
        if joined and joined[-1] not in ".!?":
            joined += "."
        kept.append(joined[:1].upper() + joined[1:])
    out = " ".join(kept)
    out = re.sub(r"\bsomeone(?:\s+someone)+\b", "someone", out)
    return re.sub(r"\s{2,}", " ", out).strip()


def personal_values_in(texts: Iterable[str], values: Iterable[Any]) -> list[str]:
    """Which of ``values`` (3+ characters, as whole words, case-insensitive) occur in
    ``texts``: the check a caller runs against values it knows to be personal."""
    joined = _norm("\n".join(texts)).casefold()
    found = []
    for value in values:
        text = str(value).strip()
        if len(text) >= MIN_KNOWN_CHARS and re.search(
                r"(?<!\w)" + re.escape(text.casefold()) + r"(?!\w)", joined):
            found.append(text)
    return found


def dummy(value: Any, name: str = "") -> Any:
    """A typed stand-in for ``value`` (the argument ``name`` takes it): same type and shape,
    none of its content. ``"#W2378156"`` -> ``"#W0000000"``, an email -> ``user@example.com``."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, (list, tuple)):
        return [dummy(v, name) for v in value[:1]]
    if isinstance(value, Mapping):
        return {k: dummy(v, str(k)) for k, v in value.items()}
    text = str(value)
    if EMAIL_RE.fullmatch(text):
        return "user@example.com"
    if any(c.isdigit() for c in text):
        return re.sub(r"\d", "0", text)
    return f"<{name or 'text'}>"


def shape_dummy(value: Any) -> Any:
    """A stand-in for ``value`` with its shape and none of its content: letters become
    ``x``/``X``, digits ``0`` (``ines.g@corp.example`` -> ``xxxx.x@xxxx.xxxxxxx``); numbers, booleans and the
    structure of lists and dicts stay (what value fit and the index read of a value is its
    shape, never its content)."""
    if isinstance(value, (list, tuple)):
        return [shape_dummy(v) for v in value]
    if isinstance(value, Mapping):
        return {k: shape_dummy(v) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    return re.sub(r"[^\W\d_]", lambda m: "X" if m.group(0).isupper() else "x",
                  re.sub(r"\d", "0", value))
