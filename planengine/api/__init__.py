"""The Python API (FLIP-190's Table API, pythonic): ``TableEnvironment`` and statement sets.

Beside the facade, the package holds what it returns and what it runs besides plans: ``results``
(``TableResult``) and ``tableau`` (its text tables, as Flink's SQL client prints them), ``preview`` (a bare
SELECT, run briefly) and ``catalog_statements`` (SHOW, DESCRIBE, ALTER TABLE: a mix-in of ``TableEnvironment``).

>>> env = TableEnvironment()
>>> _ = env.execute_sql(
...     "CREATE TABLE clicks (user_id BIGINT, page STRING) WITH ('connector' = 'datagen');"
...     "CREATE TABLE counts (page STRING, views BIGINT, PRIMARY KEY (page) NOT ENFORCED)"
...     "  WITH ('connector' = 'blackhole')")
>>> plan = env.compile_plan_sql("INSERT INTO counts SELECT page, COUNT(*) FROM clicks GROUP BY page")
>>> [n["type"].removeprefix("stream-exec-") for n in plan.data["nodes"]]
['table-source-scan_1', 'calc_1', 'exchange_1', 'group-aggregate_4', 'sink_2']
>>> plan.data["nodes"][3]["changelogMode"]   # a keyed blackhole, like Flink's, needs no UPDATE_BEFORE
'I,UA'
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from planengine.api.catalog_statements import CatalogStatements
from planengine.api.preview import explain_query, preview_query
from planengine.api.results import TableResult
from planengine.catalog.manager import CatalogManager
from planengine.catalog.objects import CatalogFunction, CatalogTable, ObjectIdentifier
from planengine.config import REGISTRY
from planengine.config import validate as validate_options
from planengine.connectors.discovery import load_factory
from planengine.errors import PlanError, UserError, ValidationError
from planengine.functions.defaults import default_registry
from planengine.functions.registry import FunctionRegistry
from planengine.plan import serde
from planengine.plan.catalog_objects import CatalogLookup, PlanSession
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.migrate import migrate_plan
from planengine.planner.ddl import view_from_query
from planengine.planner.planner import Planner, PlanResult
from planengine.planner.programs import explain_dag
from planengine.sql import parse_script
from planengine.sql import statements as S

log = logging.getLogger("planengine")


class TableEnvironment(CatalogStatements):
    """A session: catalogs, configuration and functions; plans and runs statements."""

    def __init__(self, config: dict[str, str] | None = None, catalog_manager: CatalogManager | None = None,
                 registry: FunctionRegistry | None = None):
        self.config: dict[str, str] = validate_options(dict(config or {}))
        self._reported_notes: set[str] = set()
        self.catalog_manager = catalog_manager or CatalogManager()
        self.registry = registry or default_registry()
        # Where this session's jobs go when no job root is named (``resolve_job_root``, step 4). None: the shared
        # default under the temp directory; ``planengine sql`` gives every session a directory of its own, so a
        # session never continues another one's job without being asked to.
        self.session_jobs_dir: str | None = None

    # --- statements ---------------------------------------------------------------------------------
    def execute_sql(self, script: str, source: str | None = None) -> list[TableResult]:
        """Execute every statement of a script in order; DDL applies immediately."""
        return [self.execute_statement(stmt) for stmt in parse_script(script, source)]

    def execute_statement(self, stmt: S.Statement) -> TableResult:
        handler = getattr(self, f"_exec_{type(stmt).__name__}", None)
        if handler is None:
            raise ValidationError(f"statement {type(stmt).__name__} is not supported here", location=stmt.location)
        try:
            return handler(stmt)
        except UserError as error:
            if error.location is None:
                raise type(error)(error.message, location=stmt.location, hint=error.hint) from None
            raise

    def _exec_CreateView(self, stmt: S.CreateView) -> TableResult:
        planner = self._planner()
        node = planner.convert_query(stmt.location, stmt.query)
        view = view_from_query(stmt.query, list(node.row_type.fields), stmt.column_names)
        identifier = self.catalog_manager.qualify(stmt.name)
        self.catalog_manager.create_view(identifier, view, stmt.temporary, stmt.if_not_exists)
        return TableResult("OK", f"view {identifier} created")

    def _exec_CreateFunction(self, stmt: S.CreateFunction) -> TableResult:
        if stmt.language.upper() != "PYTHON":
            raise ValidationError(f"functions in {stmt.language} are not supported; planengine runs Python functions",
                                  location=stmt.location, hint="implement it in Python and use LANGUAGE PYTHON")
        fn = CatalogFunction(stmt.class_name, "PYTHON")
        if stmt.system:
            self.catalog_manager.create_function(stmt.name[-1], fn, temporary=True, system=True,
                                                 ignore_if_exists=stmt.if_not_exists)
        else:
            identifier = self.catalog_manager.qualify(stmt.name)
            self.catalog_manager.create_function(identifier, fn, stmt.temporary, False, stmt.if_not_exists)
        return TableResult("OK", f"function {'.'.join(stmt.name)} created")

    def _exec_CreateCatalog(self, stmt: S.CreateCatalog) -> TableResult:
        self.catalog_manager.create_catalog_from_options(stmt.name, dict(stmt.options))
        return TableResult("OK", f"catalog {stmt.name} created")

    def _exec_CreateDatabase(self, stmt: S.CreateDatabase) -> TableResult:
        self.catalog_manager.create_database(stmt.name, if_not_exists=stmt.if_not_exists)
        return TableResult("OK", f"database {'.'.join(stmt.name)} created")

    def _exec_UseCatalog(self, stmt: S.UseCatalog) -> TableResult:
        self.catalog_manager.use_catalog(stmt.name)
        return TableResult("OK", f"using catalog {stmt.name}")

    def _exec_UseDatabase(self, stmt: S.UseDatabase) -> TableResult:
        self.catalog_manager.use_database(stmt.name)
        return TableResult("OK", f"using database {'.'.join(stmt.name)}")

    def _exec_Drop(self, stmt: S.Drop) -> TableResult:
        cm = self.catalog_manager
        if stmt.kind == "TABLE":
            cm.drop_table(stmt.name, stmt.temporary, stmt.if_exists)
        elif stmt.kind == "VIEW":
            cm.drop_view(stmt.name, stmt.temporary, stmt.if_exists)
        elif stmt.kind == "FUNCTION":
            if stmt.temporary and len(stmt.name) == 1 and cm.get_system_function(stmt.name[0]) is not None:
                cm.drop_system_function(stmt.name[0], stmt.if_exists)
            else:
                cm.drop_function(stmt.name, stmt.temporary, stmt.if_exists)
        elif stmt.kind == "CATALOG":
            cm.drop_catalog(stmt.name[-1], stmt.if_exists)
        elif stmt.kind == "DATABASE":
            cm.drop_database(stmt.name, stmt.if_exists)
        return TableResult("OK", f"{stmt.kind.lower()} {'.'.join(stmt.name)} dropped")

    def _exec_SetOption(self, stmt: S.SetOption) -> TableResult:
        if stmt.key is None:
            return TableResult("ROWS", rows=sorted(self.config.items()), columns=("key", "value"))
        result = REGISTRY.check(stmt.key, stmt.value or "")
        self.config[result.key] = result.value
        if result.note and result.note not in self._reported_notes:  # once per session: a note, not a nag
            self._reported_notes.add(result.note)
            log.warning("%s", result.note)
        return TableResult("OK", f"set '{result.key}' = '{result.value}'")

    def _exec_ResetOption(self, stmt: S.ResetOption) -> TableResult:
        if stmt.key is None:
            self.config.clear()
            return TableResult("OK", "reset all session options")
        key = REGISTRY.check_reset(stmt.key)
        self.config.pop(key, None)
        return TableResult("OK", f"reset '{key}'")

    def _exec_Insert(self, stmt: S.Insert) -> TableResult:
        plan = self.compile_plan([stmt])
        return self._execute(plan)

    def _exec_StatementSet(self, stmt: S.StatementSet) -> TableResult:
        plan = self.compile_plan(list(stmt.inserts))
        return self._execute(plan)

    def _exec_CompilePlan(self, stmt: S.CompilePlan) -> TableResult:
        path = Path(stmt.path)
        if path.exists() and stmt.if_not_exists and not self._force_recompile():
            kept = CompiledPlan.from_file(path, session=self.plan_session())
            return TableResult("PLAN", f"plan {path} exists; kept (IF NOT EXISTS)", plan=kept)
        plan = self.compile_plan(_inserts(stmt.body))
        plan.write_to_file(path)
        return TableResult("PLAN", f"plan {plan.plan_id} written to {path}", plan=plan)

    def _exec_CompileAndExecutePlan(self, stmt: S.CompileAndExecutePlan) -> TableResult:
        plan = CompiledPlan.from_file(stmt.path, if_absent=lambda: self.compile_plan(_inserts(stmt.body)),
                                      session=self.plan_session())
        return self._execute(plan)

    def _exec_ExecutePlan(self, stmt: S.ExecutePlan) -> TableResult:
        return self._execute(self.load_plan(stmt.path))

    def _exec_MigratePlan(self, stmt: S.MigratePlan) -> TableResult:
        old = CompiledPlan.from_file(stmt.old_path)
        migrated, decisions = migrate_plan(old.data)
        new = CompiledPlan(migrated, self.plan_session())
        new.write_to_file(stmt.new_path)
        return TableResult("PLAN", "\n".join([f"plan migrated to {stmt.new_path}", *decisions]), plan=new)

    def _exec_Explain(self, stmt: S.Explain) -> TableResult:
        body = stmt.body
        if isinstance(body, S.Query):
            return TableResult("EXPLAIN", explain_query(self, body, stmt.details))
        return TableResult("EXPLAIN", self.explain_inserts(_inserts(body), stmt.details))

    def _exec_ExplainPlan(self, stmt: S.ExplainPlan) -> TableResult:
        plan = self.load_plan(stmt.path)
        report = plan.check()
        return TableResult("EXPLAIN", plan.explain() + "\n\n== Restore check ==\n" + report.summary())

    def _exec_Query(self, stmt: S.Query) -> TableResult:
        """A bare SELECT previews its first rows (bounded by rows and time; ``planengine.api.preview``)."""
        return preview_query(self, stmt)

    # --- plans ------------------------------------------------------------------------------------------
    def _planner(self) -> Planner:
        return Planner(self.catalog_manager, self.registry, self.config)

    def _force_recompile(self) -> bool:
        return str(self.config.get("table.plan.force-recompile", "false")).lower() == "true"

    def plan_inserts(self, inserts: list[S.Insert], *, trace: bool = False) -> PlanResult:
        return self._planner().plan_inserts(inserts, trace=trace)

    def compile_plan(self, inserts: list[S.Insert]) -> CompiledPlan:
        result = self.plan_inserts(inserts)
        plan = serde.write_plan(result.sinks, self.config, result.sink_writes_batches)
        return CompiledPlan(plan, self.plan_session(), result.sinks)

    def compile_plan_sql(self, insert_sql: str) -> CompiledPlan:
        """Compile one INSERT or statement set (given as SQL) into a plan."""
        statements = parse_script(insert_sql)
        if len(statements) != 1:
            raise ValidationError(f"compile_plan_sql takes one INSERT or statement set, got {len(statements)} "
                                  "statements", hint="run DDL with execute_sql first")
        return self.compile_plan(_inserts(statements[0]))

    def load_plan(self, path_or_json: str | Path) -> CompiledPlan:
        text = str(path_or_json)
        if text.lstrip().startswith("{"):
            return CompiledPlan.from_json(text, self.plan_session())
        return CompiledPlan.from_file(text, session=self.plan_session())

    def explain_sql(self, sql: str, details: Iterable[str] = ()) -> str:
        statements = parse_script(sql)
        if len(statements) != 1:
            raise ValidationError("explain_sql takes exactly one statement")
        stmt = statements[0]
        if isinstance(stmt, S.Explain):
            return str(self.execute_statement(stmt))
        return self.explain_inserts(_inserts(stmt), tuple(details))

    def explain_inserts(self, inserts: list[S.Insert], details: Iterable[str] = ()) -> str:
        result = self.plan_inserts(inserts, trace=True)
        parts = ["== Abstract Syntax Tree ==", explain_dag(result.logical), "",
                 "== Optimized Logical Plan ==", explain_dag(result.optimized)]
        if any(d.upper() == "PLAN_ADVICE" for d in details) or any(d.upper() == "ESTIMATED_COST" for d in details):
            parts += ["", "== Rule trace =="]
            for step in result.trace:
                parts += [f"-- after {step.program}/{step.rule}", step.plan]
        plan = serde.write_plan(result.sinks, self.config, result.sink_writes_batches)
        parts += ["", "== Physical Execution Plan ==", CompiledPlan(plan).explain()]
        if any(d.upper() == "JSON_EXECUTION_PLAN" for d in details):
            parts += ["", "== Compiled Plan JSON ==", serde.dumps(plan)]
        return "\n".join(parts)

    def create_statement_set(self) -> StatementSetBuilder:
        return StatementSetBuilder(self)

    def plan_session(self) -> PlanSession:
        """This session as plans see it: its options (live, not a copy) and explicit catalog lookups."""
        return PlanSession(self.config, CatalogLookup(self._catalog_table, self._catalog_function,
                                                            _mutable_options))

    def _catalog_table(self, identifier: ObjectIdentifier) -> CatalogTable | None:
        try:
            entry = self.catalog_manager.get_table(identifier)
        except ValidationError:
            return None
        return entry.object if isinstance(entry.object, CatalogTable) else None

    def _catalog_function(self, path: tuple[str, ...]) -> CatalogFunction | None:
        found = self.catalog_manager.resolve_function(path)
        return None if found is None else found.function

    def execute_plan(self, plan: CompiledPlan, **options: Any) -> Any:
        """Run a plan in this session (``planengine.runtime.engine.executor.execute_compiled_plan`` takes the options).

        The plan layer never runs anything itself: the runtime sits above it and is called from here."""
        if importlib.util.find_spec("pyspark") is None:  # the optional `spark` extra, asked of itself
            raise PlanError("executing plans needs the Spark runtime (No module named 'pyspark')",
                            hint="pip install 'planengine[spark]', or COMPILE PLAN to only write the plan")
        from planengine.runtime.engine.executor import execute_compiled_plan  # noqa: PLC0415 — the runtime loads only when a plan runs: compiling and checking stay light
        return execute_compiled_plan(CompiledPlan(plan.data, self.plan_session()), **options)

    def _execute(self, plan: CompiledPlan) -> TableResult:
        options: dict[str, Any] = {}
        if str(self.config.get("planengine.until-idle", "false")).lower() == "true":
            options["until_idle"] = True
            options["drain"] = str(self.config.get("planengine.drain", "false")).lower() == "true"
        else:  # a job that keeps running gets a status port (loopback, any free one) its message names
            options["status_port"] = 0
        # The job root: planengine.runtime.storage.job_root.resolve_job_root, the same rule as execute_plan's.
        if self.session_jobs_dir is not None:
            options["session_jobs_dir"] = self.session_jobs_dir
        job = self.execute_plan(plan, **options)
        return TableResult("JOB", job_message(job), plan=plan, job=job)


def job_message(job: Any) -> str:
    """What a job statement says, as Flink's client names the job it submitted: the run (the job's id here), its
    plan, its job root and status port, and first, when the job root held the job already, that it goes on from
    there (a job root someone named is where a job's state lives on purpose; the silence was the surprise).

    ``job`` is the running ``Job`` or, for an until-idle run, its ``JobResult``; both carry ``started`` (``JobStart``
    in ``planengine.runtime.engine.executor``)."""
    start = job.started
    lines = []
    if start.resumed:
        lines.append(f"resuming the job in {start.job_root} from its own checkpoints")
    elif start.from_snapshot:
        lines.append(f"resuming the job in {start.job_root} from snapshot {start.from_snapshot}")
    facts = f"plan {start.plan_id[:12]}, job root {start.job_root}, {start.status}"
    if not hasattr(job, "wait"):  # a JobResult: the until-idle run is over already
        lines.append(f"Finished job {start.run_id}: {facts}; stopped with snapshot {job.snapshot_id}")
    else:
        lines.append(f"Submitted job {start.run_id}: {facts}")
    return "\n".join(lines)


def _mutable_options(connector: str) -> Collection[str]:
    factory = load_factory(connector)
    return factory.mutable_options() if factory is not None else ()


class StatementSetBuilder:
    """``env.create_statement_set().add_insert_sql(...).add_insert_sql(...).compile_plan()``."""

    def __init__(self, env: TableEnvironment):
        self.env = env
        self.inserts: list[S.Insert] = []

    def add_insert_sql(self, sql: str) -> StatementSetBuilder:
        statements = parse_script(sql)
        for stmt in statements:
            self.inserts.extend(_inserts(stmt))
        return self

    def compile_plan(self) -> CompiledPlan:
        return self.env.compile_plan(self.inserts)

    def explain(self, *details: str) -> str:
        return self.env.explain_inserts(self.inserts, details)

    def execute(self) -> TableResult:
        return self.env._execute(self.compile_plan())


def _inserts(stmt: S.Statement) -> list[S.Insert]:
    if isinstance(stmt, S.Insert):
        return [stmt]
    if isinstance(stmt, S.StatementSet):
        return list(stmt.inserts)
    raise ValidationError(f"expected INSERT or a statement set, got {type(stmt).__name__}",
                          location=stmt.location, hint="plans are compiled from INSERT statements")
