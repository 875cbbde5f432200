"""Walk everything skill code can reach, as a worker builds it, and report what is
dangerous. Run as a script (``python tests/security/reach.py``): it freezes the vetted
modules' class state the way a worker does, which must not happen in the test process.

Roots: the builtins a run gets, every vetted module's proxy, and values a skill can make
(literals, exceptions raised by C code with ``.obj`` set, and what skill code makes by
calling what it reaches: its own function, class and generator, patterns and matches,
decimal contexts, iterators, stdlib instances). Edges, the ways compiled skill code reads: a public name
that compiles to a native load (``getattr``), a sensitive name through the guard
(``guarded_getattr``, whose refusals are counted), items of containers and mappings, and
wrappers a skill can put around any object (``functools.cache``/``lru_cache``/``partial``
as the proxy offers them, and ``classmethod``/``staticmethod`` bound by a skill class).

``danger`` is this walk's own oracle (it does not ask the sandbox): ``str.format`` and
``format_map`` in every form (CVE-2023-41039), ``string.Formatter``, modules, frames,
code objects and tracebacks (CVE-2023-37271: ``gi_frame``/``f_back``), namespace dicts
(``__globals__``), exception ``obj`` members (CVE-2024-47532), ABC ``register``, builtins
that bypass the guards, callables that read, copy or bind attributes for their caller
(``operator.attrgetter``/``methodcaller``, ``functools.update_wrapper``/``wraps``/
``singledispatch``/``cached_property``/``partialmethod``, the real ``lru_cache``), and
functions of os/sys-like modules.

Prints one JSON object: ``objects`` (distinct objects visited), ``guarded`` (reads that
went through the guard), ``refused`` (of them, refused: path list), ``found`` (dangerous
objects reached: ``[path, why]``).
"""

from __future__ import annotations

import abc
import builtins
import collections
import datetime
import functools
import json
import operator
import string
import sys
import types
from typing import Any

from sandbox.policy import SENSITIVE_ATTRS, VETTED_MODULES, compile_source
from sandbox.runtime import RunNamespace, build_module_proxies, guarded_getattr

#: Attribute levels walked from each root, and from each wrapper.
DEPTH = 5
#: Wrappers are put around objects reached within this many levels.
WRAP_DEPTH = 3

#: Skill code (compiled under the policy, run in a run namespace) that makes the objects
#: a skill gets by calling what it can reach: each becomes a root of the walk.
MADE_BY_SKILL = """
import base64, bisect, cmath, collections, datetime, decimal, difflib, fractions
import functools, hashlib, heapq, itertools, json, math, operator, random, re, statistics
import string, textwrap, time, unicodedata
class Box:
    size = 1
    def grow(self):
        return self.size
def make_gen():
    return (x for x in [1, 2])
def fn(a=1):
    return a
def made():
    p = re.compile('(a)(?P<n>b)?')
    return {
        'skill_function': fn, 'skill_class': Box, 'skill_instance': Box(),
        'skill_method': Box().grow, 'skill_generator': make_gen(),
        'pattern': p, 'scanner': p.scanner('ab'), 'match': p.match('ab'),
        'decimal_context': decimal.getcontext(), 'local_context': decimal.localcontext(),
        'decimal': decimal.Decimal('1.5'), 'fraction': fractions.Fraction(1, 3),
        'random': random.Random(1), 'random_state': random.getstate(),
        'matcher': difflib.SequenceMatcher(None, 'ab', 'ac'), 'htmldiff': difflib.HtmlDiff(),
        'differ': difflib.Differ(), 'wrapper': textwrap.TextWrapper(),
        'template': string.Template('$x'), 'counter': collections.Counter('aab'),
        'chainmap': collections.ChainMap({'a': 1}), 'deque': collections.deque([1]),
        'defaultdict': collections.defaultdict(list), 'ordered': collections.OrderedDict(a=1),
        'namedtuple': collections.namedtuple('P', 'a b')(1, 2),
        'userstring': collections.UserString('x'), 'userdict': collections.UserDict(a=1),
        'userlist': collections.UserList([1]), 'decoder': json.JSONDecoder(),
        'encoder': json.JSONEncoder(), 'normal': statistics.NormalDist(),
        'tz': datetime.timezone.utc, 'delta': datetime.timedelta(1),
        'sha': hashlib.sha256(b'x'), 'count': itertools.count(), 'chain': itertools.chain([1]),
        'groupby': itertools.groupby([1]), 'tee': itertools.tee([1])[0],
        'partial': functools.partial(len), 'key': functools.cmp_to_key(lambda a, b: 0)(1),
        'cached': functools.lru_cache()(fn), 'itemgetter': operator.itemgetter(0),
        'localtime': time.localtime(), 'clock': time.get_clock_info('time'),
        'iter': iter([1]), 'map': map(len, []), 'zip': zip(), 'enumerate': enumerate([]),
        'reversed': reversed([1]), 'range_iter': iter(range(2)), 'dict_items': {'a': 1}.items(),
        'bytes': base64.b64encode(b'x'), 'complex': cmath.sqrt(-1), 'frozenset': frozenset([1]),
        'bytearray': bytearray(b'x'), 'property': property(fn), 'slice': slice(1),
    }
"""

