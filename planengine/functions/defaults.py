"""The built-in function registry of this engine version, built once and shared.

Apart from ``registry`` because the built-in modules register themselves into a ``FunctionRegistry``: the
registry knows nothing of them, this module knows both.
"""

from __future__ import annotations

from functools import cache

from planengine.functions.builtins import register_all
from planengine.functions.registry import FunctionRegistry


@cache
def default_registry() -> FunctionRegistry:
    """The registry with every built-in of this engine version."""
    registry = FunctionRegistry()
    register_all(registry)
    return registry
