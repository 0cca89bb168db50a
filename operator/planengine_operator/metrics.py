"""Prometheus metrics in the text exposition format, without a client library.

Few series, updated from the status patches the reconciler writes, so the numbers are exactly the
transitions the jobs went through: jobs by phase, upgrades and rollbacks with their durations, reconcile
latency, and whether a fleet rollout is paused.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from planengine_operator.models import JobStatus
from planengine_operator.vocabulary import parse_iso


class Summary:
    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.samples: list[float] = []
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self.count += 1
            self.total += value
            self.samples.append(value)
            if len(self.samples) > 5000:
                del self.samples[:1000]

    def quantile(self, q: float) -> float:
        with self._lock:
            data = sorted(self.samples)
        if not data:
            return 0.0
        return data[min(len(data) - 1, int(q * len(data)))]


RECONCILE_SECONDS = Summary()
UPGRADE_SECONDS = Summary()
UPGRADES: dict[str, int] = defaultdict(int)  # by result: Succeeded, RolledBack, Refused, Failed
ROLLBACKS = 0
PHASES: dict[tuple[str, str], str] = {}  # (namespace, name) -> phase
ROLLOUT_PAUSED = [0]


def observe_transition(old: JobStatus, new: JobStatus) -> None:
    """Count an upgrade once, in the status write that finishes it."""
    global ROLLBACKS
    upgrade = new.upgrade
    if upgrade is None or upgrade == old.upgrade:
        return
    step = upgrade.step
    if step in ("Succeeded", "RolledBack", "Refused", "Failed") and upgrade.finished:
        UPGRADES[step] += 1
        if step == "RolledBack":
            ROLLBACKS += 1
        began, ended = parse_iso(upgrade.started), parse_iso(upgrade.finished)
        if began and ended:
            UPGRADE_SECONDS.observe((ended - began).total_seconds())


def set_phase(namespace: str, name: str, phase: str | None) -> None:
    if phase is None:
        PHASES.pop((namespace, name), None)
    else:
        PHASES[(namespace, name)] = phase


def render() -> str:
    lines = ["# HELP planengine_jobs Jobs by phase.", "# TYPE planengine_jobs gauge"]
    counts: dict[str, int] = defaultdict(int)
    for phase in PHASES.values():
        counts[phase] += 1
    for phase in sorted(counts):
        lines.append(f'planengine_jobs{{phase="{phase}"}} {counts[phase]}')
    lines += ["# HELP planengine_upgrades_total Finished upgrades by result.",
              "# TYPE planengine_upgrades_total counter"]
    for result in ("Succeeded", "RolledBack", "Refused", "Failed"):
        lines.append(f'planengine_upgrades_total{{result="{result}"}} {UPGRADES[result]}')
    lines += ["# HELP planengine_rollbacks_total Upgrades rolled back.", "# TYPE planengine_rollbacks_total counter",
              f"planengine_rollbacks_total {ROLLBACKS}"]
    for name, summary in (("planengine_upgrade_duration_seconds", UPGRADE_SECONDS),
                          ("planengine_reconcile_duration_seconds", RECONCILE_SECONDS)):
        lines += [f"# TYPE {name} summary"]
        for q in (0.5, 0.99):
            lines.append(f'{name}{{quantile="{q}"}} {summary.quantile(q):.6f}')
        lines += [f"{name}_sum {summary.total:.6f}", f"{name}_count {summary.count}"]
    lines += ["# HELP planengine_rollout_paused 1 when the fleet rollout paused at a rollback.",
              "# TYPE planengine_rollout_paused gauge", f"planengine_rollout_paused {ROLLOUT_PAUSED[0]}"]
    return "\n".join(lines) + "\n"