_UNGUARDED_BUILTINS = {
    getattr(builtins, name) for name in (
        "getattr setattr delattr vars dir eval exec compile open __import__ globals locals "
        "breakpoint input help memoryview super type id"
    ).split() if hasattr(builtins, name)
}
_SYSTEM_MODULES = {"os", "posix", "nt", "sys", "io", "_io", "subprocess", "_posixsubprocess",
                   "shutil", "importlib", "_imp", "marshal", "pickle", "_pickle", "socket",
                   "_socket", "signal", "_signal", "gc", "inspect", "ctypes", "_ctypes",
                   "codecs", "_codecs", "pathlib", "tempfile", "resource",
                   "fcntl", "mmap", "select", "threading", "_thread", "linecache", "runpy",
                   "sandbox.worker", "sandbox.protocol", "sandbox.hardening"}
#: Callables that read attributes by name, or copy or bind them, for whoever calls them,
#: without the guard: the vetted modules' proxies hide them.
_GUARD_BYPASSES = {operator.attrgetter, operator.methodcaller, functools.update_wrapper,
                   functools.wraps, functools.singledispatch, functools.singledispatchmethod,
                   functools.cached_property, functools.partialmethod, functools.total_ordering,
                   functools.lru_cache, functools.cache, string.Formatter}
_STR_FORMATTERS = {str.__dict__["format"], str.__dict__["format_map"],
                   collections.UserString.__dict__["format"],
                   collections.UserString.__dict__["format_map"]}


def danger(value: Any) -> str | None:
    """Why skill code must never hold ``value``, or None."""
    t = type(value)
    if isinstance(value, (types.ModuleType, types.FrameType, types.CodeType,
                          types.TracebackType)):
        return t.__name__
    if t is types.MethodType:
        return danger(value.__func__)
    if _hashable(value) and value in _STR_FORMATTERS:
        return "str.format"
    if t is types.BuiltinMethodType and value.__name__ in ("format", "format_map") and (
        isinstance(value.__self__, str)
    ):
        return "str.format (bound)"
    if value is string.Formatter or isinstance(value, string.Formatter) or (
        isinstance(value, type) and issubclass(value, string.Formatter)
    ):
        return "string.Formatter"
    if t is types.FunctionType and value in vars(string.Formatter).values():
        return "string.Formatter method"
    if _hashable(value) and (value in _GUARD_BYPASSES or type(value) in _GUARD_BYPASSES):
        return "attribute access on the caller's behalf"
    if value is abc.ABCMeta.register:
        return "ABCMeta.register"
    if t in (types.MemberDescriptorType, types.GetSetDescriptorType) and (
        value.__name__ == "obj" and issubclass(value.__objclass__, BaseException)
    ):
        return "exception .obj member"
    if isinstance(value, dict) and ("__builtins__" in value or {
        "__name__", "__doc__", "__package__"} <= set(k for k in value if type(k) is str)):
        return "namespace dict"
    if _hashable(value) and value in _UNGUARDED_BUILTINS:
        return f"unguarded builtin {value.__name__}"
    if callable(value) and not isinstance(value, type):
        module = getattr(value, "__module__", None)
        if type(module) is str and module in _SYSTEM_MODULES:
            return f"function of {module}"
    return None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except Exception:  # noqa: BLE001
        return False
    return True


def _skill_objects(ns: RunNamespace) -> dict[str, Any]:
    """What :data:`MADE_BY_SKILL` makes, run as a skill would run it."""
    code = compile_source(MADE_BY_SKILL, "<skill:reach>", tuple(sorted(VETTED_MODULES))).code
    exec(code, ns.globals)  # noqa: S102 - policy-compiled, in a run namespace
    return ns.globals["made"]()


