"""The conformance programs in Spark's Real-time Mode: the same programs as ``harness.py``, on the real Kafka broker.

Why a second harness: the mode reads only Kafka and writes only Kafka, so a program's sources become topics
(one partition; ``json``, or ``changelog-json`` with the program's ``changelog-mode`` when its rows carry kinds, as
the micro-batch harness writes its files) and its sink a topic (``upsert-kafka`` keyed by the sink's PRIMARY KEY,
else ``kafka`` in ``changelog-json``, as the micro-batch harness writes its sinks). Which programs can run in
the mode is the planner's decision, not this file's: each program is compiled with ``pipeline.real-time = AUTO``
and runs here only when the plan records ``realTimeEnabled`` (``eligibility``).

A run has the harness's two phases: the ``before`` rows, the job running in the mode until the sink's
materialized table is the expected one, a stop with a snapshot; then the ``after`` rows and a restore of the
plan in force (never re-planned), again in the mode, until the table is ``before ++ after``. There is no
"until idle" in the mode (a batch runs for its checkpoint interval), so each phase waits for the expected table
and fails with the difference when it does not come.
"""

from __future__ import annotations

import decimal
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planengine.testing.changelog import ChangelogRow, materialize
from planengine.testing.conformance_programs import (
    DROPPED_OPTIONS,
    ConformanceProgram,
    _create_table,
    expected_rows,
    json_lines,
)
from tests.conformance.harness import _columns, _sink_key

REAL_TIME = {"pipeline.real-time": "REQUIRED", "pipeline.real-time.checkpoint-interval": "5 s",
             # one topic partition and one state partition per query: 2 task slots, the tests' local[2]
             "pipeline.max-parallelism": "1"}
WAIT_S = 120.0


@dataclass(frozen=True)
class Eligibility:
    program: ConformanceProgram
    eligible: bool
    reason: str  # why not (a compile error or the plan's realTimeBlockedBy); "" when eligible


def _primary_key(table: Any) -> bool:
    return any(part.strip().upper().startswith("PRIMARY KEY") for part in table.schema)


def kafka_ddl(program: ConformanceProgram, topics: dict[str, str], bootstrap: str) -> str:
    """The program's tables on Kafka: sources as ``json`` topics, the sink as ``upsert-kafka`` or ``kafka``."""
    parts = []
    base = {"properties.bootstrap.servers": bootstrap}
    for s in program.sources:
        opts = {"connector": "kafka", "topic": topics[s.name], **base, "format": program.source_format(s),
                "scan.startup.mode": "earliest-offset"}
        if s.changelog_mode is not None:
            opts["changelog-mode"] = s.changelog_mode
        opts.update({k: str(v) for k, v in s.options.items() if k not in DROPPED_OPTIONS and k != "changelog-mode"})
        parts.append(_create_table(s, opts))
    for s in program.sinks:
        if _primary_key(s):
            opts = {"connector": "upsert-kafka", "topic": topics[s.name], **base, "key.format": "json",
                    "value.format": "json"}
        else:  # as the micro-batch harness writes its sinks: a changelog, one record per row
            opts = {"connector": "kafka", "topic": topics[s.name], **base, "format": "changelog-json"}
        parts.append(_create_table(s, opts))
    return ";\n".join(parts) + ";\n"


def _candidate(program: ConformanceProgram) -> str:
    """Why the program cannot be put on Kafka at all ("" when it can)."""
    if program.functions:
        return "calls user functions (Spark runs them outside the real-time pipeline)"
    if len(program.sinks) != 1:
        return f"{len(program.sinks)} sinks (a statement set)"
    for s in program.sources:
        if s.is_lookup:
            return f"source {s.name} is a lookup table"
    return ""


def environment(program: ConformanceProgram, topics: dict[str, str], bootstrap: str) -> Any:
    from planengine.api import TableEnvironment

    env = TableEnvironment({**program.session_config(), **REAL_TIME})
    env.execute_sql(kafka_ddl(program, topics, bootstrap))
    return env


def eligibility(program: ConformanceProgram) -> Eligibility:
    """Whether the planner puts the program into the mode (compiled against a placeholder broker: no I/O)."""
    why = _candidate(program)
    if why:
        return Eligibility(program, False, why)
    topics = {t.name: t.name for t in [*program.sources, *program.sinks]}
    try:
        env = environment(program, topics, "127.0.0.1:9")
        env.execute_sql("SET 'pipeline.real-time' = 'AUTO'")
        config = env.compile_plan_sql(program.statement.strip()).data["config"]
    except Exception as error:  # a program the planner refuses on these connectors
        return Eligibility(program, False, f"does not compile on Kafka tables: {str(error).splitlines()[0][:200]}")
    if config.get("realTimeEnabled") != "true":
        return Eligibility(program, False, str(config.get("realTimeBlockedBy")))
    return Eligibility(program, True, "")


def _sink_rows(broker: Any, topic: str, names: list[str], types: list[Any], upsert: bool) -> list[ChangelogRow]:
    rows = []
    for r in broker.records(topic):
        if r.value is None:  # a tombstone: the key's row is deleted
            key = json.loads(r.key, parse_float=decimal.Decimal)
            rows.append(ChangelogRow.of("-D", [key.get(n) for n in names], types))
            continue
        value = json.loads(r.value, parse_float=decimal.Decimal)
        kind = "+U" if upsert else value.get("op", "+I")  # changelog-json carries each row's kind
        rows.append(ChangelogRow.of(kind, [value.get(n) for n in names], types))
    return rows


