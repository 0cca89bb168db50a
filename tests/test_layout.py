"""Repository-layout guarantees that are easy to break and costly to notice late."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_import_operator_is_the_standard_library_even_from_the_repo_root():
    # Run from the repository root, where an `operator/` directory exists, in a fresh interpreter.
    code = "import operator, sys; print(operator.__file__); print(operator.itemgetter(1)([0, 7]))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    module_file, item = result.stdout.split()
    assert Path(module_file).name == "operator.py"
    assert "site-packages" not in module_file and str(REPO) not in module_file
    assert item == "7"


def test_no_top_level_operator_package():
    assert not (REPO / "operator" / "__init__.py").exists()


def test_operator_package_is_importable_under_its_own_name():
    module = importlib.import_module("planengine_operator")
    assert Path(module.__file__).parent == REPO / "operator" / "planengine_operator"


# The fixed top level (COMMON rules, README "Repository layout"): new things go inside one of these.
TOP_LEVEL = {
    "pyproject.toml", "operator", "crds", "charts", "planengine", "tests", "Dockerfile", "README.md", "Makefile",
    ".ci", "examples", "benchmarks", "docs",
    "constraints.txt",  # the dependency lock pip reads beside pyproject.toml (README, "Dependencies")
}
# Files that configure the tools reading the tree (git, docker build context), not project content.
TOOL_FILES = {".gitignore", ".dockerignore"}


def _tracked_top_level() -> set[str]:
    try:
        result = subprocess.run(
            ["git", "ls-files", "-z", "--cached"], cwd=REPO, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError) as error:  # an exported tree (sdist, image) has no .git
        pytest.skip(f"not a git checkout: {error}")
    return {path.split("/", 1)[0] for path in result.stdout.split("\0") if path}


def test_only_the_fixed_top_level_entries_are_tracked():
    unexpected = _tracked_top_level() - TOP_LEVEL - TOOL_FILES
    assert not unexpected, (
        f"top-level entries outside the fixed layout are tracked by git: {sorted(unexpected)}; "
        f"move them under one of {sorted(TOP_LEVEL)} (charts/<chart>/, docs/, tests/, ...)"
    )


def test_the_layout_check_sees_the_tracked_tree():
    """Guard: the check above compares the real listing (an empty one would pass anything)."""
    assert {"planengine", "operator", "charts", "tests", "pyproject.toml"} <= _tracked_top_level()
