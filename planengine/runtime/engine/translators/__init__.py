"""Translators: one function per exec node ``(name, version)`` (DESIGN §6).

``@translator("stream-exec-calc", 1)`` registers ``fn(node, inputs, ctx) -> Stream``. The executor maps
the DAG in dependency order, handing each node its already-translated inputs and caching by node, so a
shared sub-plan becomes one DataFrame. An exec node version without a translator is reported by
``planengine check`` as unsupported (exit 4) before anything starts; ``tests/runtime`` walks the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from planengine.runtime.dataflow.stream import Stream

Translator = Callable[[Any, list[Stream], Any], Stream]
_TRANSLATORS: dict[tuple[str, int], Translator] = {}


def translator(name: str, *versions: int) -> Callable[[Translator], Translator]:
    def register(fn: Translator) -> Translator:
        for v in versions or (1,):
            key = (name, v)
            if key in _TRANSLATORS and _TRANSLATORS[key] is not fn:
                raise ValueError(f"translator for {name} version {v} registered twice")
            _TRANSLATORS[key] = fn
        return fn

    return register


def load_all() -> None:
    """Import every translator module (registration happens on import), once: ``get_translator`` runs per plan
    node, and scanning the package directory each time made ``check`` of an 8 000-node plan take 20 s."""
    global _LOADED
    if _LOADED:
        return
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            # No guard: a translator module that fails to import is a bug to see at once, not a set of nodes
            # that would quietly read as "unsupported" (pyspark, which they need, is checked by their callers).
            importlib.import_module(f"{__name__}.{info.name}")
    _LOADED = True  # only once every module imported: a failed load fails again on the next call


_LOADED = False


def get_translator(name: str, version: int) -> Translator | None:
    load_all()
    return _TRANSLATORS.get((name, version))
