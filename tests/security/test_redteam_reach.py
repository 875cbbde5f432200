"""Red team, objects that carry attributes out of the guard's sight (issue 23, item 6).

``functools.cache(str).format`` was the real ``str.format``: ``update_wrapper`` copied the
wrapped class's namespace onto the cache wrapper, an object the attribute guard did not
know, and CVE-2023-41039's attribute walk (``{0.gi_frame.f_back}``, ``__globals__``)
worked again. One attack per route, named after the CVE it reopens; the guard's value
check on its own; and a walk of everything a skill can reach from every vetted module
(``reach.py``, in a process of its own that builds the proxies as a worker does).
"""

from __future__ import annotations

import collections
import json
import os
import string
import subprocess
import sys
import types

import pytest
from redteam import Attack, check_stopped, run_attack

ATTR = ("AttributeError",)
REFUSED = ("NotImplementedError",)
POLICY = ("PolicyViolation",)

FUNCTOOLS = "import functools, collections, operator\n"

ROUTES = [
    # CVE-2023-41039: str.format walks attributes of its arguments.
    Attack("CVE-2023-41039_functools_cache_str_format",
           FUNCTOOLS + "def f():\n    g = (x for x in [1])\n"
           "    return functools.cache(str).format('{0.gi_frame.f_back}', g)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_functools_cache_str_globals",
           FUNCTOOLS + "def f():\n"
           "    return functools.cache(str).format('{0.__globals__[__builtins__]}', f)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_functools_cache_str_format_map",
           FUNCTOOLS + "def f():\n"
           "    return functools.cache(str).format_map('{a.__class__}', {'a': 1})\n",
           ATTR, "no attribute 'format_map'", extended=True),
    Attack("CVE-2023-41039_lru_cache_str_format",
           FUNCTOOLS + "def f():\n"
           "    return functools.lru_cache(maxsize=None)(str).format('{0.__globals__}', f)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_lru_cache_bare_decorator_str_format",
           FUNCTOOLS + "def f():\n    return functools.lru_cache(str).format('{0.__class__}', 1)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_lru_cache_userstring_format",
           FUNCTOOLS + "def f():\n    u = collections.UserString('{0.__class__}')\n"
           "    return functools.lru_cache()(collections.UserString).format(u, 1)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_cache_getattr_format",
           FUNCTOOLS + "def f():\n"
           "    return getattr(functools.cache(str), 'for' + 'mat')('{0.__class__}', 1)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_cache_wrapper_as_method_format",
           FUNCTOOLS + "class C:\n    g = functools.cache(str)\n"
           "def f():\n    return C().g.format('{0.__class__}', 1)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_classmethod_cache_str_format",
           FUNCTOOLS + "class C:\n    g = classmethod(functools.cache(str))\n"
           "def f():\n    return C.g.format('{0.__class__}', 1)\n",
           ATTR, "no attribute 'format'", extended=True),
    Attack("CVE-2023-41039_partial_func_format",
           FUNCTOOLS + "def f():\n"
           "    return functools.partial(str).func.format('{0.__class__}', 1)\n",
           REFUSED, "format", extended=True),
    Attack("CVE-2023-41039_reduce_getattr_format",
           FUNCTOOLS + "def f():\n"
           "    return functools.reduce(getattr, ['format'], '{0.__class__}')(1)\n",
           REFUSED, "format", extended=True),
    Attack("CVE-2023-41039_update_wrapper",
           FUNCTOOLS + "class C:\n    pass\n"
           "def f():\n    return functools.update_wrapper(C(), str).format\n",
           ATTR, "no attribute 'update_wrapper'", extended=True),
    Attack("CVE-2023-41039_wraps",
           FUNCTOOLS + "def f():\n    return functools.wraps(str)(lambda: 1).format\n",
           ATTR, "no attribute 'wraps'", extended=True),
    Attack("CVE-2023-41039_singledispatch",
           FUNCTOOLS + "def f():\n    return functools.singledispatch(str).format\n",
           ATTR, "no attribute 'singledispatch'", extended=True),
    Attack("CVE-2023-41039_cached_property",
           FUNCTOOLS + "def f():\n    return functools.cached_property(str).func.format\n",
           ATTR, "no attribute 'cached_property'", extended=True),
    Attack("CVE-2023-41039_partialmethod",
           FUNCTOOLS + "def f():\n    return functools.partialmethod(str).func.format\n",
           ATTR, "no attribute 'partialmethod'", extended=True),
    Attack("CVE-2023-41039_methodcaller_format",
           FUNCTOOLS + "def f():\n"
           "    return operator.methodcaller('format', 1)('{0.__class__}')\n",
           ATTR, "no attribute 'methodcaller'", extended=True),
    # CVE-2023-37271: generator frames lead to the worker's frames and globals.
    Attack("CVE-2023-37271_attrgetter_gi_frame",
           FUNCTOOLS + "def f():\n    g = (x for x in [1])\n"
           "    return operator.attrgetter('gi_frame.f_back')(g)\n",
           ATTR, "no attribute 'attrgetter'", extended=True),
    Attack("CVE-2023-37271_cached_generator_gi_frame",
           FUNCTOOLS + "def gen():\n    yield 1\n"
           "def f():\n    return getattr(functools.cache(gen)(), 'gi_' + 'frame')\n",
           ATTR, "restricted name", extended=True),
    Attack("CVE-2023-37271_reduce_getattr_gi_frame",
           FUNCTOOLS + "def f():\n    g = (x for x in [1])\n"
           "    return functools.reduce(getattr, ['gi_' + 'frame', 'f_back'], g)\n",
           ATTR, "restricted name", extended=True),
    # CVE-2024-47532: AttributeError.obj hands out the object a lookup failed on.
    Attack("CVE-2024-47532_cache_attribute_error_obj",
           FUNCTOOLS + "def f():\n    return functools.cache(AttributeError).obj\n",
           ATTR, "no attribute 'obj'", extended=True),
    Attack("CVE-2024-47532_attribute_error_class_obj_member",
           FUNCTOOLS + "def f():\n    return getattr(AttributeError, 'obj')\n",
           REFUSED, '"obj" of exceptions', extended=True),
    Attack("CVE-2024-47532_reduce_getattr_obj",
           FUNCTOOLS + "def f():\n    try:\n        (1).nope\n    except AttributeError as e:\n"
           "        return functools.reduce(getattr, ['obj'], e)\n",
           ATTR, '"obj" of exceptions', extended=True),
]

