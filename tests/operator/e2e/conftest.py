"""Fixtures of the operator's end-to-end tests: the real control plane (one per session, ``tests/cluster``) with
the SparkPlanJob CRD installed, and a ``world`` around one namespace of it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The kopf timer's interval is fixed when planengine_operator.main registers its handlers (at import).
os.environ.setdefault("PLANENGINE_OPERATOR_TICK", "0.3")
_REPO = Path(__file__).resolve().parents[3]
if str(_REPO) not in sys.path:  # `pytest` as well as `python -m pytest`
    sys.path.insert(0, str(_REPO))

from planengine_operator.launchers.kubernetes import DRIVER_URL_ENV  # noqa: E402
from tests.fixtures.cluster import own_control_plane  # noqa: E402
from tests.operator.e2e.harness import ENGINE_KIND, KUBECTL, REAL_ENGINE, World  # noqa: E402
from tests.operator.kubelet import sandbox  # noqa: E402

# PLANENGINE_E2E_LAUNCHER=local|kubernetes|both (default both) selects the launchers the scenarios run on.
LAUNCHERS = os.environ.get("PLANENGINE_E2E_LAUNCHER", "both")
# The real-engine scenarios (JVMs, minutes each) run on the Kubernetes launcher, the production path, unless
# PLANENGINE_E2E_REAL_LAUNCHERS=both asks for the local launcher too: what they add to the contract scenarios
# (real checkpoints, exactly-once across JVMs) does not depend on the launcher, and the contract scenarios still
# run every protocol step on both launchers. On both they cost ~8 more minutes of the 2-core CI budget.
REAL_LAUNCHERS = ["local", "kubernetes"] if os.environ.get("PLANENGINE_E2E_REAL_LAUNCHERS") == "both" \
    else ["kubernetes"]


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A real-engine scenario without a launcher of its own (``ON_KUBERNETES``, ``LAUNCHER_INDEPENDENT``) runs on
    ``REAL_LAUNCHERS``: a ``parametrize`` mark, added before pytest reads the marks (a direct ``parametrize`` call
    here would clash with the ``launcher`` fixture's own params)."""
    if "real_world" not in metafunc.fixturenames:
        return
    chosen = any("launcher" in str(marker.args[0]) for marker in metafunc.definition.iter_markers("parametrize"))
    if not chosen:
        metafunc.definition.add_marker(pytest.mark.parametrize("launcher", REAL_LAUNCHERS, indirect=True))
@pytest.fixture
def kapi(control_plane, operator_identity, cluster_namespace):
    """The test's namespace of the real control plane (named for the API emulator it replaced) and the identity
    the operator logs in with (the chart's ServiceAccount)."""
    return control_plane, cluster_namespace, operator_identity


def _world(kind: str, launcher: str, kapi, tmp_path, monkeypatch) -> Iterator[World]:
    if ENGINE_KIND not in (kind, "both"):
        pytest.skip(f"PLANENGINE_E2E_ENGINE={ENGINE_KIND}: the {kind}-engine scenarios are not selected")
    if LAUNCHERS != "both" and launcher != LAUNCHERS:
        pytest.skip(f"PLANENGINE_E2E_LAUNCHER={LAUNCHERS}: the {launcher} launcher is not selected")
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: run `bash tests/setup/prepare.sh`")
    plane, namespace, identity = kapi
    if launcher == "kubernetes":
        own_control_plane(plane)  # the test kubelet joins as a node: a certificate from the cluster's own CA
        why = sandbox.available()
        if why is not None:
            pytest.skip(why)
        # The operator reaches drivers at the pod address their Service selects (the test kubelet's pod IPs).
        monkeypatch.setenv(DRIVER_URL_ENV, "http://{endpoint}:{port}")
    built = World(tmp_path, plane, namespace, kind, launcher, operator_identity=identity)
    monkeypatch.setenv("KUBECONFIG", str(built.operator_kubeconfig))  # kopf logs in as the chart's operator
    yield built
    built.close()


@pytest.fixture(params=["local", "kubernetes"])
def launcher(request) -> str:
    """Each scenario of ``world``/``real_world`` runs on both launchers: processes on this machine, and pods
    through the real control plane (``tests/cluster``) run by the test kubelet (``tests/operator/kubelet``)."""
    return str(request.param)


@pytest.fixture
def world(kapi, tmp_path, monkeypatch, launcher) -> Iterator[World]:
    """The operator with the contract engine double (fast; knobs for refusing and crashing targets)."""
    yield from _world("contract", launcher, kapi, tmp_path, monkeypatch)


@pytest.fixture
def real_world(kapi, tmp_path, monkeypatch, launcher) -> Iterator[World]:
    """The operator with the real planengine CLI (two builds) behind ``engine_wrapper.py``."""
    if not REAL_ENGINE.exists():
        pytest.skip(f"{REAL_ENGINE} is missing: run `make venv`")
    yield from _world("real", launcher, kapi, tmp_path, monkeypatch)


@pytest.fixture
def contract_only() -> None:
    """Kept for readability of the scenarios that need the contract double's knobs."""
