"""A bare ``SELECT`` (``execute_sql``, so the SQL client's too): run it briefly on Spark in-process and show its
first rows.

A streaming query has no end, so a preview is bounded twice: by rows (``planengine.preview.max-rows``,
default 20) and by time (``planengine.preview.timeout``, default 30 s). The query is planned exactly like an
``INSERT`` into a temporary collect table (a ``changelog-json`` file sink in a temporary job root, so every
row kind can be shown and nothing new is needed at run time), run until its available input is processed,
then event time is advanced to the end (as Flink does when a bounded source finishes) so windows over the
input fire. The temporary table and job root are removed afterwards.

What is shown follows Flink's ``sql-client.execution.result-mode``. In ``TABLE`` mode (the default, as in Flink) an
updating result (a ``GROUP BY``, say) is shown as the table its changes describe, one row per key
(``planengine.api.materialize``); then the row limit counts rows of that table, not changes, and is only known to
be reached once a row past it appears. In ``CHANGELOG`` and ``TABLEAU`` mode, and for an insert-only result in any
mode, the rows are shown in commit order with their row kind in an ``op`` column, as Flink's SQL client shows a
streaming result in tableau mode. Either way the same bounds hold: the input processed, the row limit, the timeout.

``explain_query`` reuses the same collect table to explain a SELECT with the changelog modes its result has,
then drops the table from the printed plan (Flink's EXPLAIN of a query shows no sink either).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planengine.api.materialize import MaterializedTable
from planengine.api.results import TableResult
from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.config import REGISTRY
from planengine.config import options as O
from planengine.errors import PlanEngineError, PlanError
from planengine.ir.schema import Column, ResolvedSchema
from planengine.planner.upsert_keys import upsert_keys
from planengine.sql import statements as S

OP = "op"


@contextmanager
def collect_table(env: Any, stmt: S.Query, directory: Path) -> Iterator[tuple[S.Insert, list[str]]]:
    """A temporary ``changelog-json`` table shaped like the query's result, and the INSERT into it."""
    fields = env._planner().convert_query(stmt.location, stmt.query).row_type.fields
    names = _unique([f.name for f in fields])
    columns = tuple(Column(n, f.type.without_time_attribute()) for n, f in zip(names, fields))
    cm = env.catalog_manager
    identifier = ObjectIdentifier(cm.current_catalog, cm.current_database, f"__preview_{uuid.uuid4().hex[:12]}")
    options = {"connector": "filesystem", "path": str(directory), "format": "changelog-json"}
    cm.create_table(identifier, CatalogTable(ResolvedSchema(columns), tuple(sorted(options.items()))), temporary=True)
    insert = S.Insert(index=stmt.index, location=stmt.location, text=stmt.text, table=identifier.as_path(),
                      query=stmt.query)
    try:
        yield insert, names
    finally:
        cm.drop_table(identifier, temporary=True, if_exists=True)


def _unique(names: list[str]) -> list[str]:
    """Result columns may repeat a name (``SELECT a, a``); a table may not."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        n = seen.get(name, 0)
        seen[name] = n + 1
        out.append(name if n == 0 else f"{name}_{n}")
    return out


def explain_query(env: Any, stmt: S.Query, details: tuple[str, ...]) -> str:
    with tempfile.TemporaryDirectory(prefix="planengine-explain-") as tmp, \
            collect_table(env, stmt, Path(tmp)) as (insert, _names):
        text = env.explain_inserts([insert], details)
    return _without_sink(text, insert.table[-1])


def _without_sink(text: str, sink_name: str) -> str:
    """Drop the collect sink's line from each plan tree and move its input up one level."""
    out: list[str] = []
    dedent = False
    for line in text.splitlines():
        if sink_name in line and "Sink(" in line:
            dedent = True
            continue
        if line.startswith("== Compiled plan "):  # the id of the plan into the collect table means nothing
            continue
        if not line.startswith("  "):
            dedent = False
        out.append(line[2:] if dedent else line)
    return "\n".join(out)