ALL = [("functools_routes", a) for a in ROUTES]


@pytest.mark.parametrize("family, attack", ALL, ids=[f"{fam}-{a.id}" for fam, a in ALL])
def test_attack_is_stopped(family, attack, extended_sandbox, canary):
    result = run_attack(attack, canary, extended_sandbox)
    check_stopped(result, attack, canary, extended_sandbox)


def test_functools_caches_still_work(extended_sandbox):
    """The sandbox's lru_cache/cache keep the API: decorators, info, clear, parameters."""
    code = (FUNCTOOLS + "@functools.lru_cache(maxsize=2)\ndef sq(x):\n    return x * x\n"
            "@functools.cache\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
            "@functools.lru_cache\ndef one(x):\n    return x\n"
            "def f():\n    sq(2)\n    sq(2)\n    one(1)\n    info = sq.cache_info()\n"
            "    out = [fib(30), info.hits, info.misses, sq.cache_parameters(),\n"
            "           one.cache_info().currsize]\n"
            "    sq.cache_clear()\n    return out + [sq.cache_info().currsize]\n")
    r = extended_sandbox.run(code, entry="f")
    assert r.ok, r.error
    assert r.value == [832040, 1, 1, {"maxsize": 2, "typed": False}, 1, 0]


def test_guarded_reads_refuse_dangerous_values_whoever_holds_them():
    """The value check of the attribute guard, on its own: a holder the name checks do
    not recognise (what update_wrapper made) still never hands these out."""
    from sandbox.runtime import guarded_getattr

    def gen():
        yield 1

    frame = gen()
    next(frame)
    holder = types.SimpleNamespace(
        descriptor=str.format, bound="{0.__class__}".format, mapping="{a}".format_map,
        userstring=collections.UserString.format,
        bound_userstring=collections.UserString("{0}").format,
        formatter=string.Formatter, formatter_method=string.Formatter().get_field,
        module=os, sys_module=sys, frame=frame.gi_frame, code=gen.__code__,
        globals=gen.__globals__, obj_member=AttributeError.__dict__["obj"],
        register=collections.UserDict.register,
    )
    for name in vars(holder):
        with pytest.raises(NotImplementedError):
            guarded_getattr(holder, name)
    fine = types.SimpleNamespace(s="{0}", n=1, f=len, d={"a": 1}, m=str.upper, c=str)
    for name in vars(fine):
        assert guarded_getattr(fine, name) is getattr(fine, name)


def _walk() -> dict:
    """``reach.py`` in a fresh interpreter (it freezes module class state as a worker does)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, os.path.join(here, "reach.py")], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout)


def test_nothing_a_skill_can_reach_is_dangerous_and_the_guard_refuses_what_is():
    """Every attribute reachable from the builtins, every vetted module and what skill
    code makes (depth 5), native and guarded reads, container items, and cache, partial,
    classmethod and staticmethod wrappers around what is reached: no str/UserString
    format method, Formatter, module (os, sys), frame, code object, traceback, namespace
    dict (``__globals__``), exception ``obj`` member, ABC register or guard-free attribute
    reader. The dangerous reads the walk meets are refused by the guard."""
    report = _walk()
    assert report["objects"] > 30_000  # the walk covers the modules, builtins and wrappers
    assert report["found"] == []
    refused = set(report["refused"])
    for path in ("builtins.str.format", "builtins.str.format_map", "sample.str.format",
                 "module.collections.UserString.format", "sample.skill_generator.gi_frame",
                 "sample.skill_generator.gi_code", "sample.attribute_error.obj",
                 "builtins.AttributeError.obj"):
        assert path in refused, path
