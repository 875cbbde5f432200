"""The compile-time policy: which Python a skill may be written in.

Skill code is compiled with RestrictedPython's ``RestrictingNodeTransformer``, subclassed
here. The subclass changes three things, each argued in ``sandbox/README.md``:

* imports are checked statically against the allow-list (no relative imports, no
  submodules), so ``check_source`` rejects ``import os`` before anything runs;
* augmented assignment to items and attributes (``counts[k] += 1``) is allowed, with the
  container passed through the write guard, like a plain item/attribute store;
* reads whose guard is provably the identity compile to native bytecode: attribute loads
  of a constant public name outside ``SENSITIVE_ATTRS``, subscript loads, in-place
  operators on plain names and tuple unpacking. ``safer_getattr`` allows every such name
  on every object, and our ``_getitem_``/``_getiter_``/``_inplacevar_``/unpack guards
  (like RestrictedPython's defaults) do not restrict anything, so the native operation
  is what the guard would have done, minus a Python-level call. Every write, every
  sensitive or dynamic attribute name, every iteration and every ``f(*a, **k)`` still
  goes through a guard.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

from RestrictedPython import compile_restricted_exec
from RestrictedPython.transformer import (
    INSPECT_ATTRIBUTES,
    RestrictingNodeTransformer,
    copy_locations,
)

from .models import PolicyViolation

__all__ = [
    "DEFAULT_MODULES",
    "VETTED_MODULES",
    "SENSITIVE_ATTRS",
    "CompiledSource",
    "check_source",
    "compile_source",
    "source_digest",
    "validate_modules",
]

#: Modules a skill may import by default.
DEFAULT_MODULES: tuple[str, ...] = (
    "math",
    "json",
    "re",
    "datetime",
    "itertools",
    "collections",
    "statistics",
)

#: Every module the sandbox knows how to expose safely, with the public names it hides
#: ("*" followed by names means: expose only those names). A module outside this table
#: cannot be allowed: each one was read for attribute/item access done on behalf of the
#: caller, file or process access, and shared mutable state.
VETTED_MODULES: dict[str, frozenset[str]] = {
    "math": frozenset(),
    "cmath": frozenset(),
    "json": frozenset(),
    "re": frozenset(),
    "datetime": frozenset(),
    "itertools": frozenset(),
    "collections": frozenset(),
    "statistics": frozenset(),
    "string": frozenset({"Formatter"}),  # Formatter.get_field walks attributes (CVE-2023-41039)
    "textwrap": frozenset(),
    "fractions": frozenset(),
    "decimal": frozenset({"setcontext", "DefaultContext", "BasicContext", "ExtendedContext"}),
    "bisect": frozenset(),
    "heapq": frozenset(),
    "difflib": frozenset(),
    "unicodedata": frozenset(),
    "base64": frozenset(),
    "hashlib": frozenset({"file_digest"}),
    "random": frozenset({"SystemRandom"}),
    # Process-global clock/timezone changes (seccomp and the dropped uid refuse them too).
    "time": frozenset({"clock_settime", "clock_settime_ns", "tzset"}),
    # attrgetter/methodcaller read any attribute by name; setitem/delitem bypass _write_.
    "operator": frozenset({"attrgetter", "methodcaller", "setitem", "delitem"}),
    # update_wrapper/wraps copy arbitrary (dunder) attributes between objects.
    "functools": frozenset({"*", "reduce", "partial", "cmp_to_key", "lru_cache", "cache"}),
}

#: Attribute names that always go through ``_getattr_`` (their safety depends on the
#: object): str.format/format_map and the Formatter methods (CVE-2023-41039), frame and
#: code attributes (CVE-2023-37271; most are also refused at compile time),
#: ``obj`` (AttributeError.obj, CVE-2024-47532) and ``register`` (ABC registration would
#: change ``isinstance`` for later runs in the same worker).
SENSITIVE_ATTRS: frozenset[str] = frozenset(INSPECT_ATTRIBUTES) | frozenset(
    {"format", "format_map", "Formatter", "get_field", "get_value", "vformat", "obj",
     "register"}
)

#: The largest skill source, in UTF-8 bytes, checked before anything parses it.
MAX_SOURCE_BYTES = 512 * 1024
MAX_SOURCE_CHARS = MAX_SOURCE_BYTES  # the name older callers use; a character is >= 1 byte
_LINE_RE = re.compile(r"^Line (\d+): ")


def validate_modules(modules: object) -> tuple[str, ...]:
    """Check a configured allow-list; returns it as a sorted tuple."""
    if isinstance(modules, str) or not hasattr(modules, "__iter__"):
        raise TypeError("allowed_modules must be an iterable of module names")
    names = []
    for name in modules:  # type: ignore[attr-defined]
        if not isinstance(name, str):
            raise TypeError(f"module names must be str, got {type(name).__name__}")
        if name not in VETTED_MODULES:
            raise ValueError(
                f"module {name!r} has not been vetted for the sandbox; "
                f"choose from {sorted(VETTED_MODULES)}"
            )
        names.append(name)
    return tuple(sorted(set(names)))


def _plain_attr(name: str) -> bool:
    return (
        not name.startswith("_")
        and not name.endswith("__roles__")
        and name not in SENSITIVE_ATTRS
    )


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy plus static imports, item ``+=`` and native safe reads."""

    allowed_modules: frozenset[str] = frozenset(DEFAULT_MODULES)

    # -- imports ---------------------------------------------------------------------
    def _check_module(self, node: ast.AST, module: str | None) -> None:
        if module not in self.allowed_modules:
            allowed = ", ".join(sorted(self.allowed_modules)) or "none"
            self.error(node, f'import of module "{module}" is not allowed (allowed: {allowed})')

    def visit_Import(self, node: ast.Import) -> ast.AST:
        for alias in node.names:
            self._check_module(node, alias.name)
        return super().visit_Import(node)  # type: ignore[return-value]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        if node.level:
            self.error(node, "relative imports are not allowed")
        else:
            self._check_module(node, node.module)
        return super().visit_ImportFrom(node)  # type: ignore[return-value]

    # -- native reads where the guard is the identity ---------------------------------
    def visit_Attribute(self, node: ast.Attribute):  # type: ignore[override]
        if isinstance(node.ctx, ast.Load) and _plain_attr(node.attr):
            return self.node_contents_visit(node)
        return _inline_write_guard(super().visit_Attribute(node), "_sandbox_classes_")

    def visit_Subscript(self, node: ast.Subscript):  # type: ignore[override]
        if isinstance(node.ctx, ast.Load):
            return self.node_contents_visit(node)
        return _inline_write_guard(super().visit_Subscript(node), None)

    def visit_Assign(self, node: ast.Assign):  # type: ignore[override]
        # Targets are still visited: item/attribute stores get the write guard.
        return self.node_contents_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign):  # type: ignore[override]
        return self.node_contents_visit(node)

    def guard_iter(self, node):  # type: ignore[override]
        node = self.node_contents_visit(node)
        new_iter = ast.Call(
            func=ast.Name("_getiter_", ast.Load()), args=[node.iter], keywords=[]
        )
        copy_locations(new_iter, node.iter)
        node.iter = new_iter
        return node

    def visit_AugAssign(self, node: ast.AugAssign):  # type: ignore[override]
        target = node.target
        if isinstance(target, ast.Name):
            return self.node_contents_visit(node)
        if isinstance(target, ast.Attribute) and not _plain_attr(target.attr):
            self.error(node, f'"{target.attr}" cannot be the target of an augmented assignment')
            return node
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            node.value = self.visit(node.value)
            target.value = self.visit(target.value)
            if isinstance(target, ast.Subscript):
                target.slice = self.visit(target.slice)
            guarded = ast.Call(
                func=ast.Name("_write_", ast.Load()), args=[target.value], keywords=[]
            )
            copy_locations(guarded, target.value)
            target.value = guarded
            _inline_write_guard(
                target, "_sandbox_classes_" if isinstance(target, ast.Attribute) else None
            )
            return node
        return super().visit_AugAssign(node)


