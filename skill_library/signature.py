"""Read a skill function's signature from its source, without executing it.

Skill code is untrusted, so everything here works on the AST: the function is found by
name, its annotated arguments become a JSON Schema object, and its docstring becomes
the description.
"""

from __future__ import annotations

import ast
import builtins
import json
from typing import Any

_SIMPLE_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array"},
    "tuple": {"type": "array"},
    "set": {"type": "array"},
    "dict": {"type": "object"},
    "None": {"type": "null"},
    "Any": {},
    "object": {},
}


def source_size_problem(code: str) -> str | None:
    """Why ``code`` is too large to parse (None: it is not): skill source is held to
    ``sandbox.policy.MAX_SOURCE_BYTES`` UTF-8 bytes, checked before any parse."""
    from sandbox.policy import MAX_SOURCE_BYTES

    if len(code) > MAX_SOURCE_BYTES:  # a character is at least one byte: no encoding needed
        return (f"skill source has {len(code)} characters, more than MAX_SOURCE_BYTES="
                f"{MAX_SOURCE_BYTES} bytes: refused before parsing")
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        return (f"skill source is {size} bytes, more than MAX_SOURCE_BYTES={MAX_SOURCE_BYTES}: "
                "refused before parsing")
    return None


def parse_source(code: str) -> ast.Module:
    """Parse skill source; a syntax error, or a source over the size limit (checked
    first), becomes a ValueError naming the line or the limit."""
    problem = source_size_problem(code)
    if problem:
        raise ValueError(problem)
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    except (MemoryError, RecursionError) as exc:  # nesting the parser cannot hold
        raise ValueError(f"cannot parse source: {type(exc).__name__}") from None


def top_level_functions(code: str) -> list[ast.FunctionDef]:
    """The top-level (non-async) function definitions of ``code``, in order."""
    return [n for n in parse_source(code).body if isinstance(n, ast.FunctionDef)]


def find_function(code: str, name: str) -> ast.FunctionDef:
    """The top-level function called ``name``; ValueError if there is none."""
    for node in top_level_functions(code):
        if node.name == name:
            return node
    raise ValueError(f"no top-level function named {name!r} is defined")


def annotation_schema(node: ast.expr | None) -> dict[str, Any]:
    """JSON Schema for one annotation expression (unknown annotations give ``{}``)."""
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_schema(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return {}
    if isinstance(node, ast.Name):
        return dict(_SIMPLE_TYPES.get(node.id, {}))
    if isinstance(node, ast.Attribute):  # typing.Any, t.List
        return dict(_SIMPLE_TYPES.get(node.attr, {}))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return _union([annotation_schema(node.left), annotation_schema(node.right)])
    if isinstance(node, ast.Subscript):
        base = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        inner = node.slice
        items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if base in ("list", "List", "set", "Set", "Sequence", "Iterable"):
            return {"type": "array", "items": annotation_schema(items[0])}
        if base in ("tuple", "Tuple"):
            return {"type": "array"}
        if base in ("dict", "Dict", "Mapping"):
            schema: dict[str, Any] = {"type": "object"}
            if len(items) == 2 and annotation_schema(items[1]):
                schema["additionalProperties"] = annotation_schema(items[1])
            return schema
        if base == "Optional":
            return _union([annotation_schema(items[0]), {"type": "null"}])
        if base == "Union":
            return _union([annotation_schema(i) for i in items])
        if base == "Literal":
            values = [i.value for i in items if isinstance(i, ast.Constant)]
            return {"enum": values}
    return {}


def _union(parts: list[dict[str, Any]]) -> dict[str, Any]:
    if any(not p for p in parts):
        return {}
    types: list[str] = []
    for part in parts:
        if set(part) != {"type"}:
            return {"anyOf": parts}
        types.append(part["type"])
    return {"type": types[0] if len(types) == 1 else types}


def parameters_schema(func: ast.FunctionDef) -> dict[str, Any]:
    """A JSON Schema object describing the arguments of ``func``.

    Arguments with defaults are optional (the default is recorded when it is a literal);
    ``*args`` and ``**kwargs`` are not allowed because tool-calling agents pass named JSON
    arguments.
    """
    args = func.args
    if args.vararg or args.kwarg:
        raise ValueError(f"function {func.name!r} may not take *args or **kwargs")
    positional = args.posonlyargs + args.args
    defaults: dict[str, ast.expr] = dict(
        zip([a.arg for a in positional][len(positional) - len(args.defaults):], args.defaults)
    )
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            defaults[arg.arg] = default
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg in positional + args.kwonlyargs:
        schema = annotation_schema(arg.annotation)
        if arg.arg in defaults:
            try:
                value = ast.literal_eval(defaults[arg.arg])
                json.dumps(value)
                schema["default"] = value
            except (ValueError, TypeError, SyntaxError):
                pass
        else:
            required.append(arg.arg)
        properties[arg.arg] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def argument_names(func: ast.FunctionDef) -> list[str]:
    """Names of every argument of ``func`` in declaration order."""
    args = func.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]


def docstring(func: ast.FunctionDef) -> str:
    """The function's docstring, or an empty string."""
    return ast.get_docstring(func) or ""


#: names skill code may call that are not tools: Python's builtins and the sandbox's own
_NOT_TOOLS = frozenset(dir(builtins)) | {"ToolError"}


def free_calls(code: str) -> list[str]:
    """Names the source calls as plain functions but never defines, imports or assigns,
    less builtins: the tools (and other skills) it needs, in first-call order."""
    tree = parse_source(code)
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    called: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name not in bound and name not in _NOT_TOOLS and name not in called:
                called.append(name)
    return called
