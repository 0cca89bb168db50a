"""Fixtures of the operator's end-to-end tests: an emulated cluster (``kapi``) and a ``world`` around it."""

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

from tests.operator.e2e.harness import ENGINE_KIND, KUBECTL, World  # noqa: E402
from tests.operator.kapi.server import run_in_thread  # noqa: E402

CRD = _REPO / "crds" / "sparkplanjobs.planengine.io.yaml"


@pytest.fixture
def kapi() -> Iterator:
    api = run_in_thread([CRD])
    yield api
    api.stop()


@pytest.fixture
def world(kapi, tmp_path, monkeypatch) -> Iterator[World]:
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: run `bash tests/setup/prepare.sh`")
    built = World(tmp_path, kapi)
    monkeypatch.setenv("KUBECONFIG", str(built.kubeconfig))
    yield built
    built.close()


@pytest.fixture
def contract_only() -> None:
    """Scenarios that need a refusing or crashing target engine (knobs of the contract double)."""
    if ENGINE_KIND != "contract":
        pytest.skip("needs the contract double's knobs (--check-exit, --crash-after-batches)")
