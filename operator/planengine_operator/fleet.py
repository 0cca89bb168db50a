"""Fleet rollout of ``defaultEngineVersion``: a few jobs at a time, paused at the first rollback.

Jobs without ``spec.engineVersion`` follow the default; when it changes, each such job asks ``allowed``
before starting its upgrade. The view is rebuilt from every job's status (which survives restarts), so a
restarted operator counts in-flight upgrades and a paused rollout correctly.
"""

from __future__ import annotations

from typing import Any

from planengine_operator import metrics


class Fleet:
    def __init__(self, default_engine: str, max_concurrent: int) -> None:
        self.default_engine = default_engine
        self.max_concurrent = max_concurrent
        self._upgrading: set[tuple[str, str]] = set()
        self._rolled_back: set[tuple[str, str]] = set()

    def observe(self, namespace: str, name: str, spec: dict[str, Any], status: dict[str, Any] | None) -> None:
        key = (namespace, name)
        status = status or {}
        upgrade = status.get("upgrade") or {}
        follows = not spec.get("engineVersion")
        in_flight = (status.get("operation") or {}).get("type") == "Upgrade"
        (self._upgrading.add if follows and in_flight else self._upgrading.discard)(key)
        rolled_back = follows and upgrade.get("step") == "RolledBack" and upgrade.get("to") == self.default_engine
        (self._rolled_back.add if rolled_back else self._rolled_back.discard)(key)
        metrics.set_phase(namespace, name, status.get("phase"))
        metrics.ROLLOUT_PAUSED[0] = int(self.paused)

    def forget(self, namespace: str, name: str) -> None:
        self._upgrading.discard((namespace, name))
        self._rolled_back.discard((namespace, name))
        metrics.set_phase(namespace, name, None)

    @property
    def paused(self) -> bool:
        return bool(self._rolled_back)

    def allowed(self, namespace: str, name: str) -> bool:
        if (namespace, name) in self._upgrading:
            return True
        return not self.paused and len(self._upgrading) < self.max_concurrent

    def claim(self, namespace: str, name: str) -> None:
        self._upgrading.add((namespace, name))