def run_in_real_time(program: ConformanceProgram, broker: Any, workdir: Path) -> None:
    """Both phases in the mode; an ``AssertionError`` with the sink's difference when a phase does not reach the
    expected table."""
    from planengine.plan.compiled_plan import CompiledPlan

    topics = {t.name: broker.topic(f"rt-{t.name}") for t in [*program.sources, *program.sinks]}
    (sink,) = program.sinks
    env = environment(program, topics, broker.bootstrap)
    names, types, pk = _columns(env, sink.name)
    key = _sink_key(sink, pk)
    upsert = _primary_key(sink)
    root = workdir / "job"

    def produce(phase: str) -> None:
        for s in program.sources:
            rows = s.before if phase == "before" else s.after
            if rows:
                src_names, src_types, _ = _columns(env, s.name)
                changelog = program.source_format(s) == "changelog-json"
                lines = json_lines(rows, src_names, src_types, changelog=changelog).splitlines()
                broker.produce(topics[s.name], [(None, line) for line in lines])

    def run_until(plan: Any, expected: list[Any], phase: str) -> None:
        want = materialize(expected_rows(expected, types), key)
        job = env.execute_plan(plan, job_root=str(root))
        try:
            deadline = time.monotonic() + WAIT_S
            got = materialize(_sink_rows(broker, topics[sink.name], names, types, upsert), key)
            while got != want and time.monotonic() < deadline:
                failed = [q["exception"] for q in job.status()["queries"] if q["exception"]]
                assert not failed, f"{phase}: a query failed: {failed[0][:600]}"
                time.sleep(0.5)
                got = materialize(_sink_rows(broker, topics[sink.name], names, types, upsert), key)
            assert got == want, (f"{phase}: after {WAIT_S:.0f} s the sink's table is not the expected one: "
                                 f"missing {sorted((want - got).elements())[:6]}, "
                                 f"unexpected {sorted((got - want).elements())[:6]}")
        finally:
            job.stop(snapshot=True)

    produce("before")
    plan = env.compile_plan_sql(program.statement.strip())
    assert plan.data["config"]["realTimeEnabled"] == "true"
    run_until(plan, sink.before, "before the stop")
    produce("after")
    env = environment(program, topics, broker.bootstrap)  # a fresh session, as a restarted driver has
    run_until(CompiledPlan.from_file(root / "plan.json"), [*sink.before, *sink.after], "after the restore")


# --- processes of their own -------------------------------------------------------------------------------------
# The mode runs every stage of a query at once: a join reads two topics (2 task slots) and shuffles (1 more), so
# these programs need more slots than the test process's shared ``local[2]`` session has. They run in child
# processes with a ``local[4]`` session each (task slots are threads there; 2 cores run them, more slowly).
# Why two children: a program spends most of its time waiting (a long batch runs for its whole checkpoint
# interval, and a stop waits for the batch's end), not computing, so two JVMs side by side take little more than
# half the time of one (CI: one child took 270-300 s of the Spark tier) for one more JVM start.
MASTER = "local[4]"
CHILDREN = 2


def run_in_child(keys: list[str], bootstrap: str, workdir: Path, timeout_s: float,
                 children: int = CHILDREN) -> dict[str, dict[str, Any]]:
    """Run ``keys`` in ``children`` processes side by side on the broker at ``bootstrap`` (round robin, so the
    joins, which are the slow ones and listed together, are spread); ``{key: {"passed", "error", "seconds"}}``.
    ``timeout_s`` bounds the whole run."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PLANENGINE_SPARK_MASTER": MASTER, "PYSPARK_PYTHON": sys.executable}
    shares = [keys[i::children] for i in range(children) if keys[i::children]]
    started = []
    for i, share in enumerate(shares):
        child_dir = workdir / f"child-{i}"
        child_dir.mkdir(parents=True, exist_ok=True)
        log = open(child_dir / "child.log", "w")  # noqa: SIM115 - open for the child's lifetime, closed below
        proc = subprocess.Popen([sys.executable, "-m", "tests.conformance.real_time", "--bootstrap", bootstrap,
                                 "--workdir", str(child_dir), "--report", str(child_dir / "report.jsonl"), *share],
                                cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append((child_dir, share, proc, log))
    deadline = time.monotonic() + timeout_s
    results: dict[str, dict[str, Any]] = {}
    problems = []
    for child_dir, share, proc, log in started:
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.close()
        report = child_dir / "report.jsonl"
        got = {}
        if report.exists():
            for line in report.read_text().splitlines():
                entry = json.loads(line)
                got[entry["key"]] = entry
        results.update(got)
        if code != 0 or set(got) != set(share):
            tail = (child_dir / "child.log").read_text()[-3000:]
            problems.append(f"the real-time conformance process {child_dir.name} exited {code} with results for "
                            f"{sorted(got)} of {sorted(share)}:\n{tail}")
    if problems:
        raise AssertionError("\n".join(problems))
    return results


def main(argv: list[str] | None = None) -> int:
    import argparse
    import traceback

    from planengine.testing.conformance_programs import default_conformance_dir, load_programs
    from tests.fixtures.kafka import KafkaBroker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("keys", nargs="+")
    args = parser.parse_args(argv)
    programs = {p.key: p for p in load_programs(default_conformance_dir(Path(__file__).resolve().parents[2]))}
    broker = KafkaBroker(args.bootstrap, args.workdir, None, 0.0)  # type: ignore[arg-type]  # the tests' broker
    for key in args.keys:
        started, error = time.monotonic(), None
        try:
            run_in_real_time(programs[key], broker, args.workdir / key.replace("/", "_"))
        except Exception as failure:  # reported per program; the next one still runs
            error = f"{type(failure).__name__}: {failure}"[:1500]
            traceback.print_exc()
        with open(args.report, "a") as out:
            out.write(json.dumps({"key": key, "passed": error is None, "error": error,
                                  "seconds": round(time.monotonic() - started, 1)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
