"""Every built-in function of this engine version, one module per family.

``register_all`` is what ``planengine.functions.registry.default_registry`` calls; the order of modules
does not matter because names never overlap (registering one twice is an error).
"""

from __future__ import annotations

from planengine.functions.builtins import (
    aggregates,
    arithmetic,
    casts,
    collections,
    comparison,
    conditional,
    json,
    math,
    strings,
    temporal,
    window,
)
from planengine.functions.registry import FunctionRegistry

MODULES = (arithmetic, comparison, conditional, casts, strings, math, temporal, collections, json, aggregates,
           window)


def register_all(registry: FunctionRegistry) -> None:
    for module in MODULES:
        module.register(registry)
