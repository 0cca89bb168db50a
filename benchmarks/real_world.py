"""The set-up the real-operator benchmarks share: the control plane, one namespace, one ``World`` on a launcher.

``benchmarks/operator_upgrade_real.py`` (downtime) and ``benchmarks/fault_campaign.py`` (faults) run the same
real set-up: real kopf, the control plane built under ``.tools``, the real ``planengine`` CLI of the two engine
builds and, on the Kubernetes launcher, the test kubelet running the pods. One definition keeps the two
measuring the same thing; each program only adds what it measures.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("PLANENGINE_OPERATOR_TICK", "0.3")  # fixed at handler import
REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(REPO), str(REPO / "operator")) if p not in sys.path]

from planengine_operator.launchers.kubernetes import DRIVER_URL_ENV  # noqa: E402
from tests.fixtures.cluster import cluster_session  # noqa: E402
from tests.operator.e2e.harness import World  # noqa: E402


@contextlib.contextmanager
def real_world(tmp: Path, launcher: str, *, namespace: str = "bench", executors: int = 0) -> Iterator[World]:
    """A ``World`` of the real engine on ``launcher`` in a fresh control plane under ``tmp``; the operator is not
    started yet (a caller may prepare the world first, e.g. put the job claim on a tmpfs). Everything the world
    started is stopped at the end: drivers, standbys and, on Kubernetes, the kubelet with its pods."""
    if launcher == "kubernetes":
        os.environ[DRIVER_URL_ENV] = "http://{endpoint}:{port}"  # the kubelet's pod IPs; no cluster DNS here
    with cluster_session(tmp / "cluster") as (plane, identity):
        plane.admin.create("", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": namespace}})
        (tmp / "world").mkdir()
        world = World(tmp / "world", plane, namespace, "real", launcher, operator_identity=identity)
        try:
            if executors:
                assert world.kubelet is not None
                world.kubelet.executor_pods = True  # the drivers' Spark asks the API server for executor pods
            os.environ["KUBECONFIG"] = str(world.operator_kubeconfig)
            yield world
        finally:
            world.close()  # kills drivers and standbys (their records under tmp; on Kubernetes: the kubelet)
