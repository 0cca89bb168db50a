"""Owner-reference garbage collection, the kube-controller-manager's job, beside the kubelet in the harness.

The API emulator's own immediate cascade is switched off (``KubeApi.garbage_collection``) so deletion runs
as on a cluster: the owner disappears first, then this controller notices dependents whose owners are all
gone and deletes them in the background (pods then terminate gracefully through their kubelet). Like the
real collector it confirms an owner's absence with a fresh read by name and uid before deleting, so an object
created together with its owner is never taken for an orphan.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import aiohttp

# Namespaced kinds whose objects the operator creates with owner references (plural, API prefix).
DEPENDENTS = (("pods", "/api/v1"), ("services", "/api/v1"), ("configmaps", "/api/v1"), ("secrets", "/api/v1"),
              ("leases", "/apis/coordination.k8s.io/v1"))
OWNER_PATHS = {
    ("planengine.io/v1alpha1", "SparkPlanJob"): "/apis/planengine.io/v1alpha1/namespaces/{ns}/sparkplanjobs/{name}",
    ("v1", "Pod"): "/api/v1/namespaces/{ns}/pods/{name}",
}
INTERVAL = 0.3


class GarbageCollector:
    def __init__(self, api_url: str) -> None:
        self.api_url = api_url
        self.deleted: list[tuple[str, str, str]] = []  # (plural, namespace, name), in order
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), name="gc", daemon=True)

    def start(self) -> GarbageCollector:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _serve(self) -> None:
        async with aiohttp.ClientSession(base_url=self.api_url) as http:
            while not self._stop.is_set():
                try:
                    await self._collect(http)
                except Exception as error:  # keep collecting; the test sees the errors
                    self.errors.append(f"{type(error).__name__}: {error}")
                await asyncio.sleep(INTERVAL)

    async def _collect(self, http: aiohttp.ClientSession) -> None:
        for plural, prefix in DEPENDENTS:
            async with http.get(f"{prefix}/{plural}") as rsp:
                items = (await rsp.json()).get("items") or [] if rsp.status == 200 else []
            for obj in items:
                md = obj["metadata"]
                refs = md.get("ownerReferences") or []
                if not refs or md.get("deletionTimestamp"):
                    continue
                if any([await self._owner_exists(http, md["namespace"], ref) for ref in refs]):
                    continue
                async with http.delete(f"{prefix}/namespaces/{md['namespace']}/{plural}/{md['name']}") as rsp:
                    if rsp.status < 400:
                        self.deleted.append((plural, md["namespace"], md["name"]))

    async def _owner_exists(self, http: aiohttp.ClientSession, namespace: str, ref: dict[str, Any]) -> bool:
        template = OWNER_PATHS.get((ref.get("apiVersion"), ref.get("kind")))
        if template is None:
            return True  # an owner kind this collector does not know: never guess
        async with http.get(template.format(ns=namespace, name=ref["name"])) as rsp:
            if rsp.status == 404:
                return False
            owner = await rsp.json()
        return owner.get("metadata", {}).get("uid") == ref.get("uid")
