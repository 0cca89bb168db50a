"""``planengine check --plan P --snapshot S`` against Spark's real state layout (runtime/state_check/).

One real job (a statement set: a group aggregate on ``transformWithState`` and a native stream-stream
interval join, so both schema file formats occur) runs until idle and stops with a snapshot. The check must
call that snapshot compatible; copies of it with a tampered stored schema must be judged exactly as Spark's
restore judges them (the restore is run too); and a snapshot written by engine A (Spark 4.2, a subprocess)
must get, through the CLI, the verdict that an actual restore on this engine confirms.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.commands.compile import split_program
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.restore import COMPATIBLE, INCOMPATIBLE, CheckReport
from planengine.runtime.state_check import check_snapshot_state
from planengine.runtime.storage.checkpoint_layout import read_layout, read_schema_file
from planengine.runtime.storage.sink_claims import CLAIM_FILE

REPO = Path(__file__).resolve().parents[2]
ENGINE_A = REPO / ".venv-spark42" / "bin" / "planengine"
ENGINE_B = REPO / ".venv" / "bin" / "planengine"
TRANSIENT = "Python worker failed to connect back"
AGG = "6_stream-exec-sink-2_sink"  # group aggregate (the JVM transformWithState processor)
JOIN = "15_stream-exec-sink-2_sink"  # interval join (Spark's symmetricHashJoin, four state stores)


def script(data: Path) -> str:
    table = "WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = '{}')"
    wm = "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"
    return f"""
CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3), {wm}) {table.format(data / 'ev', 'json')};
CREATE TABLE lft (id BIGINT, a STRING, ts TIMESTAMP(3), {wm}) {table.format(data / 'lft', 'json')};
CREATE TABLE rgt (id BIGINT, b STRING, ts TIMESTAMP(3), {wm}) {table.format(data / 'rgt', 'json')};
CREATE TABLE counts (k STRING, c BIGINT, s BIGINT) {table.format(data / 'out-counts', 'changelog-json')};
CREATE TABLE joined (id BIGINT, a STRING, b STRING) {table.format(data / 'out-joined', 'changelog-json')};
EXECUTE STATEMENT SET BEGIN
INSERT INTO counts SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k;
INSERT INTO joined SELECT l.id, l.a, r.b FROM lft l JOIN rgt r ON l.id = r.id
  AND r.ts BETWEEN l.ts - INTERVAL '5' SECOND AND l.ts + INTERVAL '5' SECOND;
END;
"""


def write_input(data: Path, batch: int) -> None:
    """One file per table; ``batch`` (< 60) is the event-time minute, so every batch moves time forward."""
    def ts(second: int) -> str:
        return f"2024-01-01 00:{batch:02d}:{second:02d}.000"

    rows = {
        "ev": [{"k": f"k{i % 2}", "v": i, "ts": ts(i)} for i in range(3)],
        "lft": [{"id": batch * 10 + i, "a": f"a{i}", "ts": ts(i)} for i in range(2)],
        "rgt": [{"id": batch * 10 + i, "b": f"b{i}", "ts": ts(i + 1)} for i in range(2)],
    }
    for table, records in rows.items():
        (data / table).mkdir(parents=True, exist_ok=True)
        (data / table / f"{batch}.json").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory) -> dict[str, Any]:
    """The job run by this engine until idle: its plan, job root and the snapshot its stop took."""
    base = tmp_path_factory.mktemp("state-check")
    data = base / "data"
    write_input(data, 0)
    env = TableEnvironment({})
    plan = env.compile_plan(split_program(env, script(data), "job.sql"))
    result = _run(lambda: env.execute_plan(plan, job_root=base / "root", until_idle=True))
    assert result.snapshot_id is not None
    return {"plan": plan, "root": base / "root", "data": data,
            "snapshot": base / "root" / "snapshots" / result.snapshot_id}


def _run(start: Callable[[], Any], attempts: int = 3) -> Any:
    """A run; only Spark's Python-worker connect-back timeout on a loaded machine is retried."""
    for attempt in range(attempts):
        try:
            return start()
        except Exception as error:
            if TRANSIENT not in str(error) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def check(plan: Any, snapshot: Path, spark: Any) -> tuple[CheckReport, float]:
    report = CheckReport(plan_id=plan.plan_id)
    began = time.monotonic()
    check_snapshot_state(plan.data, str(snapshot), report, spark=spark)
    return report, time.monotonic() - began