def _inline_write_guard(node, classes_name):  # type: ignore[no-untyped-def]
    """Turn ``_write_(x)`` (``x`` a plain name) into an inline fast path.

    Item stores: ``(x if _type_(x) is _dict_ or _type_(x) is _list_ else _write_(x))``.
    Attribute stores: ``(x if _type_(x) in _sandbox_classes_ else _write_(x))``.
    ``_write_`` returns exactly those objects unchanged, so this is the guard itself,
    without a Python-level call; every other object still goes through ``_write_``.
    Skill code cannot rebind these names (they start with ``_``).
    """
    if not isinstance(node, (ast.Attribute, ast.Subscript)):
        return node
    call = node.value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "_write_"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Name)
    ):
        return node
    name = call.args[0].id

    def load(n: str) -> ast.Name:
        return ast.Name(n, ast.Load())

    def type_of() -> ast.Call:
        return ast.Call(func=load("_type_"), args=[load(name)], keywords=[])

    if classes_name is None:
        test: ast.expr = ast.BoolOp(op=ast.Or(), values=[
            ast.Compare(left=type_of(), ops=[ast.Is()], comparators=[load("_dict_")]),
            ast.Compare(left=type_of(), ops=[ast.Is()], comparators=[load("_list_")]),
        ])
    else:
        test = ast.Compare(left=type_of(), ops=[ast.In()], comparators=[load(classes_name)])
    fast = ast.IfExp(test=test, body=load(name), orelse=call)
    copy_locations(fast, call)
    node.value = fast
    return node


