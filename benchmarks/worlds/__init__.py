"""World plugins: every module here defining a concrete :class:`World` subclass is one.

``get_world("crafting")`` returns a fresh instance; ``world_names()`` lists them. Adding
a world is adding one file to this folder.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from benchmarks.worlds.base import (
    GoldAction,
    PersonalValue,
    Task,
    ToolError,
    Verdict,
    World,
    load_tasks,
)

__all__ = [
    "GoldAction",
    "PersonalValue",
    "Task",
    "ToolError",
    "Verdict",
    "World",
    "discover",
    "get_world",
    "load_tasks",
    "world_classes",
    "world_names",
]

_REGISTRY: dict[str, type[World]] | None = None


def discover(package: str) -> dict[str, type[World]]:
    """Name -> concrete World subclass defined in the modules of ``package``."""
    pkg = importlib.import_module(package)
    found: dict[str, type[World]] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, World)
                and obj is not World
                and not inspect.isabstract(obj)
                and obj.__module__ == module.__name__
                and obj.name
            ):
                found[obj.name] = obj
    return dict(sorted(found.items()))


def world_classes() -> dict[str, type[World]]:
    """Name -> World subclass, discovered from the modules of this package."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = discover(__name__)
    return _REGISTRY


def world_names() -> list[str]:
    """The names of the registered worlds."""
    return list(world_classes())


def get_world(name: str) -> World:
    """A fresh instance of the world called ``name``."""
    classes = world_classes()
    if name not in classes:
        raise KeyError(f"unknown world {name!r}; worlds are: {', '.join(classes)}")
    return classes[name]()
