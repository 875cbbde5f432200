"""The run-time half of the policy: what skill code can reach once compiled.

Used inside the worker process only. Everything here is trusted code that handles
untrusted objects, so it never calls methods of skill objects except through the
interpreter's own C-level operations, and it converts results with exact type checks.
"""

from __future__ import annotations

import abc as _abc
import builtins as _builtins
import collections as _collections
import enum as _enum
import functools as _functools
import importlib
import math
import operator
import string as _string
import types as _types
from typing import Any, Callable

from RestrictedPython.Guards import safe_builtins
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from .models import ToolError
from .policy import VETTED_MODULES
from .protocol import utf8_head, utf8_len

__all__ = [
    "ModuleProxy",
    "build_module_proxies",
    "RunNamespace",
    "to_plain",
    "NotPlainJSON",
    "guarded_getattr",
]


# --------------------------------------------------------------------------------------
# Module proxies
# --------------------------------------------------------------------------------------
class ModuleProxy:
    """A read-only stand-in for an allowed module: vetted functions, classes, constants.

    Never the module itself (``json.codecs.open`` and ``statistics.sys.modules`` are the
    reasons): submodules, other modules' objects that are not functions/classes, mutable
    containers and unknown callables are simply absent.

    A proxy has no ``__name__``: when ``from M import x`` finds no ``x``, CPython's
    ``IMPORT_FROM`` falls back to ``sys.modules[M.__name__ + ".x"]``, which handed out
    real submodules (``from json import scanner`` reached ``scanner.re.enum.sys``).
    Without a ``__name__`` that fallback fails with an ``ImportError``.
    """

    __slots__ = ("__dict__", "_sandbox_name")

    def __init__(self, name: str, members: dict[str, Any]) -> None:
        d = object.__getattribute__(self, "__dict__")
        d.update(members)
        d.pop("__name__", None)
        object.__setattr__(self, "_sandbox_name", name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("sandbox modules are read-only")

    def __delattr__(self, name: str) -> None:
        raise TypeError("sandbox modules are read-only")

    def __getattr__(self, name: str) -> Any:
        # Only called when the attribute is missing; a fresh error with no object in it.
        module = _proxy_name(self)
        raise AttributeError(f"module {module!r} has no attribute {name!r} in the sandbox")

    def __repr__(self) -> str:
        return f"<sandbox module {_proxy_name(self)!r}>"

    def __reduce__(self):  # pragma: no cover - never pickled; refuse if it ever is
        raise TypeError("sandbox modules cannot be pickled")


_PROXY_NAME = ModuleProxy.__dict__["_sandbox_name"]


def _proxy_name(proxy: ModuleProxy) -> str:
    """The module name of a proxy (trusted code only; skill code cannot read it)."""
    return _PROXY_NAME.__get__(proxy, ModuleProxy)


_CONSTANT_TYPES = (int, float, complex, str, bytes, bool, type(None))


def _is_constant(value: Any, depth: int = 0) -> bool:
    if type(value) in _CONSTANT_TYPES:
        return True
    if type(value) in (tuple, frozenset) and depth < 3:
        return all(_is_constant(v, depth + 1) for v in value)
    return False


#: Class-level containers of an exposed class are shared by every run a worker serves,
#: and their mutating methods (``.update``, ``.append``, ``operator.ior``) and item writes
#: to a plain ``dict`` need no write guard: ``textwrap.TextWrapper.unicode_whitespace_trans``
#: let one skill rewrite what ``textwrap.fill`` returned to the next (and park objects
#: there across runs). In a worker they are replaced by read-only equivalents; a class
#: whose shared state cannot be frozen is not exposed.
_FROZEN_FORM: dict[type, Callable[[Any], Any]] = {
    dict: _types.MappingProxyType,
    list: tuple,
    set: frozenset,
    bytearray: bytes,
}
_MUTABLE_CONTAINERS = (dict, list, set, bytearray, _collections.deque)
_CLASS_DICT = type.__dict__["__dict__"]
_CLASS_MRO = type.__dict__["__mro__"]


def shared_class_state(cls: type) -> list[tuple[type, str, Any]]:
    """Public class-level attributes of ``cls`` and its bases that are mutable containers."""
    found = []
    for base in _CLASS_MRO.__get__(cls):
        for attr, value in list(_CLASS_DICT.__get__(base).items()):
            if type(attr) is str and not attr.startswith("_") and isinstance(
                value, _MUTABLE_CONTAINERS
            ):
                found.append((base, attr, value))
    return found


def _freeze_class_state(cls: type) -> bool:
    """Make the shared class-level containers of ``cls`` read-only (worker only)."""
    for base, attr, value in shared_class_state(cls):
        frozen = _FROZEN_FORM.get(type(value))
        if frozen is None:
            return False
        try:
            setattr(base, attr, frozen(value))
        except (TypeError, AttributeError):
            return False
    return not shared_class_state(cls)


def _vetted_member(value: Any, module: str, freeze: bool = False) -> bool:
    if isinstance(value, _types.ModuleType):
        return False
    if isinstance(value, _types.MethodType):
        # random.random and friends: methods of the module's own hidden instance (whose
        # ``__self__`` stays out of reach: dunder).
        owner = value.__self__
        return not isinstance(owner, type) and type(owner).__module__ == module
    if isinstance(value, type):
        if issubclass(value, type):  # no metaclasses: no 3-argument type()
            return False
        if freeze:
            return _freeze_class_state(value)
        return not shared_class_state(value)
    if isinstance(value, (_types.FunctionType, _types.BuiltinFunctionType)):
        return True
    if isinstance(value, _enum.Enum):  # re.IGNORECASE and friends
        return True
    return _is_constant(value)


# --------------------------------------------------------------------------------------
# Replacements for members that would carry objects out of the guard's sight
# --------------------------------------------------------------------------------------
#: What ``update_wrapper`` copies in the sandbox: names only. Its default also copies the
#: wrapped object's ``__dict__`` into the wrapper, so ``functools.cache(str).format`` was
#: ``str.format`` held by an object the attribute guard does not know (CVE-2023-41039
#: again): a class's whole namespace, under its own names, on a new holder.
_WRAPPER_ASSIGNED = ("__module__", "__name__", "__qualname__", "__doc__")


def _cache_wrapper(user_function: Any, maxsize: int | None, typed: bool) -> Any:
    make: Any = getattr(_functools, "_lru_cache_wrapper")  # noqa: B009 - private C type
    wrapper: Any = make(user_function, maxsize, typed, getattr(_functools, "_CacheInfo"))  # noqa: B009
    wrapper.cache_parameters = _functools.partial(dict, maxsize=maxsize, typed=typed)
    return _functools.update_wrapper(wrapper, user_function, assigned=_WRAPPER_ASSIGNED,
                                     updated=())


def lru_cache(maxsize: Any = 128, typed: bool = False) -> Any:
    """``functools.lru_cache`` (same arguments and results), except that the wrapper gets
    the wrapped function's names and docstring only, never its ``__dict__``."""
    if isinstance(maxsize, int) and not isinstance(maxsize, bool):
        maxsize = max(maxsize, 0)
    elif callable(maxsize) and isinstance(typed, bool):  # used as a bare @lru_cache
        return _cache_wrapper(maxsize, 128, typed)
    elif maxsize is not None:
        raise TypeError("Expected first argument to be an integer, a callable, or None")

    def decorating_function(user_function: Any) -> Any:
        return _cache_wrapper(user_function, maxsize, typed)

    return decorating_function


def cache(user_function: Any) -> Any:
    """``functools.cache``: ``lru_cache(maxsize=None)`` of the sandbox."""
    return _cache_wrapper(user_function, None, False)


#: Module members replaced in the proxies (the rest of the module is exposed as vetted).
_REPLACED_MEMBERS: dict[str, dict[str, Any]] = {
    "functools": {"lru_cache": lru_cache, "cache": cache},
}


def build_module_proxy(name: str, freeze: bool = False) -> ModuleProxy:
    """The proxy of one vetted module. ``freeze=True`` (worker processes only) replaces
    mutable class-level state of exposed classes by read-only equivalents in place;
    without it such classes are left out."""
    if name not in VETTED_MODULES:
        raise ValueError(f"module {name!r} has not been vetted for the sandbox")
    module = importlib.import_module(name)
    rule = VETTED_MODULES[name]
    only = set(rule) - {"*"} if "*" in rule else None
    members: dict[str, Any] = {}
    for attr in dir(module):
        if attr.startswith("_"):
            continue
        if only is not None and attr not in only:
            continue
        if only is None and attr in rule:
            continue
        value = getattr(module, attr)
        if _vetted_member(value, name, freeze):
            members[attr] = value
    for attr, replacement in _REPLACED_MEMBERS.get(name, {}).items():
        if attr in members:
            members[attr] = replacement
    return ModuleProxy(name, members)


def build_module_proxies(names: tuple[str, ...], freeze: bool = False) -> dict[str, ModuleProxy]:
    return {name: build_module_proxy(name, freeze) for name in names}


# --------------------------------------------------------------------------------------
# Attribute guards
# --------------------------------------------------------------------------------------
_FORMATTER_METHODS = frozenset({"format", "get_field", "get_value", "vformat"})


_METHOD_FUNC = _types.MethodType.__func__
#: Types whose ``format``/``format_map`` run ``str.format`` on a format string that need
#: not be a literal of the skill (field names walk attributes: CVE-2023-41039).
_FORMATTING_TYPES = (str, _collections.UserString)


def check_attribute(obj: Any, name: Any) -> None:
    """Raise if skill code may not read ``obj.<name>``.

    The checks of RestrictedPython's ``safer_getattr`` (no ``_`` names, no frame/code
    attributes, no ``str.format``/``format_map``, no ``string.Formatter``), plus no
    ``.obj`` on exceptions (CVE-2024-47532).
    """
    if type(name) is not str:
        raise TypeError("attribute name must be a str")
    if name.startswith("_"):
        raise AttributeError(
            f'"{name}" is an invalid attribute name because it starts with "_"'
        )
    if isinstance(obj, _types.GenericAlias):
        # ``list[int].x`` is ``list.x``: a generic alias forwards attribute reads to its
        # origin, so ``collections.UserDict[int].register`` and an alias built around a
        # str (``str.format``) or an exception (``.obj``) must be judged by the origin.
        check_attribute(_types.GenericAlias.__origin__.__get__(obj), name)
    elif isinstance(obj, _types.MethodType):
        # Bound methods forward attribute reads to their function, and the method type
        # binds any callable: ``MethodType(str, 1).format`` was ``str.format``.
        check_attribute(_METHOD_FUNC.__get__(obj), name)
    if name.endswith("__roles__"):
        raise AttributeError(f'"{name}" is an invalid attribute name')
    if name in INSPECT_ATTRIBUTES:
        raise AttributeError(f'"{name}" is a restricted name, forbidden in the sandbox')
    if name in ("format", "format_map") and (
        isinstance(obj, _FORMATTING_TYPES)
        or (isinstance(obj, type) and issubclass(obj, _FORMATTING_TYPES))
    ):
        # UserString.format/format_map call str.format on a string the skill chose.
        raise NotImplementedError("Using the format*() methods of `str` is not safe")
    if name == "Formatter" and (
        obj is _string or (type(obj) is ModuleProxy and _proxy_name(obj) == "string")
    ):
        raise NotImplementedError("string.Formatter is not safe")
    if name in _FORMATTER_METHODS and (
        isinstance(obj, _string.Formatter)
        or (isinstance(obj, type) and issubclass(obj, _string.Formatter))
    ):
        raise NotImplementedError("Using string.Formatter methods is not safe")
    if name == "obj" and isinstance(obj, BaseException):
        raise AttributeError('"obj" of exceptions is not accessible in the sandbox')
    if name == "register" and isinstance(obj, type):
        # ABCMeta.register would change isinstance() for every later run in the worker.
        raise AttributeError('"register" of classes is not accessible in the sandbox')


_METHOD_SELF = _types.BuiltinMethodType.__self__  # type: ignore[attr-defined]
_STR_FORMATTERS = frozenset({str.__dict__["format"], str.__dict__["format_map"]})
_USERSTRING_FORMATTERS = frozenset({_collections.UserString.__dict__["format"],
                                    _collections.UserString.__dict__["format_map"]})
_FORMATTER_FUNCTIONS = frozenset(
    v for k, v in vars(_string.Formatter).items() if isinstance(v, _types.FunctionType)
)
_REGISTER = _abc.ABCMeta.register
#: Objects no attribute read may hand to skill code, whoever holds them.
_HIDDEN_VALUE_TYPES = (_types.ModuleType, _types.FrameType, _types.CodeType,
                       _types.TracebackType)


def refused_value(value: Any) -> str | None:
    """Why skill code may not receive ``value`` from an attribute read, or None.

    The name checks of :func:`check_attribute` judge an attribute by its holder; an
    object that copies attributes from another (``update_wrapper`` copied a class's
    namespace onto a cache wrapper) or binds them moves a dangerous one to a holder they
    do not recognise. This judges the value itself: ``str.format``/``format_map`` in any
    form (CVE-2023-41039), ``string.Formatter``, modules, frames, code objects,
    tracebacks (CVE-2023-37271), the ``obj`` member of exceptions (CVE-2024-47532), ABC
    ``register`` and namespace dicts (``__globals__``)."""
    t = type(value)
    if t is _types.MethodDescriptorType:
        if value in _STR_FORMATTERS:
            return "Using the format*() methods of `str` is not safe"
    elif t is _types.BuiltinMethodType:
        if value.__name__ in ("format", "format_map") and isinstance(
            _METHOD_SELF.__get__(value), str
        ):
            return "Using the format*() methods of `str` is not safe"
    elif t is _types.FunctionType:
        if value in _USERSTRING_FORMATTERS:
            return "Using the format*() methods of `str` is not safe"
        if value in _FORMATTER_FUNCTIONS or value is _REGISTER:
            return "this function is not accessible in the sandbox"
    elif t is _types.MethodType:
        return refused_value(_METHOD_FUNC.__get__(value))
    elif t is _types.MemberDescriptorType or t is _types.GetSetDescriptorType:
        owner = value.__objclass__
        if value.__name__ == "obj" and isinstance(owner, type) and issubclass(
            owner, BaseException
        ):
            return '"obj" of exceptions is not accessible in the sandbox'
    elif t is dict:
        if "__builtins__" in value:
            return "namespace dicts are not accessible in the sandbox"
    elif isinstance(value, _HIDDEN_VALUE_TYPES):
        return f"{t.__name__} objects are not accessible in the sandbox"
    elif value is _string.Formatter or isinstance(value, _string.Formatter) or (
        isinstance(value, type) and issubclass(value, _string.Formatter)
    ):
        return "string.Formatter is not safe"
    return None


def guarded_getattr(obj: Any, name: Any, *default: Any) -> Any:
    """``getattr`` for skill code (and the ``_getattr_`` hook): policy checks first, then
    Python semantics (a missing attribute raises unless a default is given), then the
    value itself (:func:`refused_value`)."""
    check_attribute(obj, name)
    if default:
        if len(default) > 1:
            raise TypeError("getattr expected at most 3 arguments")
        value = getattr(obj, name, default[0])
    else:
        value = getattr(obj, name)
    problem = refused_value(value)
    if problem is not None:
        raise NotImplementedError(problem)
    return value


def guarded_hasattr(obj: Any, name: Any) -> bool:
    try:
        guarded_getattr(obj, name)
    except AttributeError:
        return False
    except NotImplementedError:
        return False
    return True


class _ReadOnly:
    """What ``_write_`` returns for objects skill code may not modify."""

    __slots__ = ("_ob",)

    def __init__(self, ob: Any) -> None:
        object.__setattr__(self, "_ob", ob)

    def _deny(self, what: str) -> TypeError:
        kind = type(object.__getattribute__(self, "_ob")).__name__
        return TypeError(f"cannot {what} of {kind!r} objects in the sandbox")

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._deny(f"set attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        raise self._deny(f"delete attribute {name!r}")

    def __getattr__(self, name: str) -> Any:
        raise self._deny(f"modify attribute {name!r}")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise self._deny("assign items")

    def __delitem__(self, key: Any) -> None:
        raise self._deny("delete items")

    def __getitem__(self, key: Any) -> Any:
        raise self._deny("modify items")


class _ItemWriter:
    """Item writes allowed (dict/list subclasses, deque...), attribute writes refused."""

    __slots__ = ("_ob",)

    def __init__(self, ob: Any) -> None:
        object.__setattr__(self, "_ob", ob)

    def __setitem__(self, key: Any, value: Any) -> None:
        object.__getattribute__(self, "_ob")[key] = value

    def __delitem__(self, key: Any) -> None:
        del object.__getattribute__(self, "_ob")[key]

    def __getitem__(self, key: Any) -> Any:
        return object.__getattribute__(self, "_ob")[key]

    def __setattr__(self, name: str, value: Any) -> None:
        kind = type(object.__getattribute__(self, "_ob")).__name__
        raise TypeError(f"cannot set attribute {name!r} of {kind!r} objects in the sandbox")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        kind = type(object.__getattribute__(self, "_ob")).__name__
        raise TypeError(f"cannot modify attribute {name!r} of {kind!r} objects in the sandbox")


#: Item writes are allowed on these and their *real* subclasses (checked through the
#: MRO, never ``isinstance``: ABC ``register`` must not be able to widen the set).
_ITEM_WRITABLE = frozenset({
    dict,
    list,
    bytearray,
    _collections.deque,
    _collections.UserDict,
    _collections.UserList,
    _collections.ChainMap,
})


def _item_writable(t: type) -> bool:
    for base in type.__dict__["__mro__"].__get__(t):
        if base in _ITEM_WRITABLE:
            return True
    return False

_HIDDEN_TYPES: set[type] = {ModuleProxy, _ReadOnly, _ItemWriter}

#: Builtin value types whose C code reads the value directly (hashing in dict/set
#: lookups, re's and _strptime's caches, str methods) while ``==``/``hash()`` in Python
#: would call a Python-level method.
_VALUE_TYPES = (str, bytes, int, float, complex, tuple, frozenset)
_IDENTITY_METHODS = ("__eq__", "__ne__", "__hash__")


def value_type_problem(cls: type) -> str | None:
    """Why ``cls`` may not exist in the sandbox, or None.

    A class deriving from a builtin value type (``str``, ``int``, ...) together with a
    Python-level ``__eq__``/``__ne__``/``__hash__`` (its own, or inherited, e.g. from
    ``collections.UserString`` or ``UserDict``) hashes and compares as one value while C
    code reads another: such objects poisoned the regex and strptime caches.
    """
    mro = _CLASS_MRO.__get__(cls)
    if not any(base in _VALUE_TYPES for base in mro):
        return None
    for base in mro:
        if base is object or base in _VALUE_TYPES:
            continue
        for attr in _IDENTITY_METHODS:
            if isinstance(_CLASS_DICT.__get__(base).get(attr), _types.FunctionType):
                return (f"class {cls.__name__} combines a builtin value type with a "
                        f"Python-level {attr} (from {base.__name__}): not allowed in the sandbox")
    return None
#: ``type(x)`` refuses these too: their constructors wrap any object in one that
#: forwards attribute reads to it (``type(list[int])(str, ())``, ``type(print)(str, 1)``).
_NO_TYPE_OF = frozenset({_types.GenericAlias, _types.MethodType})


def _check_public(name: Any) -> None:
    if type(name) is not str:
        raise TypeError("attribute name must be a str")
    if name.startswith("_") or name.endswith("__roles__"):
        raise AttributeError(f'"{name}" is an invalid attribute name because it starts with "_"')


# --------------------------------------------------------------------------------------
# Result conversion
# --------------------------------------------------------------------------------------
class NotPlainJSON(TypeError):
    pass


MAX_DEPTH = 100


def to_plain(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` made of exact JSON types only (tuples become lists).

    Exact type checks, never ``isinstance``: a ``str`` subclass with an ``__eq__`` is not
    a string here. Nothing of the input object survives into the output.
    """
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        if not math.isfinite(value):
            raise NotPlainJSON(f"{value!r} is not a JSON number")
        return value
    if depth >= MAX_DEPTH:
        raise NotPlainJSON(f"value is nested more than {MAX_DEPTH} levels deep")
    if t is list or t is tuple:
        return [to_plain(item, depth + 1) for item in value]
    if t is dict:
        out = {}
        for key, item in value.items():
            kt = type(key)
            if kt is str:
                pass
            elif kt is int:
                key = str(key)
            elif kt is bool or key is None:
                key = "true" if key is True else "false" if key is False else "null"
            elif kt is float and math.isfinite(key):
                key = repr(key)
            else:
                raise NotPlainJSON(f"dict key of type {kt.__name__} is not JSON")
            out[key] = to_plain(item, depth + 1)
        return out
    raise NotPlainJSON(
        f"value of type {t.__name__} is not plain JSON (return dict, list, str, int, "
        "float, bool or None)"
    )


# --------------------------------------------------------------------------------------
# Builtins
# --------------------------------------------------------------------------------------
_EXTRA_BUILTINS = {
    name: getattr(_builtins, name)
    for name in (
        "list dict set frozenset tuple sorted min max sum enumerate zip map filter any all "
        "reversed range iter next format bin bytes bytearray object property staticmethod "
        "classmethod NotImplemented ExceptionGroup BaseExceptionGroup StopAsyncIteration "
        "RecursionError ConnectionError TimeoutError LookupError ArithmeticError"
    ).split()
}

#: Not offered: ``id`` gave every object's address, and the addresses of interned strings
#: told which strings other code had interned before the run (issue 23).
_FORBIDDEN = {"__import__", "setattr", "delattr", "_getattr_", "id"}


def _base_builtins() -> dict[str, Any]:
    base = {k: v for k, v in safe_builtins.items() if k not in _FORBIDDEN}
    base.update(_EXTRA_BUILTINS)
    base["getattr"] = guarded_getattr
    base["hasattr"] = guarded_hasattr
    base["ToolError"] = ToolError
    return base


BASE_BUILTINS = _base_builtins()


class _Abort(Exception):
    """Never raised into skill code; the worker ends the process instead."""


class PrintCollector:
    """``print`` for one run: shared by every function, capped, abort on overflow."""

    __slots__ = ("parts", "size", "cap", "closed", "on_overflow")

    def __init__(self, cap: int, on_overflow: Callable[[str], None]) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.cap = cap
        self.closed = False
        self.on_overflow = on_overflow

    def __call__(self) -> str:  # ``printed``
        return "".join(self.parts)

    def write(self, text: str) -> None:
        if self.closed:
            return
        if type(text) is not str:
            text = str(text)
        size = len(text) if text.isascii() else utf8_len(text)  # UTF-8 bytes
        room = self.cap - self.size
        if size > room:
            # One byte past the cap (whole characters) reaches the host, which measures
            # the output itself and reports the limit.
            self.parts.append(utf8_head(text, max(room, 0) + 1))
            self.size = self.cap + 1
            self.closed = True
            self.on_overflow("".join(self.parts))
            return
        self.parts.append(text)
        self.size += size

    def _call_print(self, *objects: Any, sep: Any = " ", end: Any = "\n", file: Any = None,
                    flush: Any = False) -> None:
        if file is not None:
            raise TypeError("print(file=...) is not available in the sandbox")
        if sep is None:
            sep = " "
        if end is None:
            end = "\n"
        if type(sep) is not str or type(end) is not str:
            raise TypeError("sep and end must be str")
        self.write(sep.join([str(o) for o in objects]) + end)


class RunNamespace:
    """Builds the globals of one run and keeps its per-run state (classes, output)."""

    def __init__(
        self,
        proxies: dict[str, ModuleProxy],
        tools: dict[str, Callable[..., Any]],
        output_cap: int,
        on_output_overflow: Callable[[str], None],
    ) -> None:
        self.classes: set[type] = set()
        self.output = PrintCollector(output_cap, on_output_overflow)
        self.proxies = proxies
        classes = self.classes

        def _write_(ob: Any) -> Any:
            t = type(ob)
            if t is dict or t is list or t in classes:
                return ob
            if t is type and ob in classes:
                return ob
            if _item_writable(t):
                return _ItemWriter(ob)
            return _ReadOnly(ob)

        def guarded_setattr(obj: Any, name: Any, value: Any) -> None:
            _check_public(name)
            setattr(_write_(obj), name, value)

        def guarded_delattr(obj: Any, name: Any) -> None:
            _check_public(name)
            delattr(_write_(obj), name)

        def metaclass(name: str, bases: tuple, ns: dict) -> type:
            for base in bases:
                if not isinstance(base, type) or issubclass(base, type):
                    raise TypeError("classes in the sandbox must derive from plain classes")
                if base in _HIDDEN_TYPES:
                    raise TypeError(f"cannot subclass {base.__name__} in the sandbox")
            cls = type(name, bases, ns)
            problem = value_type_problem(cls)
            if problem is not None:
                raise TypeError(problem)
            classes.add(cls)
            return cls

        def guarded_type(*args: Any) -> type:
            if len(args) != 1:
                raise TypeError("type() takes exactly one argument in the sandbox")
            t = type(args[0])
            if issubclass(t, type) or t in _HIDDEN_TYPES or t in _NO_TYPE_OF:
                raise TypeError("type() of this object is not available in the sandbox")
            return t

        def guarded_import(name: Any, globals: Any = None, locals: Any = None,
                           fromlist: Any = (), level: Any = 0) -> ModuleProxy:
            if level != 0 or type(name) is not str or name not in proxies:
                allowed = ", ".join(sorted(proxies)) or "none"
                raise ImportError(f"import of {name!r} is not allowed (allowed: {allowed})")
            return proxies[name]

        def apply(f: Any, *args: Any, **kwargs: Any) -> Any:
            return f(*args, **kwargs)

        def inplacevar(op: str, x: Any, y: Any) -> Any:
            fn = _INPLACE.get(op)
            if fn is None:
                raise SyntaxError(f"unsupported in-place operator {op!r}")
            return fn(x, y)

        output = self.output

        def print_factory(_getattr_: Any = None) -> PrintCollector:
            return output

        b = dict(BASE_BUILTINS)
        b.update(tools)
        b["__import__"] = guarded_import
        b["setattr"] = guarded_setattr
        b["delattr"] = guarded_delattr
        b["type"] = guarded_type
        self.globals: dict[str, Any] = {
            "__builtins__": b,
            "__name__": "skill",
            "__metaclass__": metaclass,
            "_getattr_": guarded_getattr,
            "_getitem_": operator.getitem,
            "_getiter_": iter,
            "_iter_unpack_sequence_": _iter_unpack_sequence,
            "_unpack_sequence_": _unpack_sequence,
            "_write_": _write_,
            # Names of the inline fast path of _write_ (see policy._inline_write_guard).
            "_type_": type,
            "_dict_": dict,
            "_list_": list,
            "_sandbox_classes_": classes,
            "_inplacevar_": inplacevar,
            "_apply_": apply,
            "_print_": print_factory,
        }

    def close(self) -> None:
        self.output.closed = True
        self.globals.clear()
        self.classes.clear()


def _iter_unpack_sequence(it: Any, spec: Any, _getiter_: Any) -> Any:
    # Our _getiter_ is ``iter``: guarding each element's unpacking adds nothing.
    return iter(it)


def _unpack_sequence(it: Any, spec: Any, _getiter_: Any) -> Any:
    return list(iter(it))


_INPLACE = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "@=": operator.imatmul,
}
