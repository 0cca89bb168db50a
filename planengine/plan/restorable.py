"""Beyond the plan's JSON: can the plan be restored *here*, with the catalog and environment ``run`` will have?

``check_plan`` (``planengine.plan.restore``) judges node versions and format. A plan can pass that and still
fail when ``run`` restores it: a secret masked as ``******`` that no catalog supplies, a table stored by
identifier only, a temporary table nobody declared. ``check_restorable`` restores the plan the way ``run
--plan`` would (same ``--catalog`` / ``-D`` inputs) and reports such failures as incompatible, so a
``check`` that says compatible means ``run`` gets past restore.

Secrets stored as ``${env:NAME}`` references resolve only where the job runs; a reference to a variable
that is not set where ``check`` runs is reported as a warning (the verdict stays), because the check may run
in a different environment (an operator's check pod) than the driver.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from planengine.catalog.secret_options import ENV_REFERENCE
from planengine.errors import PlanEngineError
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.restore import COMPATIBLE, INCOMPATIBLE, CheckReport


def check_restorable(plan: CompiledPlan, report: CheckReport) -> None:
    """Restore ``plan`` with its session (the catalogs and options ``run`` would have); failures make it
    incompatible."""
    if report.status != COMPATIBLE:
        return  # the JSON-level reasons say why (an incompatible plan, or one to migrate before restoring)
    try:
        CompiledPlan(plan.data, plan.session).restore()
    except PlanEngineError as error:
        report.add(INCOMPATIBLE, f"restoring the plan fails here: {error.message}", hint=error.hint)
    for table, key, variable in unset_references(plan.data, os.environ):
        report.add(COMPATIBLE, f"warning: table {table}: option '{key}' reads the environment variable "
                               f"{variable}, which is not set here",
                   hint=f"set {variable} where the job runs (on Kubernetes, from a Secret), or the job fails at start")


def unset_references(plan_json: dict[str, Any], environ: Mapping[str, str]) -> Iterator[tuple[str, str, str]]:
    """``(table, option, variable)`` for every ``${env:NAME}`` in the plan's table options whose variable is
    not in ``environ``."""
    for node in plan_json.get("nodes", []):
        table = node.get("table") if isinstance(node.get("table"), dict) else None
        resolved = (table or {}).get("resolvedTable")
        options = resolved.get("options") if isinstance(resolved, dict) else None
        if not isinstance(options, dict):
            continue  # a table without options (or a malformed one: restoring the plan reports that)
        for key, value in sorted(options.items(), key=lambda item: str(item[0])):
            for match in ENV_REFERENCE.finditer(str(value)):
                if match.group(1) not in environ:
                    yield str(table.get("identifier") if table else "?"), key, match.group(1)