def failures(report: CheckReport) -> list[str]:
    return [r["message"] for r in report.reasons if r["status"] == INCOMPATIBLE]


def notes(report: CheckReport) -> list[str]:
    return [r["message"] for r in report.reasons if r["status"] == COMPATIBLE]


# --- reading the layout -------------------------------------------------------------------------------------
def test_layout_agrees_with_sparks_state_metadata_and_the_manifest(spark, job):
    manifest = json.loads((job["snapshot"] / "manifest.json").read_text())
    for uid in (AGG, JOIN):
        checkpoint = job["snapshot"] / "checkpoints" / uid
        layout = read_layout(checkpoint)
        ours = {(int(op), o["name"], store, s["partitions"])
                for op, o in layout["operators"].items() for store, s in o["stores"].items()}
        rows = spark.read.format("state-metadata").load(str(checkpoint)).collect()
        theirs = {(r["operatorId"], r["operatorName"], r["stateStoreName"], r["numPartitions"]) for r in rows}
        assert ours == theirs, uid
        assert manifest["queries"][uid]["stateLayout"] == layout
    join = read_layout(job["snapshot"] / "checkpoints" / JOIN)["operators"]["0"]
    assert sorted(join["stores"]) == ["left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
                                      "right-keyWithIndexToValue"]
    agg = read_layout(job["snapshot"] / "checkpoints" / AGG)["operators"]["0"]
    variables = {v["stateName"] for v in agg["properties"]["stateVariables"]}
    assert variables <= set(agg["stores"]["default"]["schemas"]) and "accumulators" in variables


# --- judged like a restore -------------------------------------------------------------------------------------
def test_a_snapshot_of_this_engine_is_compatible(spark, job):
    report, seconds = check(job["plan"], job["snapshot"], spark)
    print(f"check of a 2-query plan (probe included): {seconds:.1f} s")
    assert report.status == COMPATIBLE, report.summary()
    assert report.reasons == []


def test_a_native_aggregate_snapshot_is_compatible(spark, tmp_path):
    """The probe translates with the strategy the plan records. It used to see no plan topology (it runs no
    job), so every version-2 group aggregate looked like transformWithState to it: a snapshot of a native
    aggregate (Spark's StateStoreSave state) was refused as incompatible with the engine that wrote it."""
    data = tmp_path / "data"
    write_input(data, 0)
    env = TableEnvironment({})
    table = f"WITH ('connector' = 'filesystem', 'path' = '{data / 'ev'}', 'format' = 'json')"
    plan = env.compile_plan(split_program(env, f"""
CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3)) {table};
CREATE TABLE totals (k STRING, c BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k;
""", "native.sql"))
    assert [n.get("strategy") for n in plan.data["nodes"] if "group-aggregate" in n["type"]] == ["NATIVE"]
    result = _run(lambda: env.execute_plan(plan, job_root=tmp_path / "root", until_idle=True))
    report, _ = check(plan, tmp_path / "root" / "snapshots" / result.snapshot_id, spark)
    assert report.status == COMPATIBLE, report.summary()


