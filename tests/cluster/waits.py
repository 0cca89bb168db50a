"""Polling for the tests of the control plane, its node and the operator e2e harness: one helper, so a
timeout always says what was awaited and what was seen last."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float, what: str,
             describe: Callable[[], Any] = lambda: None, interval: float = 0.2) -> Any:
    """Poll until ``predicate()`` is truthy and return it; else fail naming ``what`` and ``describe()``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last seen: {describe()}")
        time.sleep(interval)
