"""Normal forms of the text and numbers in a trace, shared by the grounding rule
(skill_library.governance.grounding) and the instruction detector
(skill_library.governance.instructed): a value is compared with a text in one form,
whatever its encoding.

* :func:`normalize`: Unicode NFKC (full-width digits and letters become ASCII), the
  zero-width and other invisible format characters removed, case folded, runs of white
  space made one space;
* :func:`numbers`: the numbers a text states, with thousands separators and currency
  signs read ("5,000 dollars", "$5,000.00" and "5000" are all 5000.0), and the number
  words up to the millions ("five thousand");
* :func:`key_tokens`: the words of an identifier (``orderId``, ``order_id`` and
  ``order-id`` are ``("order", "id")``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

#: invisible characters an attacker can put inside a value to break a literal match
INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                       "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]")
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"(?<![a-z0-9_.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![a-z0-9_])")
_WORD = re.compile(r"[a-z0-9_]+")

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}


def normalize(text: str) -> str:
    """``text`` in the one form values are compared in (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    text = INVISIBLE.sub("", text)
    return _SPACE.sub(" ", text.casefold()).strip()


def as_text(value: Any) -> str | None:
    """A scalar value as normalized text (None: not a string or a number)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return normalize(format_number(float(value)))
    if isinstance(value, str):
        return normalize(value)
    return None


def format_number(number: float) -> str:
    """``number`` as the shortest text that reads back as it (5000.0 -> "5000")."""
    return str(int(number)) if number.is_integer() else repr(number)


def as_number(value: Any) -> float | None:
    """The number a scalar value is (a number, or a string that is only a number, with
    separators or a currency sign); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = normalize(value).strip("$€£¥ ")
        for suffix in (" dollars", " dollar", " usd", " eur", " euros"):
            text = text.removesuffix(suffix)
        found = _NUMBER.fullmatch(text)
        if found:
            return float(found.group(0).replace(",", ""))
    return None


def numbers(text: str) -> set[float]:
    """Every number ``text`` (already normalized) states, in digits or in words."""
    found = {float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)}
    found.update(_word_numbers(_WORD.findall(text)))
    return found


def _word_numbers(words: list[str]) -> Iterator[float]:
    total, current, seen = 0, 0, False
    for word in [*words, ""]:
        if word in _UNITS or word in _TENS:
            current += _UNITS.get(word, 0) + _TENS.get(word, 0)
            seen = True
        elif word in _SCALES and seen:
            scale = _SCALES[word]
            if scale == 100:
                current *= 100
            else:
                total += current * scale
                current = 0
        elif word == "and" and seen:
            continue
        else:
            if seen:
                yield float(total + current)
            total, current, seen = 0, 0, False


def words(text: str) -> list[str]:
    """The words of a normalized text (runs of letters, digits and underscores)."""
    return _WORD.findall(text)


def contains(text: str, phrase: str, *, plural: bool = False) -> bool:
    """``phrase`` occurs in ``text`` as a whole word or phrase (both normalized); with
    ``plural``, also followed by "s" or "es" ("apple" in "3 apples")."""
    if not phrase:
        return False
    tail = r"(?:e?s)?" if plural else ""
    pattern = r"(?<![a-z0-9_])" + re.escape(phrase) + tail + r"(?![a-z0-9_])"
    return re.search(pattern, text) is not None


def key_tokens(key: str) -> tuple[str, ...]:
    """The words of an identifier, lower-case (``orderId`` -> ``("order", "id")``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", unicodedata.normalize("NFKC", key))
    return tuple(w for w in re.split(r"[^a-z0-9]+", spaced.casefold()) if w)
