"""Helpers shared by the plan tests: compile in one session, restore in another (DESIGN §3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from planengine.api import TableEnvironment
from planengine.exec import base as B
from planengine.plan.compiled_plan import CompiledPlan

REPO = Path(__file__).resolve().parents[2]


def env_with(ddl: str = "", **config: str) -> TableEnvironment:
    env = TableEnvironment(dict(config))
    if ddl.strip():
        env.execute_sql(ddl)
    return env


def restored_tables(sinks: list[Any]) -> dict[str, Any]:
    """Table name (last identifier part) -> the CatalogTable a restored scan/lookup/sink node will use."""
    out: dict[str, Any] = {}
    for node in B.topological(list(sinks)):
        spec = getattr(node, "table", None)
        if spec is not None and spec.resolved is not None:
            out[spec.identifier.split(".")[-1].strip("`")] = spec.resolved.table
    return out


def restore(text: str, env: TableEnvironment) -> tuple[CompiledPlan, list[Any]]:
    plan = CompiledPlan.from_json(text, env.plan_session())
    return plan, plan.restore()


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``planengine`` in a fresh interpreter, as the operator runs it."""
    return subprocess.run([sys.executable, "-m", "planengine.cli", *args], cwd=cwd or REPO, capture_output=True,
                          text=True, timeout=60, env=env)
