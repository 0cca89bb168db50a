"""constraints.txt (the dependency lock) against pyproject.toml and the installs that read it: the ranges and the
pins cannot disagree, a new direct dependency cannot land without its pin, and every install of the project's
dependencies (``make venv``, both images) goes through the lock."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.setup import lock

REPO = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPO / "constraints.txt"
PIN = re.compile(r"^([a-z0-9][a-z0-9-]*)==([0-9][^\s;]*)$")


def pins() -> dict[str, str]:
    lines = [line for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")]
    bad = [line for line in lines if not PIN.match(line)]
    assert bad == [], f"constraints.txt holds only `name==version` lines with canonical names: {bad}"
    found = dict(PIN.match(line).groups() for line in lines)  # type: ignore[union-attr]
    assert len(found) == len(lines), "a package is pinned twice"
    assert list(found) == sorted(found), "constraints.txt is sorted by name (make lock writes it so)"
    return found


def test_every_direct_dependency_is_pinned_within_its_range() -> None:
    locked = pins()
    problems = []
    for requirement in lock.direct_requirements(extras=("spark", "operator", "dev")):
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        if name not in locked:
            problems.append(f"{requirement}: not in constraints.txt (run make lock)")
        elif not requirement.specifier.contains(Version(locked[name]), prereleases=True):
            problems.append(f"{requirement}: constraints.txt pins {locked[name]}, outside the range")
    assert problems == [], "pyproject.toml and constraints.txt disagree:\n" + "\n".join(problems)


def test_the_lock_holds_neither_the_project_nor_tools_outside_its_tree() -> None:
    locked = pins()
    assert "planengine" not in locked
    assert {"pip", "setuptools", "wheel"}.isdisjoint(locked)
    assert {"pyspark", "kopf", "boto3", "prometheus-client", "pytest"} <= set(locked)  # one of each extra


def test_the_check_above_can_fail() -> None:
    """Guard: a range the pin is outside of is reported (the comparison is not vacuous)."""
    assert not Requirement("kopf>=1.45,<2").specifier.contains(Version("2.0.0"))
    assert Requirement("kopf>=1.45,<2").specifier.contains(Version(pins()["kopf"]))


def test_every_install_of_the_dependencies_reads_the_lock() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "pip install --quiet -c constraints.txt -e '.[spark,operator,s3,dev]'" in makefile
    assert re.search(r"^\$\(STAMP\): .*constraints\.txt", makefile, re.M), "a new lock must re-run make venv"
    assert re.search(r"^lock:\n\t.*-m tests\.setup\.lock > constraints\.txt", makefile, re.M)
    dockerfile = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    installs = [line for line in dockerfile.splitlines() if re.search(r"\bpip install\b", line)]
    project = [line for line in installs if "planengine-*.whl" in line or "$pyspark" in line]
    assert len(project) == 3 and all(" -c " in line for line in project), project
    assert "!constraints.txt" in (REPO / ".dockerignore").read_text()