def _self_check() -> None:
    """Fail closed on a RestrictedPython that lacks fixes this policy relies on."""
    must_fail = {
        "positional-only parameters shadowing a guard (fixed in RestrictedPython 8.3)":
            "def f(_getattr_=None, /):\n    return 1\n",
        "try/except* (refused since RestrictedPython 8.0)":
            "try:\n    pass\nexcept* Exception:\n    pass\n",
    }
    for what, source in must_fail.items():
        result = compile_restricted_exec(source, "<self-check>")
        if not result.errors:
            raise ImportError(f"the installed RestrictedPython accepts {what}; upgrade it")


_self_check()

_POLICIES: dict[frozenset[str], type[SandboxPolicy]] = {}
_POLICIES_LOCK = threading.Lock()


def _policy_for(allowed: frozenset[str]) -> type[SandboxPolicy]:
    with _POLICIES_LOCK:
        policy = _POLICIES.get(allowed)
        if policy is None:
            policy = type("SandboxPolicy", (SandboxPolicy,), {"allowed_modules": allowed})
            _POLICIES[allowed] = policy
        return policy


class CompiledSource(NamedTuple):
    code: object  # types.CodeType
    called: frozenset[str]  # names called as functions
    defined: frozenset[str]  # names bound anywhere in the source


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def _names(tree: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
    called: set[str] = set()
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            defined.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.alias):
            defined.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            defined.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            defined.update(node.names)
    return frozenset(called), frozenset(defined)


def source_size_problem(source: str) -> str | None:
    """Why ``source`` is too large to parse, or None (counted before any parsing)."""
    if len(source) > MAX_SOURCE_BYTES or (
        not source.isascii() and len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES
    ):
        return f"source is longer than {MAX_SOURCE_BYTES} bytes"
    return None


def precheck(code: object) -> PolicyViolation | None:
    """What refuses ``code`` before it is parsed (not a str, too large), or None."""
    if not isinstance(code, str):
        return PolicyViolation(f"code must be a str, got {type(code).__name__}")
    problem = source_size_problem(code)
    return _violation("PolicyViolation", problem, None) if problem is not None else None


def _violation(kind: str, message: str, line: int | None) -> PolicyViolation:
    exc = PolicyViolation(message, line)
    exc.kind = kind  # type: ignore[attr-defined]
    return exc


