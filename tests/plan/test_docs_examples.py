"""Every ```python block of docs/compiled-plans.md runs, in order, in one namespace in a temp dir."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.plan._support import REPO

DOC = REPO / "docs" / "compiled-plans.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_guide_has_runnable_examples() -> None:
    assert len(python_blocks()) >= 5


def test_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs_example"}
    for i, block in enumerate(python_blocks(), start=1):
        try:
            exec(compile(block, f"{DOC.name}[python block {i}]", "exec"), namespace)
        except Exception as error:  # pragma: no cover - the failure message is the point
            pytest.fail(f"python block {i} of {DOC.name} failed: {error!r}\n{block}")
    assert (tmp_path / "counts.json").exists() and (tmp_path / "job.json").exists()
