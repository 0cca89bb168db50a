"""Session options: one registry of every key planengine knows (``planengine.config.registry``).

``REGISTRY`` holds the engine's own options (``planengine.config.options``) and Flink's keys with what
planengine does with them (``planengine.config.flink``). ``validate(config)`` is what ``SET``, ``-D`` and
``TableEnvironment(config)`` go through.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from planengine.config.flink import FLINK_OPTIONS
from planengine.config.options import ENGINE_OPTIONS
from planengine.config.registry import Option, Registry, SetResult

log = logging.getLogger("planengine.config")

REGISTRY = Registry()
REGISTRY.register_all(ENGINE_OPTIONS)
REGISTRY.register_all(FLINK_OPTIONS)

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
