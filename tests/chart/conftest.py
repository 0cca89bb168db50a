"""Fixtures for the chart tests: the real helm binary that tests/setup/prepare.d/10-tools.sh installs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "planengine-operator"
HELM = REPO / ".tools" / "bin" / "helm"
# kubernetes-validate ships schemas per minor version; 1.35 matches the kubectl installed beside helm.
KUBERNETES_VERSION = "1.35.0"
RELEASE = "pe"
NAMESPACE = "planengine-system"

HelmRun = Callable[..., subprocess.CompletedProcess]
# libyaml's safe loader parses a rendered chart (43 kB, the CRD included) in 17 ms instead of 160 ms: about
# half of each render's cost, and the chart tests render ~50 times in the fast tier. Same documents either way.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="session")
def helm() -> Path:
    if not HELM.is_file():
        pytest.skip(f"{HELM} is missing: run `bash tests/setup/prepare.sh` (make test does) to install helm")
    return HELM


@pytest.fixture
def helm_run(helm: Path, tmp_path: Path) -> HelmRun:
    """helm_run(*args, values=dict) -> the finished helm process; values go in through a --values file."""

    def _run(*args: str, values: dict | None = None) -> subprocess.CompletedProcess:
        command = [str(helm), *args]
        if values is not None:
            values_file = tmp_path / "values-under-test.yaml"
            values_file.write_text(yaml.safe_dump(values, sort_keys=False))
            command += ["--values", str(values_file)]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    return _run


@pytest.fixture
def template_args() -> Callable[..., list[str]]:
    def _args(namespace: str = NAMESPACE) -> list[str]:
        return [
            "template", RELEASE, str(CHART), "--namespace", namespace, "--include-crds",
            "--kube-version", KUBERNETES_VERSION,
        ]

    return _args


@pytest.fixture
def render(helm_run: HelmRun, template_args) -> Callable[..., list[dict]]:
    """render(values) -> the parsed manifests of `helm template` (CRDs included); fails the test on error."""

    def _render(values: dict | None = None, *, namespace: str = NAMESPACE) -> list[dict]:
        result = helm_run(*template_args(namespace), values=values or {})
        assert result.returncode == 0, result.stderr
        return [doc for doc in yaml.load_all(result.stdout, Loader=YAML_LOADER) if doc]

    return _render