def _c_exceptions() -> dict[str, Any]:
    """Exceptions as trusted C code raises them: AttributeError carries ``obj``."""
    out = {}
    for label, thunk in (("attribute_error", lambda: (1).nope),
                         ("attribute_error_str", lambda: "x".nope),
                         ("key_error", lambda: {}["k"]),
                         ("type_error", lambda: len(1))):
        try:
            thunk()
        except Exception as exc:  # noqa: BLE001
            out[label] = exc
    return out


def walk() -> dict[str, Any]:
    modules = tuple(sorted(VETTED_MODULES))
    proxies = build_module_proxies(modules, freeze=True)
    ns = RunNamespace(proxies, {}, 10_000, lambda text: None)
    fproxy = proxies["functools"]
    roots: dict[str, Any] = {
        f"builtins.{k}": v for k, v in ns.globals["__builtins__"].items()
        if not k.startswith("_")
    }
    roots.update({f"module.{k}": v for k, v in proxies.items()})
    samples = {"str": "x", "bytes": b"x", "int": 1, "float": 1.5, "list": [1], "dict": {"a": 1},
               "tuple": (1,), "set": {1}, "range": range(3), "none": None,
               "date": datetime.datetime(2020, 1, 1), "print": ns.output._call_print}
    roots.update({f"sample.{k}": v for k, v in samples.items()})
    roots.update({f"sample.{k}": v for k, v in _skill_objects(ns).items()})
    roots.update({f"sample.{k}": v for k, v in _c_exceptions().items()})

    def wrappers(obj: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        makers = [("functools.cache", lambda x: fproxy.cache(x)),
                  ("functools.lru_cache(None)", lambda x: fproxy.lru_cache(maxsize=None)(x)),
                  ("functools.partial", lambda x: fproxy.partial(x))]
        for label, make in makers:
            try:
                out.append((label, make(obj)))
            except Exception:  # noqa: BLE001 - not callable: not wrappable that way
                pass
        try:
            holder = ns.globals["__metaclass__"](
                "Holder", (), {"m": classmethod(obj), "s": staticmethod(obj)})
            out.append(("classmethod", holder.m))
            out.append(("staticmethod", holder.s))
        except Exception:  # noqa: BLE001
            pass
        return out

    seen: set[int] = set()
    keep: list[Any] = []  # wrappers stay alive, so their ids are never reused mid-walk
    found: list[list[str]] = []
    refused: list[str] = []
    guarded = 0
    # (path, object, depth, inside a wrapper)
    queue: collections.deque[tuple[str, Any, int, bool]] = collections.deque(
        (path, obj, 0, False) for path, obj in roots.items())
    while queue:
        path, obj, depth, wrapped = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        why = danger(obj)
        if why is not None:
            found.append([path, why])
            continue
        if depth >= DEPTH:
            continue
        nxt: list[tuple[str, Any]] = []
        try:
            names = dir(obj)
        except Exception:  # noqa: BLE001
            names = []
        for name in names:
            if type(name) is not str or name.startswith("_"):
                continue
            if name in SENSITIVE_ATTRS or name.endswith("__roles__"):
                guarded += 1
                try:
                    value = guarded_getattr(obj, name)
                except Exception:  # noqa: BLE001 - refused (or missing)
                    refused.append(f"{path}.{name}")
                    continue
            else:
                try:
                    value = getattr(obj, name)
                except Exception:  # noqa: BLE001
                    continue
            nxt.append((f"{path}.{name}", value))
        if type(obj) in (tuple, list, set, frozenset, collections.deque):
            nxt.extend((f"{path}[{i}]", v) for i, v in enumerate(list(obj)[:200]))
        elif type(obj) in (dict, types.MappingProxyType):
            for k, v in list(obj.items())[:200]:
                nxt.append((f"{path}[{k!r}]", v))
                nxt.append((f"{path}.key({k!r})", k))
        if not wrapped and depth < WRAP_DEPTH:
            for label, value in wrappers(obj):
                keep.append(value)
                queue.append((f"{label}({path})", value, depth + 1, True))
        for p, v in nxt:
            if not isinstance(v, (int, float, str, bytes, bool, type(None))) or danger(v):
                queue.append((p, v, depth + 1, wrapped))
    return {"objects": len(seen), "guarded": guarded, "refused": refused, "found": found}


if __name__ == "__main__":
    json.dump(walk(), sys.stdout)
