"""``CompiledPlan``: the compiled, versioned JSON plan and what can be done with it (DESIGN §3).

A plan is data: it is read, checked, written, explained and restored into an exec DAG here, and run by the
runtime through the API (``TableEnvironment.execute_plan``), which sits above this layer. The session a plan
belongs to comes in explicitly (``PlanSession``: options and catalog lookups, built by the API), never as an
environment object.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planengine.errors import PlanError, PlanIncompatible, PlanMigrationRequired
from planengine.exec import base as B
from planengine.exec.nodes import Sink, TableSourceScan
from planengine.exec.specs import FilterPushDownSpec, LimitPushDownSpec, PartitionPushDownSpec, WatermarkPushDownSpec
from planengine.plan import serde
from planengine.plan.catalog_objects import FORCE_RECOMPILE, PlanSession, RestoreContext
from planengine.plan.explain import explain_plan_json
from planengine.plan.restore import INCOMPATIBLE, NEEDS_MIGRATION, CheckReport, check_plan
from planengine.plan.strategies import record_strategies
from planengine.plan.validate import validate_plan
from planengine.sql.source_text import read_source

log = logging.getLogger("planengine.plan")

# Ability specs that keep a scan's row the table's physical row (projections and metadata change it).
_ROW_KEEPING_SPECS = (FilterPushDownSpec, LimitPushDownSpec, PartitionPushDownSpec, WatermarkPushDownSpec)


class CompiledPlan:
    """A plan as JSON plus, lazily, its restored exec DAG.

    Restoring never re-plans: the DAG is rebuilt node by node from the JSON, with tables resolved under the
    catalog-object strategies of the session it is restored in.
    """

    def __init__(self, plan: dict[str, Any], session: PlanSession | None = None, sinks: list[Sink] | None = None):
        self._plan = plan
        # Options and catalog lookups of the session that compiled or loaded the plan: restore strategies,
        # table.plan.force-recompile, where tables the plan does not fully store come from.
        self.session = session or PlanSession()
        self._sinks = sinks  # the DAG the plan was compiled from, when it was compiled in this process
        self.restore_decisions: list[str] = []

    # --- construction --------------------------------------------------------------------------------
    @staticmethod
    def from_json(text: str, session: PlanSession | None = None) -> CompiledPlan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise PlanError(f"plan is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}",
                            hint="compile it again with planengine compile") from None
        except RecursionError:
            raise PlanError("plan JSON is nested too deeply to be a compiled plan",
                            hint="compile it again with planengine compile") from None
        validate_plan(data)
        return CompiledPlan(data, session)

    @staticmethod
    def from_file(path: str | os.PathLike[str], if_absent: Callable[[], CompiledPlan] | None = None,
                  session: PlanSession | None = None) -> CompiledPlan:
        """Load a plan; with ``if_absent``, compile and write it first when the file does not exist."""
        p = Path(path)
        if not p.exists():
            if if_absent is None:
                raise PlanError(f"plan file {p} does not exist", hint="compile it with COMPILE PLAN or planengine "
                                                                       "compile")
            plan = if_absent()
            plan.write_to_file(p, ignore_if_exists=True)
            return plan
        return CompiledPlan.from_json(read_source(p, error=PlanError), session)

    # --- properties ----------------------------------------------------------------------------------
    @property
    def plan_id(self) -> str:
        return str(self._plan.get("planId"))

    @property
    def engine_version(self) -> str:
        return str(self._plan.get("engineVersion"))

    @property
    def data(self) -> dict[str, Any]:
        return self._plan

    def as_json(self) -> str:
        return serde.dumps(self._plan)

    def write_to_file(self, path: str | os.PathLike[str], ignore_if_exists: bool = False) -> None:
        """Write the plan; an existing file is kept (``ignore_if_exists``) or refused, unless the session's
        ``table.plan.force-recompile`` says to overwrite it."""
        p = Path(path)
        if p.exists():
            force = str(self.session.config.get(FORCE_RECOMPILE, "false")).lower() == "true"
            if ignore_if_exists and not force:
                return
            if not force:
                raise PlanError(f"plan file {p} already exists",
                                hint="use COMPILE PLAN ... IF NOT EXISTS, delete the file, or SET "
                                     f"'{FORCE_RECOMPILE}' = 'true'")
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(self.as_json(), encoding="utf-8")
        os.replace(tmp, p)

    # --- restore -------------------------------------------------------------------------------------
    def check(self) -> CheckReport:
        return check_plan(self._plan)

    def restore(self) -> list[Sink]:
        """The exec DAG (sinks), after the restore checks; raises with what to do when it cannot.

        The plan's session (options and catalog lookups) decides where tables the plan does not fully store
        come from; without one, the plan alone is used under the default strategies."""
        if self._sinks is not None:
            return self._sinks
        report = self.check()
        if report.status == NEEDS_MIGRATION:
            raise PlanMigrationRequired("the plan needs migration before this engine can restore it:\n"
                                        + report.summary(), hint="COMPILE PLAN 'new.json' FROM 'old.json'")
        if report.status == INCOMPATIBLE:
            raise PlanIncompatible("this engine cannot restore the plan:\n" + report.summary())
        tables = RestoreContext.from_session(self.session)
        sinks = serde.read_plan(self._plan, tables)
        _check_catalog_rows(self._plan, sinks)
        sinks = record_strategies(sinks)  # plans from before strategies were recorded: the same rule
        self._sinks = sinks
        self.restore_decisions = tables.decisions
        log.info("restored plan %s (%d nodes) written by engine %s", self.plan_id, len(self._plan["nodes"]),
                 self.engine_version)
        return self._sinks

    def explain(self) -> str:
        return explain_plan_json(self._plan)


def _check_catalog_rows(plan: dict[str, Any], sinks: list[Any]) -> None:
    """A table the plan stores by identifier only (IDENTIFIER strategy, temporary tables) has no schema in the
    plan to compare with the catalog's; compare the rows its scan and sink nodes were planned for instead."""
    by_id = {n["id"]: n for n in plan.get("nodes", [])}
    for nid, node in enumerate(B.topological(list(sinks)), start=1):
        data = by_id.get(nid, {})
        if not isinstance(node, TableSourceScan | Sink) or "resolvedTable" in (data.get("table") or {}):
            continue
        ref = node.table.resolved
        if ref is None:
            continue
        schema = ref.table.schema
        if isinstance(node, TableSourceScan):
            if any(not isinstance(a, _ROW_KEEPING_SPECS) for a in node.abilities):
                continue  # projected or metadata-reading scans: their row is not the table's physical row
            expected = [(c.name, str(c.type.without_time_attribute())) for c in schema.physical_columns]
            actual = [(f.name, str(f.type.without_time_attribute())) for f in node.output_type.fields]
        else:
            if node.target_columns or node.abilities:
                continue
            expected = [(c.name, "") for c in schema.physical_columns]
            actual = [(f.name, "") for f in node.output_type.fields]
        if expected != actual:
            raise PlanIncompatible(
                f"node {nid}: table {node.table.identifier} changed its schema since the plan was compiled: the plan "
                f"reads/writes {_columns(actual)}, the catalog table now has {_columns(expected)}",
                hint="restore needs the table as it was when the plan was compiled; recreate it with that schema, "
                     "or compile the query again in a new job",
            )


def _columns(cols: list[tuple[str, str]]) -> str:
    return "(" + ", ".join(f"{name} {typ}".strip() for name, typ in cols) + ")"

