"""A small validator for the JSON Schema subset that tool schemas use.

Supported keywords: ``type`` (a name or a list of names), ``properties``, ``required``,
``additionalProperties`` (bool or schema), ``enum``, ``items`` (one schema), ``minimum``,
``maximum``. Other keywords are ignored. Values are plain JSON (they come off a pipe).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["validate", "schema_errors", "arguments_schema"]

_MAX_ERRORS = 5


def _is_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        return isinstance(value, float) and math.isfinite(value) and value.is_integer()
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    return True  # unknown type names constrain nothing


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _walk(value: Any, schema: Any, path: str, errors: list[str]) -> None:
    if len(errors) >= _MAX_ERRORS or not isinstance(schema, dict):
        return
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, n) for n in names if isinstance(n, str)):
            want = " or ".join(str(n) for n in names)
            errors.append(f"{path}: expected {want}, got {_type_name(value)}")
            return
    if "enum" in schema and isinstance(schema["enum"], list):
        if not any(_same(value, option) for option in schema["enum"]):
            shown = ", ".join(repr(o) for o in schema["enum"][:10])
            errors.append(f"{path}: {value!r:.80} is not one of [{shown}]")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, (int, float)) and value < low:
            errors.append(f"{path}: {value} is less than the minimum {low}")
        if isinstance(high, (int, float)) and value > high:
            errors.append(f"{path}: {value} is greater than the maximum {high}")
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = schema.get("required")
        if isinstance(required, list):
            for key in required:
                if isinstance(key, str) and key not in value:
                    errors.append(f"{path}: missing required property {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = f"{path}.{key}"
            if key in props:
                _walk(item, props[key], sub, errors)
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                _walk(item, extra, sub, errors)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", errors)


def _same(a: Any, b: Any) -> bool:
    # JSON equality: True is not 1, 1 is 1.0.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def schema_errors(value: Any, schema: dict[str, Any], path: str = "arguments") -> list[str]:
    """Human-readable violations of ``schema`` by ``value`` (empty when valid)."""
    errors: list[str] = []
    _walk(value, schema, path, errors)
    return errors


def validate(value: Any, schema: dict[str, Any], path: str = "arguments") -> None:
    """Raise ``ValueError`` listing the violations of ``schema`` by ``value``."""
    errors = schema_errors(value, schema, path)
    if errors:
        raise ValueError("; ".join(errors))


def arguments_schema(schema: Any) -> dict[str, Any] | None:
    """The object schema of a tool's arguments.

    Accepts a plain JSON Schema (``{"type": "object", "properties": ...}``) or a tool
    description that wraps it (``{"name": ..., "parameters": {...}}`` or
    ``{"input_schema": {...}}``).
    """
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise TypeError(f"a tool schema must be a dict, got {type(schema).__name__}")
    if "properties" not in schema and "type" not in schema:
        for key in ("parameters", "input_schema", "inputSchema"):
            if isinstance(schema.get(key), dict):
                return schema[key]
    return schema
