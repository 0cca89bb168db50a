"""Repository-layout guarantees that are easy to break and costly to notice late."""

import importlib
import subprocess
import sys
from pathlib import Path

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