def compile_source(
    source: str,
    filename: str = "<skill>",
    allowed_modules: tuple[str, ...] | frozenset[str] = DEFAULT_MODULES,
) -> CompiledSource:
    """Compile one skill source under the policy, or raise ``PolicyViolation``.

    The exception has ``kind`` = ``"SyntaxError"`` (not Python) or ``"PolicyViolation"``.
    """
    if not isinstance(source, str):
        raise _violation("PolicyViolation", "source must be a str", None)
    problem = source_size_problem(source)
    if problem is not None:
        raise _violation("PolicyViolation", problem, None)
    try:
        tree = ast.parse(source, filename, "exec")
    except SyntaxError as exc:
        raise _violation("SyntaxError", f"{exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise _violation("SyntaxError", f"cannot parse source: {type(exc).__name__}", None) from None
    try:
        called, defined = _names(tree)
        result = compile_restricted_exec(
            tree, filename, policy=_policy_for(frozenset(allowed_modules))
        )
    except SyntaxError as exc:  # raised by compile() for e.g. 'return' outside function
        raise _violation("SyntaxError", f"{exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError, MemoryError, OverflowError, TypeError) as exc:
        raise _violation(
            "PolicyViolation", f"source is too complex to compile: {type(exc).__name__}", None
        ) from None
    if result.errors or result.code is None:
        messages = list(result.errors) or ["code does not compile"]
        line = None
        cleaned = []
        for msg in messages:
            match = _LINE_RE.match(msg)
            if match:
                if line is None:
                    line = int(match.group(1))
                msg = msg[match.end():]
            cleaned.append(msg)
        raise _violation("PolicyViolation", "; ".join(cleaned), line)
    return CompiledSource(result.code, called, defined)


class _CheckCache:
    """Host-side memo of check_source outcomes keyed by source hash and allow-list."""

    def __init__(self, size: int = 512) -> None:
        self._data: OrderedDict[tuple[str, tuple[str, ...]], PolicyViolation | None] = (
            OrderedDict()
        )
        self._size = size
        self._lock = threading.Lock()

    def get(self, key):  # type: ignore[no-untyped-def]
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return True, self._data[key]
        return False, None

    def put(self, key, value) -> None:  # type: ignore[no-untyped-def]
        with self._lock:
            self._data[key] = value
            while len(self._data) > self._size:
                self._data.popitem(last=False)


_check_cache = _CheckCache()


_CHECKERS: dict[tuple[str, ...], object] = {}
_CHECKERS_LOCK = threading.Lock()


def _checker(modules: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """The Sandbox that checks sources for ``check_source`` (one per allow-list, started
    on first use, closed at interpreter exit)."""
    from .host import Sandbox
    from .models import Limits

    with _CHECKERS_LOCK:
        box = _CHECKERS.get(modules)
        if box is None or box.closed:  # type: ignore[attr-defined]
            box = Sandbox(limits=Limits(**CHECK_LIMITS), workers=1, allowed_modules=modules)  # type: ignore[arg-type]
            _CHECKERS[modules] = box
        return box


#: Limits of one ``check_source`` compile (a 500 KB hostile source took 3-5 s of CPU
#: and 340 MB when the host compiled it).
CHECK_LIMITS = {"cpu_seconds": 5.0, "wall_seconds": 10.0, "memory_mb": 256}


def check_source(code: str, allowed_modules: tuple[str, ...] | None = None) -> None:
    """Raise ``PolicyViolation(message, line)`` if ``code`` does not compile under the
    sandbox policy (syntax errors included). Nothing is executed.

    The host never parses untrusted code: the size is checked first, then the source is
    compiled in a sandboxed child process (CPU, memory and wall limits hold there)."""
    modules = DEFAULT_MODULES if allowed_modules is None else validate_modules(allowed_modules)
    if not isinstance(code, str):
        raise PolicyViolation(f"code must be a str, got {type(code).__name__}")
    problem = source_size_problem(code)
    if problem is not None:
        raise _violation("PolicyViolation", problem, None)
    key = (source_digest(code), tuple(sorted(modules)))
    hit, outcome = _check_cache.get(key)
    if not hit:
        try:
            _checker(tuple(sorted(modules))).check(code)  # type: ignore[attr-defined]
            outcome = None
        except PolicyViolation as exc:
            outcome = exc
        _check_cache.put(key, outcome)
    if outcome is not None:
        fresh = PolicyViolation(outcome.message, outcome.line)
        fresh.kind = getattr(outcome, "kind", "PolicyViolation")  # type: ignore[attr-defined]
        raise fresh


def check_sources(
    codes: Sequence[str], allowed_modules: tuple[str, ...] | None = None
) -> list[PolicyViolation | None]:
    """:func:`check_source` for many sources: each one's violation, or None where it
    compiles, in order. Sources not checked before are compiled in as few sandboxed
    children as :meth:`Sandbox.check_many` needs (a few hundred per child), not one each."""
    modules = tuple(sorted(DEFAULT_MODULES if allowed_modules is None else validate_modules(allowed_modules)))
    out: list[PolicyViolation | None] = [None] * len(codes)
    unknown: dict[str, list[int]] = {}  # source digest -> positions (a source is checked once)
    for i, code in enumerate(codes):
        refused = precheck(code)
        if refused is not None:
            out[i] = refused
            continue
        digest = source_digest(code)
        hit, outcome = _check_cache.get((digest, modules))
        if hit:
            out[i] = outcome
        else:
            unknown.setdefault(digest, []).append(i)
    if unknown:
        firsts = [positions[0] for positions in unknown.values()]
        verdicts = _checker(modules).check_many([codes[i] for i in firsts])  # type: ignore[attr-defined]
        for (digest, positions), verdict in zip(unknown.items(), verdicts):
            _check_cache.put((digest, modules), verdict)
            for i in positions:
                out[i] = verdict
    return [None if v is None else _fresh(v) for v in out]


def _fresh(outcome: PolicyViolation) -> PolicyViolation:
    """A new exception equal to a remembered one (a cached exception is never re-raised)."""
    fresh = PolicyViolation(outcome.message, outcome.line)
    fresh.kind = getattr(outcome, "kind", "PolicyViolation")  # type: ignore[attr-defined]
    return fresh
