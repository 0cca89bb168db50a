"""Session options: one registry of every key planengine knows (``planengine.config.registry``).

``REGISTRY`` holds the engine's own options (``planengine.config.options``) and every key of the pinned Flink
release's table, execution, pipeline, state and SQL-client groups (``flink_options.json``) with what planengine
does with it (``planengine.config.flink``). ``validate(config)`` is what ``SET``, ``-D`` and
``TableEnvironment(config)`` go through.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from planengine.config.flink import OLDER_FLINK_OPTIONS, PREFIX_OPTIONS, flink_options
from planengine.config.flink_table import flink_option_specs
from planengine.config.options import ENGINE_OPTIONS
from planengine.config.registry import Option, Registry, SetResult

log = logging.getLogger("planengine.config")

REGISTRY = Registry()
REGISTRY.register_all(ENGINE_OPTIONS)
_ENGINE_KEYS = frozenset(option.key for option in ENGINE_OPTIONS)
REGISTRY.register_all(flink_options(_ENGINE_KEYS))
REGISTRY.register_all(OLDER_FLINK_OPTIONS)
REGISTRY.register_all(PREFIX_OPTIONS)
for _spec in flink_option_specs():  # Flink's old names of the keys planengine honours
    if _spec.key in _ENGINE_KEYS:
        for _old in _spec.deprecated_keys + _spec.fallback_keys:
            REGISTRY.alias(_old, _spec.key)

__all__ = ["REGISTRY", "Option", "Registry", "SetResult", "default", "register", "validate"]


def register(option: Option) -> Option:
    """Declare another option (at import time of the module that reads it)."""
    return REGISTRY.register(option)


def default(key: str) -> str | None:
    """The declared default of ``key`` as text (what a plan freezes when the session does not set it)."""
    return REGISTRY.default(key)


def validate(config: Mapping[str, str]) -> dict[str, str]:
    """Validate a whole configuration (``-D``, ``TableEnvironment(config)``); notes about keys without effect
    are logged as warnings. Returns the configuration with mapped keys moved to planengine's keys."""
    return REGISTRY.check_all(config, report=log.warning)