def preview_query(env: Any, stmt: S.Query) -> TableResult:
    max_rows = int(REGISTRY.value(env.config, O.PREVIEW_MAX_ROWS.key))
    timeout_s = int(REGISTRY.value(env.config, O.PREVIEW_TIMEOUT.key)) / 1000
    width = int(REGISTRY.value(env.config, O.DISPLAY_MAX_COLUMN_WIDTH.key))
    mode = str(REGISTRY.value(env.config, O.RESULT_MODE.key))
    work = Path(tempfile.mkdtemp(prefix="planengine-preview-"))
    try:
        with collect_table(env, stmt, work / "rows") as (insert, names):
            plan = env.compile_plan([insert])
            table = _table_for(plan) if mode == "TABLE" else None
            job = env.execute_plan(plan, job_root=str(work / "job"), paced=False)
            changes = CommittedChanges(work / "rows", names)
            if table is None:
                stopped_by, seconds = _run_bounded(job, lambda: changes.count() >= max_rows, timeout_s)
                return _changelog_result(changes.read(), names, max_rows, width, stopped_by, seconds)

            def table_is_full() -> bool:  # one row past the limit proves more rows follow
                table.apply_all(changes.read())
                return len(table) > max_rows

            stopped_by, seconds = _run_bounded(job, table_is_full, timeout_s)
            table.apply_all(changes.read())  # what committed between the last look and the stop
            return _table_result(table, names, max_rows, width, stopped_by, seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _table_for(plan: Any) -> MaterializedTable | None:
    """The table an updating result materialises into (upsert by the unique key the plan proves, else retract by
    full row); None for an insert-only result, whose changelog is its table already and is shown as it comes."""
    [sink] = plan.restore()
    if sink.changelog_mode.contains_only_inserts():
        return None
    return MaterializedTable(upsert_keys(sink.inputs[0]))


def _changelog_result(rows: list[tuple[Any, ...]], names: list[str], max_rows: int, width: int, stopped_by: str,
                      seconds: float) -> TableResult:
    shown = rows[:max_rows]
    footer = f"Received a total of {len(shown)} row{'' if len(shown) == 1 else 's'}"
    if stopped_by == "rows" or len(rows) > max_rows:
        footer += (f" (stopped at the row limit, 'planengine.preview.max-rows' = {max_rows}; more rows may "
                   "follow)")
    elif stopped_by == "time":
        footer += f" (stopped after {seconds:.0f} s, 'planengine.preview.timeout'; more rows may follow)"
    return TableResult("ROWS", message=footer, rows=shown, columns=(OP, *names), max_width=width)


def _table_result(table: MaterializedTable, names: list[str], max_rows: int, width: int, stopped_by: str,
                  seconds: float) -> TableResult:
    rows = table.rows()
    shown = rows[:max_rows]
    footer = (f"{len(shown)} row{'' if len(shown) == 1 else 's'} in the table, from {table.changes} "
              f"change{'' if table.changes == 1 else 's'}")
    if len(rows) > max_rows:
        footer += (f" (stopped at the row limit, 'planengine.preview.max-rows' = {max_rows}; more rows follow and "
                   "values may still change)")
    elif stopped_by == "time":
        footer += f" (stopped after {seconds:.0f} s, 'planengine.preview.timeout'; values may still change)"
    return TableResult("ROWS", message=footer, rows=shown, columns=tuple(names), max_width=width)


def _run_bounded(job: Any, enough: Callable[[], bool], timeout_s: float) -> tuple[str, float]:
    """Feed the job until its input is processed (then drain), ``enough()`` says so or the timeout; cancel it.
    Returns what ended it (``input``, ``rows`` or ``time``) and after how many seconds."""
    done = threading.Event()
    failure: list[BaseException] = []
    stopping = threading.Event()

    def feed() -> None:
        try:
            job.process_available()
            if not stopping.is_set():
                job.drain()
        except BaseException as error:  # reported below unless we stopped the job ourselves
            if not stopping.is_set():
                failure.append(error)
        finally:
            done.set()

    threading.Thread(target=feed, name="planengine-preview", daemon=True).start()
    started = time.monotonic()
    deadline = started + timeout_s
    ended = "input"
    try:
        while not done.wait(0.25):
            if time.monotonic() >= deadline:
                ended = "time"
                break
            if enough():
                ended = "rows"
                break
    finally:  # also on Ctrl-C: never leave the preview's queries running
        seconds = time.monotonic() - started
        stopping.set()
        try:
            job.cancel()
        finally:
            done.wait(30)
    if failure:
        error = failure[0]
        if isinstance(error, PlanEngineError):
            raise error
        raise PlanError(f"the query failed while previewing it: {str(error).splitlines()[0][:500]}",
                        hint="run it as an INSERT (planengine run) to see the full error, or fix the query")
    return ended, seconds


def _committed_files(rows_dir: Path) -> list[Path]:
    """Files of committed batches, in commit order (Spark's file sink manifest ``_spark_metadata/<batch>``)."""
    manifest = rows_dir / "_spark_metadata"
    if not manifest.is_dir():
        return []
    logs = sorted((p for p in manifest.iterdir() if p.name.split(".")[0].isdigit()),
                  key=lambda p: int(p.name.split(".")[0]))
    seen: dict[str, None] = {}
    for log_file in logs:
        try:
            lines = log_file.read_text(encoding="utf-8").splitlines()[1:]  # first line: the format version
        except OSError:
            continue
        for line in lines:
            path = json.loads(line).get("path", "")
            seen.setdefault(path.removeprefix("file://"), None)
    return [Path(p) for p in seen]


class CommittedChanges:
    """The collect table's committed rows, ``(row kind, *values)``, each handed out once, in commit order: a preview
    looks several times while its job runs, and a materialised one applies each change exactly once."""

    def __init__(self, rows_dir: Path, names: list[str]):
        self.rows_dir = rows_dir
        self.names = names
        self._read: set[Path] = set()

    def count(self) -> int:
        """Rows committed so far, read or not."""
        return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in _committed_files(self.rows_dir)
                   if f.is_file())

    def read(self) -> list[tuple[Any, ...]]:
        """Rows of the files committed since the last call."""
        rows = []
        for file in _committed_files(self.rows_dir):
            if file in self._read or not file.is_file():
                continue
            self._read.add(file)
            for line in file.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    rows.append((record.get(OP), *(record.get(n) for n in self.names)))
        return rows