def copy_job(job: dict[str, Any], target: Path) -> tuple[Path, Path]:
    """A writable copy of the job root (plan and snapshot only), to tamper with the snapshot's files."""
    root = target / "root"
    root.mkdir(parents=True)
    shutil.copy(job["root"] / "plan.json", root / "plan.json")
    snapshot = root / "snapshots" / job["snapshot"].name
    shutil.copytree(job["snapshot"], snapshot)
    for path in [snapshot, *snapshot.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    # The copy writes the job's sinks: the job is done, so its sink claims go, as the refusal's hint advises
    # (otherwise the copy's start is refused: two job roots on one sink path lose rows).
    for claim in job["data"].rglob(CLAIM_FILE):
        claim.unlink()
    return root, snapshot


def rewrite_v2_schema(path: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
    """Rewrite a native operator's schema file (``v2``: key then value schema JSON in UTF chunks)."""
    schemas = read_schema_file(path)["default"]
    key, value = schemas["key"], schemas["value"]
    change(key, value)

    def utf(text: str) -> bytes:
        raw = text.encode("utf-8")
        return struct.pack(">H", len(raw)) + raw

    body = utf("v2")
    for schema in (key, value):
        body += struct.pack(">i", 1) + utf(json.dumps(schema, separators=(",", ":")))
    path.write_bytes(body)
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)  # Hadoop would reject the stale checksum


def join_schema_file(snapshot: Path, store: str) -> Path:
    return snapshot / "checkpoints" / JOIN / "state" / "0" / "0" / store / "_metadata" / "schema"


def restore(job: dict[str, Any], root: Path, snapshot: Path, batch: int) -> str | None:
    """Run this engine from ``snapshot`` over one more input file (so a batch must load the restored state);
    the error message, or None if it worked."""
    write_input(job["data"], batch)
    try:
        _run(lambda: TableEnvironment().execute_plan(job["plan"], job_root=root, from_snapshot=str(snapshot),
                                                     until_idle=True))
    except Exception as error:
        return str(error)
    return None


def test_a_stored_key_made_not_null_is_refused_and_a_restore_fails_too(spark, job, tmp_path):
    root, snapshot = copy_job(job, tmp_path)

    def not_null_key(key: dict[str, Any], value: dict[str, Any]) -> None:
        key["fields"][0]["nullable"] = False

    rewrite_v2_schema(join_schema_file(snapshot, "left-keyToNumValues"), not_null_key)
    report, _ = check(job["plan"], snapshot, spark)
    assert report.status == INCOMPATIBLE
    (message,) = failures(report)
    for part in (f"query {JOIN}", "Spark operator 0 (symmetricHashJoin)", "state store left-keyToNumValues",
                 "key field field0", "NOT NULL in the snapshot but nullable on this engine"):
        assert part in message
    (refusal,) = [r for r in report.reasons if r["status"] == INCOMPATIBLE]
    assert "upgradeMode: stateless" in refusal["hint"]
    error = restore(job, root, snapshot, batch=1)
    assert error is not None and "schema" in error.lower(), error


def test_a_renamed_stored_field_is_only_a_note_and_a_restore_works(spark, job, tmp_path):
    root, snapshot = copy_job(job, tmp_path)

    def rename_value(key: dict[str, Any], value: dict[str, Any]) -> None:
        value["fields"][0]["name"] = "renamed"

    rewrite_v2_schema(join_schema_file(snapshot, "right-keyToNumValues"), rename_value)
    report, _ = check(job["plan"], snapshot, spark)
    assert report.status == COMPATIBLE, report.summary()
    assert any("right-keyToNumValues" in n and "named renamed in the snapshot, value on this engine" in n
               for n in notes(report)), report.summary()
    assert any("differ from the layout recorded in the snapshot's manifest" in n for n in notes(report))
    assert restore(job, root, snapshot, batch=2) is None


# --- another Spark minor, through the CLI ----------------------------------------------------------------------
def engine(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANENGINE_PROGRESS": "0"}
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PLANENGINE_RUN_ID"):
        env.pop(key, None)  # each engine runs its own interpreter
    for _attempt in range(3):
        proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=900, env=env)
        if proc.returncode == 0 or TRANSIENT not in proc.stderr:
            return proc
    return proc


@pytest.mark.timeout(2400)  # two engine JVMs as subprocesses plus a restore; ~15 min on a loaded 2-core machine
@pytest.mark.usefixtures("engine_process")
def test_a_spark_42_snapshot_gets_the_verdict_a_restore_confirms(spark, tmp_path):
    if not ENGINE_A.exists():
        pytest.skip(f"{ENGINE_A} is missing: run tests/setup/prepare.d/30-second-engine.sh")
    data, root = tmp_path / "data", tmp_path / "root"
    write_input(data, 0)
    (tmp_path / "job.sql").write_text(script(data))
    phase1 = engine(ENGINE_A, "run", "--script", str(tmp_path / "job.sql"), "--job-root", str(root), "--until-idle")
    assert phase1.returncode == 0, phase1.stderr[-3000:]
    snapshot = sorted((root / "snapshots").iterdir())[-1]
    assert json.loads((snapshot / "manifest.json").read_text())["sparkVersion"].startswith("4.2")

    began = time.monotonic()
    checked = engine(ENGINE_B, "check", "--plan", str(root / "plan.json"), "--snapshot", str(snapshot), "--json")
    print(f"CLI check of a Spark 4.2 snapshot on Spark 4.3 (JVM start included): {time.monotonic() - began:.1f} s")
    verdict = json.loads(checked.stdout)
    assert checked.returncode == verdict["exitCode"] and checked.returncode in (0, 4), checked.stderr[-3000:]
    print(json.dumps(verdict, indent=2))

    plan = CompiledPlan.from_json((root / "plan.json").read_text())
    error = restore({"plan": plan, "data": data}, root, snapshot, batch=1)
    assert (checked.returncode == 0) == (error is None), f"check said {verdict['status']}, restore: {error}"
    if error is not None:  # the refusal names the query, operator, store and field, as the restore's error does
        assert any(JOIN in m and "symmetricHashJoin" in m and "key field" in m for m in
                   [r["message"] for r in verdict["reasons"]]), verdict


# --- the probe's empty sources -----------------------------------------------------------------------------------
def test_empty_stream_keeps_types_nullability_and_metadata(spark, tmp_path):
    """File sources make every column nullable; the probe's stand-in must not (datagen and Kafka columns are
    NOT NULL, and key nullability decides whether a restore works)."""
    from pyspark.sql import functions as F

    from planengine.runtime.state_check.probe import _EmptyStreams

    (tmp_path / "empty.json").write_bytes(b"")
    rate = spark.readStream.format("rate").load()
    h = F.xxhash64("value")  # never null, whatever its input (datagen's random columns are built this way)
    real = rate.select(
        "timestamp", h.alias("id"), (h * 2).cast("decimal(12,2)").alias("amount"),
        F.struct(h.alias("inner"), F.lit(None).cast("string").alias("maybe")).alias("nested"),
        F.array(h).alias("ids"), h.cast("string").alias("text"), F.lit(None).cast("date").alias("nothing"),
        h.alias("tagged", metadata={"spark.watermarkDelayMs": 5}),
    )
    assert not real.schema["id"].nullable and not real.schema["nested"].dataType["inner"].nullable
    notes: list[str] = []
    empty = _EmptyStreams(spark, tmp_path, notes).like(real, "rate")
    assert empty.isStreaming
    assert empty.schema == real.schema, (empty.schema.simpleString(), real.schema.simpleString())
    assert [f.nullable for f in empty.schema.fields] == [f.nullable for f in real.schema.fields]
    assert empty.schema["tagged"].metadata == {"spark.watermarkDelayMs": 5}
    assert notes == []


# --- the comparison rules, on layouts as data ------------------------------------------------------------------
def field(name: str, kind: Any = "long", nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": nullable, "metadata": {}}


def layout(key: list[dict[str, Any]], value: list[dict[str, Any]], *, name: str = "stateStoreSave",
           partitions: int = 2, store: str = "default", op: str = "0") -> dict[str, Any]:
    schemas = {"default": {"key": {"type": "struct", "fields": key}, "value": {"type": "struct", "fields": value}}}
    return {"version": 1, "operators": {op: {"name": name, "metadataVersion": 1, "properties": None,
                                             "stores": {store: {"partitions": partitions, "schemas": schemas}}}}}


BASE = layout([field("k", "string")], [field("cnt")])


@pytest.mark.parametrize("stored, ours, verdict, words", [
    (BASE, BASE, [], []),
    # Spark's rule: stored NOT NULL read as nullable fails; the other direction restores
    (layout([field("k", "string", False)], [field("cnt")]), BASE, [INCOMPATIBLE],
     ["operator 0 (stateStoreSave)", "key field k is NOT NULL in the snapshot but nullable"]),
    (BASE, layout([field("k", "string", False)], [field("cnt")]), [], []),
    (layout([field("k", "string")], [field("cnt", "integer")]), BASE, [INCOMPATIBLE],
     ["value field cnt has type integer in the snapshot, long on this engine"]),
    (layout([field("k", "string")], [field("cnt"), field("sum")]), BASE, [INCOMPATIBLE],
     ["value has 2 fields in the snapshot (cnt, sum), 1 on this engine (cnt)"]),
    (layout([field("key", "string")], [field("cnt")]), BASE, [COMPATIBLE],
     ["key field 0 is named key in the snapshot, k on this engine"]),
    (layout([field("k", "string")], [field("cnt")], partitions=4), BASE, [COMPATIBLE],
     ["4 partitions in the snapshot, 2 on this engine"]),
    (layout([field("k", "string")], [field("cnt")], name="dedupe"), BASE, [INCOMPATIBLE],
     ["the snapshot holds state of dedupe, this engine runs stateStoreSave"]),
    (layout([field("k", "string")], [field("cnt")], store="left-keyToNumValues"), BASE, [INCOMPATIBLE] * 2,
     ["state store left-keyToNumValues: in the snapshot but not created by this engine"]),
    (layout([field("k", "string")], [field("cnt")], op="1"), BASE, [INCOMPATIBLE] * 2,
     ["Spark operator 1 (stateStoreSave) holds state in the snapshot", "Spark operator 0 (stateStoreSave) is "
      "stateful on this engine but has no state in the snapshot"]),
    (layout([field("k", {"type": "array", "elementType": "long", "containsNull": False})], [field("cnt")]),
     layout([field("k", {"type": "array", "elementType": "long", "containsNull": True})], [field("cnt")]),
     [INCOMPATIBLE], ["key field k[] is NOT NULL in the snapshot"]),
])
def test_layouts_are_compared_by_sparks_restore_rules(stored, ours, verdict, words):
    from planengine.runtime.state_check.compare import compare_layouts

    findings = compare_layouts("q", stored, ours)
    assert [f.status for f in findings] == verdict
    text = " | ".join(f.message for f in findings)
    for word in words:
        assert word in text
    assert all(f.message.startswith("query q, Spark operator ") for f in findings)
    assert all("upgradeMode: stateless" in (f.hint or "") for f in findings if f.status == INCOMPATIBLE)


def test_transform_with_state_variables_and_modes_must_stay():
    from planengine.runtime.state_check.compare import compare_layouts

    def tws(variables: list[tuple[str, str]], time_mode: str = "NoTime") -> dict[str, Any]:
        out = layout([field("k", "string")], [field("acc", "string")], name="transformWithStateInPandasExec")
        out["operators"]["0"]["properties"] = {"timeMode": time_mode, "outputMode": "Append", "stateVariables": [
            {"stateName": n, "stateVariableType": t, "ttlEnabled": False} for n, t in variables]}
        return out

    same = tws([("accumulators", "ValueState")])
    assert compare_layouts("q", same, same) == []
    changed = compare_layouts("q", same, tws([("accumulators", "MapState")], "EventTime"))
    messages = [f.message for f in changed]
    assert any("timeMode is NoTime in the snapshot, EventTime on this engine" in m for m in messages)
    assert any("state accumulators: ValueState in the snapshot, MapState on this engine" in m for m in messages)
