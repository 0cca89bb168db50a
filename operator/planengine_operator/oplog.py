"""The operator's own log: every decision once, at INFO, with the job and the step it belongs to.

Decisions reach users as Kubernetes events, which expire after an hour and are not in the pod's log; an
administrator reading ``kubectl logs`` of the operator after a night's upgrade needs them there too. kopf logs
every successful run of a handler at INFO, and the reconcile timer runs every few seconds per job: left alone,
"Timer 'tick' succeeded." was 232 of 261 lines of an upgrade's log, burying the decisions. Those success lines
are dropped; a tick that fails is still logged by kopf (at ERROR, with its traceback).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("planengine_operator.decisions")


class QuietTicks(logging.Filter):
    """Drops kopf's "Timer 'tick' succeeded." lines; anything else (failures, retries) passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith("Timer 'tick' succeeded")


_FILTER = QuietTicks()


def quiet_ticks() -> None:
    """Install the filter on kopf's per-object logger (idempotent: one filter however often it is called)."""
    logger = logging.getLogger("kopf.objects")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def step_of(status: Any) -> str:
    """``Upgrade/Handover``: the operation and its step when one runs, else the phase."""
    operation = getattr(status, "operation", None)
    if operation is not None and operation.type:
        return f"{operation.type}/{operation.step or '-'}"
    return str(getattr(status, "phase", None) or "-")


def log_decision(namespace: str, name: str, status: Any, event: Any) -> None:
    """One line per decision: ``<namespace>/<name> [<step>] <reason>: <message>``; warnings at WARNING."""
    level = logging.WARNING if event.type == "Warning" else logging.INFO
    log.log(level, "%s/%s [%s] %s: %s", namespace, name, step_of(status), event.reason, event.message)
