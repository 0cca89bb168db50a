"""A bare ``SELECT`` (``execute_sql``, so the SQL client's too): run it briefly on Spark in-process and show its
first rows.

A streaming query has no end, so a preview is bounded twice: by rows (``planengine.preview.max-rows``,
default 20) and by time (``planengine.preview.timeout``, default 30 s). The query is planned exactly like an
``INSERT`` into a temporary collect table (a ``changelog-json`` file sink in a temporary job root, so every
row kind can be shown and nothing new is needed at run time), run until its available input is processed,
then event time is advanced to the end (as Flink does when a bounded source finishes) so windows over the
input fire. Rows are shown in commit order with their row kind in an ``op`` column, as Flink's SQL client
shows a streaming result in tableau mode. The temporary table and job root are removed afterwards.

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planengine.api.results import TableResult
from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.config import REGISTRY
from planengine.config import options as O
from planengine.errors import PlanEngineError, PlanError
from planengine.ir.schema import Column, ResolvedSchema
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
    work = Path(tempfile.mkdtemp(prefix="planengine-preview-"))
    try:
        with collect_table(env, stmt, work / "rows") as (insert, names):
            plan = env.compile_plan([insert])
            job = env.execute_plan(plan, job_root=str(work / "job"), paced=False)
            stopped_by, seconds = _run_bounded(job, work / "rows", max_rows, timeout_s)
            rows = committed_rows(work / "rows", names)
        shown = rows[:max_rows]
        footer = f"Received a total of {len(shown)} row{'' if len(shown) == 1 else 's'}"
        if stopped_by == "rows" or len(rows) > max_rows:
            footer += (f" (stopped at the row limit, 'planengine.preview.max-rows' = {max_rows}; more rows may "
                       "follow)")
        elif stopped_by == "time":
            footer += (f" (stopped after {seconds:.0f} s, 'planengine.preview.timeout'; more rows may follow)")
        return TableResult("ROWS", message=footer, rows=shown, columns=(OP, *names), max_width=width)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_bounded(job: Any, rows_dir: Path, max_rows: int, timeout_s: float) -> tuple[str, float]:
    """Feed the job until its input is processed (then drain), ``max_rows`` rows or the timeout; cancel it.
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
            if count_committed_rows(rows_dir) >= max_rows:
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


def count_committed_rows(rows_dir: Path) -> int:
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in _committed_files(rows_dir) if f.is_file())


def committed_rows(rows_dir: Path, names: list[str]) -> list[tuple[Any, ...]]:
    rows = []
    for file in _committed_files(rows_dir):
        if not file.is_file():
            continue
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                rows.append((record.get(OP), *(record.get(n) for n in names)))
    return rows
