"""Faults of the control plane itself, which only a real one can have: the API server and etcd are killed (-9) and
started again in the middle of an upgrade. Every client reconnects on its own (the operator's kopf watches and API
calls, the node's sync loop and Lease, the tests' own watch), the upgrade goes on from the step its status recorded,
and no row is lost or written twice."""

from __future__ import annotations

import pytest

from tests.fixtures.cluster import own_control_plane
from tests.operator.e2e.harness import ON_KUBERNETES, World

pytestmark = [pytest.mark.timeout(420)]
ENDED = ("Succeeded", "RolledBack", "Refused")


@ON_KUBERNETES
def test_an_upgrade_survives_the_api_server_and_etcd_restarting(world: World) -> None:
    own_control_plane(world.plane)  # kills etcd and the API server
    world.start_operator()
    world.add_input("cpf", 3)
    world.apply(world.job_manifest("cpf", "0.1"))
    world.wait_status("cpf", lambda s: s.get("phase") == "Running", "Running")
    with world.feeding("cpf"):
        world.apply(world.job_manifest("cpf", "0.2"))
        world.wait_status("cpf", lambda s: (s.get("upgrade") or {}).get("step") not in (None, "Check"),
                          "the upgrade past its check")
        world.plane.restart("kube-apiserver")
        world.plane.restart("etcd")
        world.plane.wait_ready()
        status = world.wait_status("cpf", lambda s: (s.get("upgrade") or {}).get("step") in ENDED
                                   and s.get("phase") == "Running", "the upgrade finished", timeout=120)
        if status["upgrade"]["step"] == "Refused":
            # While the API server is down the scheduler's watch backs off, so a standby pod created around the
            # outage can stay unscheduled past this world's 60 s toolTimeout (CI saw it once, on a loaded
            # machine): the operator then refuses the upgrade and keeps 0.1 running, which is right. What must
            # hold is what follows: nothing lost or twice, and the same upgrade asked again goes through.
            assert "standby" in status["upgrade"]["message"], status["upgrade"]
            world.apply(world.job_manifest("cpf", "0.1"))
            world.wait_status("cpf", lambda s: (s.get("upgrade") or {}).get("withdrawn"), "the target withdrawn")
            world.apply(world.job_manifest("cpf", "0.2"))
            status = world.wait_status("cpf", lambda s: (s.get("upgrade") or {}).get("step") in ENDED
                                       and s.get("phase") == "Running" and s.get("engineVersion") == "0.2",
                                       "the upgrade asked again finished", timeout=120)
    assert status["upgrade"]["step"] == "Succeeded", status["upgrade"]
    assert status["engineVersion"] == "0.2"
    world.add_input("cpf", 2)
    world.assert_exactly_once("cpf", timeout=60)
