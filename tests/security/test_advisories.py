"""One case per advisory the dependency pins are for (RestrictedPython>=8.4).

GHSA-hp3v-5vw7-fx9w / CVE-2026-76825 (fixed in RestrictedPython 8.4): ``string.Formatter``
methods (format, vformat, get_field, get_value) traverse attributes and items without
``safer_getattr``, so restricted code that reaches the class, an instance or a subclass can
walk to function globals and builtins.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

from sandbox import Sandbox

#: the exploit, kept as a constant: Formatter.get_field hands back a live object
GHSA_HP3V_5VW7_FX9W_GET_FIELD = (
    "import string\n"
    "def f():\n"
    "    obj, _ = string.Formatter().get_field('0.__globals__', (f,), {})\n"
    "    return sorted(obj)\n"
)
#: the same through a subclass, which the advisory names too
GHSA_HP3V_5VW7_FX9W_SUBCLASS = (
    "import string\n"
    "class F(string.Formatter):\n"
    "    pass\n"
    "def f():\n"
    "    return F().vformat('{0.__globals__}', (f,), {})\n"
)


def test_restrictedpython_pin_has_the_formatter_fix():
    major, minor = (int(p) for p in version("RestrictedPython").split(".")[:2])
    assert (major, minor) >= (8, 4)


def test_ghsa_hp3v_5vw7_fx9w_safer_getattr_refuses_string_formatter():
    """The fix itself: RestrictedPython's safer_getattr refuses Formatter and its methods."""
    import string

    from RestrictedPython.Guards import safer_getattr

    with pytest.raises((NotImplementedError, AttributeError)):
        safer_getattr(string, "Formatter")
    with pytest.raises((NotImplementedError, AttributeError)):
        safer_getattr(string.Formatter(), "get_field")


@pytest.mark.parametrize("code", [GHSA_HP3V_5VW7_FX9W_GET_FIELD, GHSA_HP3V_5VW7_FX9W_SUBCLASS])
def test_ghsa_hp3v_5vw7_fx9w_is_stopped_in_the_sandbox(code):
    """Even with `string` importable, the exploit reaches no globals."""
    with Sandbox(workers=1, allowed_modules=("string",)) as box:
        result = box.run(code, entry="f")
    assert not result.ok
    assert result.error is not None and "Formatter" in result.error.message
