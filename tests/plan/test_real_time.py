"""``pipeline.real-time``: the plan records whether it runs in Spark's Real-time Mode, and why not when it cannot;
``REQUIRED`` that cannot be met fails at compile time naming the node; ``OFF`` (the default) changes no plan byte."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.plan import serde
from planengine.plan.explain import explain_plan_json
from planengine.plan.restore import check_plan
from planengine.runtime.engine.executor import trigger_options

KAFKA = "'properties.bootstrap.servers' = '127.0.0.1:9092', 'format' = 'json'"
DDL = f"""
CREATE TABLE clicks (id BIGINT, k STRING, pt BIGINT) WITH ('connector' = 'kafka', 'topic' = 'in', {KAFKA});
CREATE TABLE timed (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'kafka',
  'topic' = 'timed', {KAFKA});
CREATE TABLE files (id BIGINT, k STRING, pt BIGINT) WITH ('connector' = 'filesystem', 'path' = '/tmp/in',
  'format' = 'json');
CREATE TABLE out_t (id BIGINT, k STRING, pt BIGINT) WITH ('connector' = 'kafka', 'topic' = 'out', {KAFKA});
CREATE TABLE counts (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka',
  'topic' = 'counts', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'key.format' = 'json',
  'value.format' = 'json');
CREATE TABLE printed (id BIGINT, k STRING, pt BIGINT) WITH ('connector' = 'print');
"""
FILTER = "INSERT INTO out_t SELECT id, UPPER(k), pt FROM clicks WHERE MOD(id, 10) <> 0"


def plan(insert: str, **config: str) -> dict:
    env = TableEnvironment()
    for key, value in config.items():
        env.execute_sql(f"SET '{key}' = '{value}'")
    env.execute_sql(DDL)
    return json.loads(env.compile_plan_sql(insert).as_json())


def test_a_kafka_filter_projection_plan_runs_in_the_mode_when_asked() -> None:
    compiled = plan(FILTER, **{"pipeline.real-time": "auto", "pipeline.real-time.checkpoint-interval": "5 s"})
    config = compiled["config"]
    assert config["pipeline.real-time"] == "AUTO" and config["realTimeEnabled"] == "true"
    assert "realTimeBlockedBy" not in config
    assert trigger_options(config) == {"realTime": "5000 milliseconds"}
    assert "Execution: Real-time Mode (pipeline.real-time = AUTO; one checkpoint every 5 s)" in explain_plan_json(
        compiled)


@pytest.mark.parametrize(("insert", "blocker"), [
    ("INSERT INTO out_t SELECT id, k, pt FROM files", "its connector 'filesystem' is not a Real-time Mode source"),
    ("INSERT INTO printed SELECT id, k, pt FROM clicks", "its connector 'print' is not a Real-time Mode sink"),
    ("INSERT INTO out_t SELECT id, 'x', 0 FROM timed", "a WATERMARK: its end-of-input control stream"),
])
def test_auto_records_micro_batches_and_the_node_that_prevents_the_mode(insert: str, blocker: str) -> None:
    compiled = plan(insert, **{"pipeline.real-time": "AUTO"})
    config = compiled["config"]
    assert config["realTimeEnabled"] == "false"
    assert blocker in config["realTimeBlockedBy"]
    assert config["realTimeBlockedBy"].startswith("#")  # the node, by its position in the plan
    assert trigger_options(config) == {}
    assert f"Execution: micro-batches (pipeline.real-time = AUTO, but {config['realTimeBlockedBy']})" \
        in explain_plan_json(compiled)


def test_a_native_group_by_into_upsert_kafka_runs_in_the_mode() -> None:
    """Spark's update-mode aggregation runs in the mode; ``upsert-kafka`` writes each update as the key's value."""
    compiled = plan("INSERT INTO counts SELECT k, COUNT(*) FROM clicks GROUP BY k", **{"pipeline.real-time": "auto"})
    assert compiled["config"]["realTimeEnabled"] == "true", compiled["config"].get("realTimeBlockedBy")
    aggregate = next(n for n in compiled["nodes"] if n["type"].startswith("stream-exec-group-aggregate"))
    assert aggregate["strategy"] == "NATIVE"


def test_jvm_processors_run_in_the_mode_unless_their_state_has_a_ttl() -> None:
    """Summing doubles is not exact natively (summation order), so the JVM processor runs it; it uses no timers,
    so the mode admits it, as it admits the JVM deduplicate. State TTL is kept out until tested in the mode."""
    jvm = "INSERT INTO counts SELECT k, CAST(SUM(CAST(id AS DOUBLE)) AS BIGINT) FROM clicks GROUP BY k"
    compiled = plan(jvm, **{"pipeline.real-time": "auto"})
    assert compiled["config"]["realTimeEnabled"] == "true", compiled["config"].get("realTimeBlockedBy")
    assert [n["strategy"] for n in compiled["nodes"] if "strategy" in n] == ["JVM"]
    with_ttl = plan(jvm, **{"pipeline.real-time": "auto", "table.exec.state.ttl": "1 h"})["config"]
    assert with_ttl["realTimeEnabled"] == "false"
    assert "its state has a TTL ('table.exec.state.ttl' or a STATE_TTL hint)" in with_ttl["realTimeBlockedBy"]


def test_required_fails_the_compile_naming_the_node_and_the_way_out() -> None:
    with pytest.raises(UnsupportedQueryError) as refused:
        plan("INSERT INTO printed SELECT id, k, pt FROM clicks", **{"pipeline.real-time": "required"})
    assert "'pipeline.real-time' = 'REQUIRED', but this plan cannot run in Real-time Mode: #" in str(refused.value)
    assert "its connector 'print'" in str(refused.value)
    assert "'AUTO'" in (refused.value.hint or "")
    assert plan(FILTER, **{"pipeline.real-time": "required"})["config"]["realTimeEnabled"] == "true"


def test_a_statement_set_stays_in_micro_batches() -> None:
    env = TableEnvironment()
    env.execute_sql("SET 'pipeline.real-time' = 'auto'")
    env.execute_sql(DDL)
    compiled = json.loads(env.compile_plan_sql(
        f"EXECUTE STATEMENT SET BEGIN {FILTER}; INSERT INTO out_t SELECT id, k, pt FROM clicks; END").as_json())
    assert "a statement set of 2 sinks" in compiled["config"]["realTimeBlockedBy"]


def test_off_by_default_changes_no_plan_byte() -> None:
    default, off = plan(FILTER), plan(FILTER, **{"pipeline.real-time": "off"})
    assert default == off and not any(k.startswith(("pipeline.real-time", "realTime")) for k in default["config"])
    assert "Execution:" not in explain_plan_json(default)


def test_a_malformed_mode_or_interval_is_refused_with_the_key() -> None:
    with pytest.raises(Exception, match=r"pipeline\.real-time"):
        plan(FILTER, **{"pipeline.real-time": "sometimes"})
    with pytest.raises(Exception, match=r"pipeline\.real-time\.checkpoint-interval"):
        plan(FILTER, **{"pipeline.real-time": "auto", "pipeline.real-time.checkpoint-interval": "soon"})


def test_check_refuses_a_real_time_plan_on_an_engine_whose_spark_lacks_the_mode(monkeypatch) -> None:
    """An upgrade (or a restore) onto an engine on Spark 4.2 is stopped at ``check``, before anything runs: the
    operator checks the plan on the target engine first."""
    real_time_plan, micro_batch_plan = plan(FILTER, **{"pipeline.real-time": "auto"}), plan(FILTER)
    assert check_plan(real_time_plan).status == "compatible"
    monkeypatch.setattr(serde, "SPARK_VERSION", "4.2.1")
    report = check_plan(real_time_plan)
    assert report.status == "incompatible" and report.exit_code == 4
    assert "the plan runs in Spark's Real-time Mode ('realTimeEnabled' in its config), but this engine cannot: its " \
           "Spark 4.2.1 has no Real-time Mode (Spark 4.3 added it)" in report.reasons[0]["message"]
    assert "Spark 4.3 or newer" in report.reasons[0]["hint"]
    assert check_plan(micro_batch_plan).status == "compatible"  # micro-batches run on any engine
    # AUTO that decided against the mode runs anywhere too.
    assert check_plan(plan("INSERT INTO printed SELECT id, k, pt FROM clicks",
                           **{"pipeline.real-time": "auto"})).status == "compatible"


def test_a_checkpoint_interval_below_sparks_minimum_is_refused_at_compile_time() -> None:
    """Spark refuses a real-time batch shorter than 5 s only when the query starts (an exception from the JVM);
    the compile says it first, naming the option. With the mode off the option is not used, so not checked."""
    with pytest.raises(ValidationError) as refused:
        plan(FILTER, **{"pipeline.real-time": "auto", "pipeline.real-time.checkpoint-interval": "4 s"})
    assert "'pipeline.real-time.checkpoint-interval' = '4 s' is shorter than Spark's minimum real-time batch of 5 s" \
        in str(refused.value)
    assert plan(FILTER, **{"pipeline.real-time": "auto", "pipeline.real-time.checkpoint-interval": "5 s"})
    assert "realTimeEnabled" not in plan(FILTER, **{"pipeline.real-time.checkpoint-interval": "1 s"})["config"]


def test_joins_and_unions_run_in_the_mode_unless_a_stateful_operator_feeds_them() -> None:
    """A regular join runs on its JVM processor (no timers), so the mode admits it; Spark's real-time mode runs no
    stateful operator before a union, and a join's processor reads its two sides as one union."""
    join = "INSERT INTO out_t SELECT a.id, b.k, a.pt FROM clicks a JOIN clicks b ON a.id = b.id"
    assert plan(join, **{"pipeline.real-time": "auto"})["config"]["realTimeEnabled"] == "true"
    after_aggregate = ("INSERT INTO counts SELECT c.k, c.n FROM (SELECT k, COUNT(*) AS n FROM clicks GROUP BY k) c "
                       "JOIN (SELECT k, MAX(id) AS m FROM clicks GROUP BY k) d ON c.k = d.k")
    config = plan(after_aggregate, **{"pipeline.real-time": "auto"})["config"]
    assert config["realTimeEnabled"] == "false"
    assert "a stateful operator runs before it, and Spark's real-time mode runs none before a union" in \
        config["realTimeBlockedBy"]
