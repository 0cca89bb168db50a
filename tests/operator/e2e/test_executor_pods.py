"""Spark executors as pods: the driver's Spark asks the real API server for them, the scheduler places them, the
test kubelet runs them through ``planengine-spark-executor``, and they take the job's tasks.

The real engine on the Kubernetes launcher, on a node that runs executor pods (``Kubelet.executor_pods``; by
default a node runs a driver's tasks in-process: each executor is another JVM). The job asks for two executors
(``spec.executor.instances: 2``, a quarter core each so they fit the 2-core node beside the driver). What shows
it, from Spark's side and from Kubernetes': the two pods exist, labelled by Spark and owned by the driver pod (so
the real garbage collector takes them with it); they reach the driver through its Service's name; Spark's own
executor list (the driver's ``/v1/status``) has both, each with completed tasks. Then one executor pod is killed
(SIGKILL of its JVM, as an OOM kill would) while batches run: Spark marks it lost, asks the API server for a new
pod, and the output stays exact: every row and every closed window once.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from typing import Any

import pytest

from tests.operator.e2e.harness import REAL_TARGET, World, wait_for
from tests.operator.e2e.test_real_engine import FEED_EVERY, JVM

pytestmark = pytest.mark.timeout(1200)

STATUS_PORT = 4041  # the driver's status API in its pod (operator/planengine_operator/builders.py)
EXECUTORS = 2


def _executor_pods(world: World, driver: str) -> list[dict[str, Any]]:
    return [p for p in world.api.list("", "pods", world.ns, labels="spark-role=executor")
            if any(ref.get("name") == driver for ref in p["metadata"].get("ownerReferences") or [])]


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def _spark_executors(world: World, driver: str) -> list[dict[str, Any]]:
    """The driver's ``/v1/status`` ``executors``: Spark's own list (its status store), not the pods."""
    pod = world.api.get("", "pods", world.ns, driver) or {}
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return []
    try:
        with urllib.request.urlopen(f"http://{ip}:{STATUS_PORT}/v1/status", timeout=5) as answer:
            return [e for e in json.loads(answer.read()).get("executors") or [] if e.get("id") != "driver"]
    except OSError:
        return []


@pytest.mark.parametrize("launcher", ["kubernetes"], indirect=True)
def test_executors_are_pods_that_take_tasks_and_a_lost_one_is_replaced(real_world: World) -> None:
    world = real_world
    assert world.kubelet is not None
    world.kubelet.executor_pods = True
    world.start_operator()
    world.add_input("x", 3)
    world.apply(world.job_manifest("x", "0.1", executor={"instances": EXECUTORS, "cores": 1, "memory": "1Gi"},
                                   sparkConf={"spark.kubernetes.executor.request.cores": "250m"}))
    status = world.wait_status("x", lambda s: s.get("phase") == "Running", "phase Running", timeout=JVM)
    driver = status["driver"]["name"]
    pods = wait_for(lambda: len(_running(_executor_pods(world, driver))) == EXECUTORS
                    and _running(_executor_pods(world, driver)), JVM, f"{EXECUTORS} executor pods Running",
                    lambda: world.diagnosis("x"))
    for pod in pods:  # Spark's pods: its labels, the driver as owner, placed by the scheduler on the test node
        assert pod["spec"]["nodeName"] == world.kubelet.node
        assert pod["metadata"]["labels"].get("spark-app-selector")
    world.assert_exactly_once("x", timeout=JVM)

    def both_took_tasks() -> list[dict[str, Any]] | None:
        active = [e for e in _spark_executors(world, driver) if e["active"]]
        return active if len(active) == EXECUTORS and all(e["completedTasks"] > 0 for e in active) else None

    with world.feeding("x", every=FEED_EVERY):
        executors = wait_for(both_took_tasks, JVM, "tasks on both executors",
                             lambda: _spark_executors(world, driver))
        addresses = {e["hostPort"].rsplit(":", 1)[0] for e in executors}
        assert addresses == {p["status"]["podIP"] for p in pods}, (addresses, pods)  # the executors are the pods
        victim = pods[0]["metadata"]["name"]
        pid = world.kubelet.process(world.ns, victim)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        replaced = wait_for(lambda: [p for p in _running(_executor_pods(world, driver))
                                     if p["metadata"]["name"] not in {q["metadata"]["name"] for q in pods}],
                            JVM, "a new executor pod in place of the lost one",
                            lambda: [(p["metadata"]["name"], (p.get("status") or {}).get("phase"))
                                     for p in _executor_pods(world, driver)])
        wait_for(lambda: len([e for e in _spark_executors(world, driver) if e["active"]]) == EXECUTORS, JVM,
                 "Spark back to two executors", lambda: _spark_executors(world, driver))
    lost = [e for e in _spark_executors(world, driver) if not e["active"]]
    assert lost, "Spark's executor list keeps the lost executor, inactive"
    assert world.status("x")["runId"] == status["runId"]  # the driver lived on: no restart of the job
    world.assert_exactly_once("x", timeout=JVM)
    world.assert_windows_exactly_once("x", timeout=JVM)
    print(f"\nexecutor pods {[p['metadata']['name'] for p in pods]}; killed {victim}, replaced by "
          f"{replaced[0]['metadata']['name']}; {len(world.input_rows('x'))} rows exactly once")


@pytest.mark.parametrize("launcher", ["kubernetes"], indirect=True)
def test_an_upgrade_hands_over_to_a_standby_with_executor_pods_of_its_own(real_world: World) -> None:
    """The warm standby is a second driver pod with its own Service and its own executor pods: they must reach
    it while the old driver (and its executors) still run, the handover stays exact, and the old driver's
    executor pods go with it (the real garbage collector, through their owner reference)."""
    world = real_world
    assert world.kubelet is not None
    world.kubelet.executor_pods = True
    world.start_operator()
    executor = {"instances": EXECUTORS, "cores": 1, "memory": "1Gi"}
    quarter = {"spark.kubernetes.executor.request.cores": "250m"}
    world.add_input("u", 3)
    world.apply(world.job_manifest("u", "0.1", executor=executor, sparkConf=quarter))
    first = world.wait_status("u", lambda s: s.get("phase") == "Running", "phase Running", timeout=JVM)
    old_driver = first["driver"]["name"]
    wait_for(lambda: len(_running(_executor_pods(world, old_driver))) == EXECUTORS, JVM,
             f"{EXECUTORS} executor pods of the first driver", lambda: world.diagnosis("u"))
    with world.feeding("u", every=FEED_EVERY):
        world.apply(world.job_manifest("u", REAL_TARGET, executor=executor, sparkConf=quarter))
        status = world.wait_status("u", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded", timeout=2 * JVM)
    driver = status["driver"]["name"]
    assert driver != old_driver and status["engineVersion"] == REAL_TARGET
    wait_for(lambda: len([e for e in _spark_executors(world, driver) if e["active"]]) == EXECUTORS, JVM,
             "the new driver's two executors in Spark's list", lambda: _spark_executors(world, driver))
    wait_for(lambda: not _executor_pods(world, old_driver), JVM, "the old driver's executor pods deleted",
             lambda: [p["metadata"]["name"] for p in _executor_pods(world, old_driver)])
    world.assert_exactly_once("u", timeout=JVM)
    world.assert_windows_exactly_once("u", timeout=JVM)
