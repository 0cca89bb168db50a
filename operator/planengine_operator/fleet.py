"""Fleet rollout of ``defaultEngineVersion``: a few jobs at a time, paused at the first rollback.

Jobs without ``spec.engineVersion`` follow the default; when it changes, each such job asks ``allowed``
before starting its upgrade. The view is rebuilt from every job's status (which survives restarts), so a
restarted operator counts in-flight upgrades and a paused rollout correctly.

Two sources feed the view and they are not equally fresh. The reconciler reports the status it has just
written (the operator is the status's only writer, so its in-memory copy is the newest); the kopf index
reports watch events, which can lag behind a claim the reconciler made a moment ago. If a stale event
could clear a claim, a second job would take the same slot and the rollout would exceed
``maxConcurrent``. So the index only seeds a job the reconciler has not reported yet (a restarted
operator), and from then on the reconciler's reports alone move the job's slot.

The configuration is read once, at start: changing ``defaultEngineVersion`` or ``rollout.maxConcurrent``
means restarting the operator with the new configuration (the chart rolls the Deployment when its
ConfigMap changes). A paused rollout resumes when nothing rolled back to the current default any more:
a new default (a fixed engine build, or the old version to roll the fleet back), or pinning the
rolled-back job with an explicit ``spec.engineVersion``.
"""

from __future__ import annotations

from typing import Any

from planengine_operator import metrics
from planengine_operator.models import JobStatus

Key = tuple[str, str]


PAUSING_STEPS = ("RolledBack", "Failed")


class Fleet:
    def __init__(self, default_engine: str, max_concurrent: int) -> None:
        self.default_engine = default_engine
        self.max_concurrent = max_concurrent
        self._upgrading: set[Key] = set()
        self._rolled_back: set[Key] = set()
        self._reported: set[Key] = set()  # jobs whose slot the reconciler's own status moves
        self._announcements: dict[Key, str] = {}  # pause messages waiting for the job's next handler
        metrics.set_rollout_paused(False)

    def seed(self, namespace: str, name: str, spec: dict[str, Any], status: JobStatus) -> None:
        """A watch event (kopf index): used only until the reconciler reports this job itself."""
        if (namespace, name) not in self._reported:
            self._update((namespace, name), spec, status, announce=False)

    def observe(self, namespace: str, name: str, spec: dict[str, Any], status: JobStatus) -> None:
        """The status the reconciler has just written: authoritative for this job from now on."""
        key = (namespace, name)
        self._reported.add(key)
        self._update(key, spec, status, announce=True)
        metrics.observe_job(namespace, name, status)

    def _update(self, key: Key, spec: dict[str, Any], status: JobStatus, *, announce: bool) -> None:
        upgrade = status.upgrade
        follows = not spec.get("engineVersion")
        in_flight = status.operation is not None and status.operation.type == "Upgrade"
        (self._upgrading.add if follows and in_flight else self._upgrading.discard)(key)
        was_paused = self.paused
        # An upgrade to the default that stopped a job and did not land pauses the rollout: rolled back, or
        # failed (rollback blocked or disabled). A refused one (check exit 4, standby failed) stopped nothing
        # and may be about this job's plan, so it does not (docs/operator.md, "Pause").
        rolled_back = (follows and upgrade is not None and upgrade.step in PAUSING_STEPS
                       and upgrade.to == self.default_engine)
        (self._rolled_back.add if rolled_back else self._rolled_back.discard)(key)
        if announce and rolled_back and not was_paused and upgrade is not None:
            self._announcements[key] = (
                f"fleet rollout to engine {self.default_engine} paused: this job's upgrade ended "
                f"{upgrade.step} "
                f"({upgrade.message or 'stability gate failed'}); jobs that follow the default stay on "
                "their engine. Resume with a new defaultEngineVersion (operator restart) or pin this job's "
                "spec.engineVersion"
            )
        metrics.set_rollout_paused(self.paused)

    def forget(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        for members in (self._upgrading, self._rolled_back, self._reported):
            members.discard(key)
        self._announcements.pop(key, None)
        metrics.forget_job(namespace, name)
        metrics.set_rollout_paused(self.paused)

    def take_announcement(self, namespace: str, name: str) -> str | None:
        """The RolloutPaused event message for this job, once (the handler posts it on the job)."""
        return self._announcements.pop((namespace, name), None)

    @property
    def paused(self) -> bool:
        return bool(self._rolled_back)

    def in_flight(self) -> int:
        return len(self._upgrading)

    def allowed(self, namespace: str, name: str) -> bool:
        if (namespace, name) in self._upgrading:
            return True
        return not self.paused and len(self._upgrading) < self.max_concurrent

    def claim(self, namespace: str, name: str) -> None:
        self._upgrading.add((namespace, name))
