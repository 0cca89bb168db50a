"""The option registry: SET, RESET, -D and TableEnvironment(config) accept known keys only, with clear errors."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

import planengine
from planengine import cli
from planengine.api import TableEnvironment
from planengine.config import REGISTRY, docs
from planengine.errors import ValidationError
from planengine.exec.base import registered

DDL = """
CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'datagen');
CREATE TABLE dst (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
"""
INSERT = "INSERT INTO dst SELECT k, COUNT(*) FROM src GROUP BY k"


def run(env: TableEnvironment, sql: str) -> str:
    return str(env.execute_sql(sql)[-1])


def test_a_typo_in_a_key_is_an_error_with_did_you_mean() -> None:
    with pytest.raises(ValidationError) as error:
        run(TableEnvironment(), "SET 'table.exec.state.tll' = '1 h'")
    assert "unknown option 'table.exec.state.tll'; did you mean 'table.exec.state.ttl'?" in str(error.value)
    assert "statement 1, line 1" in str(error.value)


def test_a_typo_in_the_middle_segment_still_finds_the_key() -> None:
    with pytest.raises(ValidationError, match=re.escape("did you mean 'table.exec.mini-batch.enabled'")):
        run(TableEnvironment(), "SET 'table.exec.minibatch.enabled' = 'true'")


def test_an_unknown_key_without_a_near_one_says_where_the_list_is() -> None:
    with pytest.raises(ValidationError) as error:
        run(TableEnvironment(), "SET 'foo.bar' = '1'")
    assert str(error.value).startswith("statement 1, line 1, column 1: unknown option 'foo.bar'\n")
    assert "docs/options.md" in str(error.value)


def test_a_bad_value_says_what_was_expected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.sql"
    script.write_text(f"SET 'table.exec.state.ttl' = 'banana';\n{DDL}\n{INSERT};\n")
    assert cli.main(["compile", str(script)]) == 2
    err = capsys.readouterr().err
    assert "statement 1, line 1, column 1: invalid value 'banana' for option 'table.exec.state.ttl': expected a " \
           "duration such as '100 ms'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("table.exec.sink.upsert-materialize", "sometimes", "expected one of 'NONE', 'AUTO', 'FORCE'"),
    ("table.exec.mini-batch.enabled", "yes", "expected 'true' or 'false'"),
    ("table.exec.mini-batch.size", "-5", "expected an integer >= -1"),
    ("table.local-time-zone", "Mars/Olympus", "expected a time zone id"),
    ("table.plan.compile.catalog-objects", "EVERYTHING", "one of 'ALL', 'SCHEMA', 'IDENTIFIER'"),
])
def test_bad_values_of_typed_options(key: str, value: str, expected: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(expected)):
        run(TableEnvironment(), f"SET '{key}' = '{value}'")


def test_good_values_are_kept_as_written() -> None:
    env = TableEnvironment()
    assert run(env, "SET 'table.exec.state.ttl' = '1 h'") == "set 'table.exec.state.ttl' = '1 h'"
    run(env, "SET 'table.local-time-zone' = 'Europe/Berlin'")
    run(env, "SET 'table.exec.sink.upsert-materialize' = 'none'")
    assert env.config == {"table.exec.state.ttl": "1 h", "table.local-time-zone": "Europe/Berlin",
                          "table.exec.sink.upsert-materialize": "none"}


def test_flink_runtime_keys_are_accepted_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    env = TableEnvironment()
    with caplog.at_level(logging.WARNING, logger="planengine"):
        run(env, "SET 'parallelism.default' = '4'")
    assert env.config["parallelism.default"] == "4"
    assert "'parallelism.default' has no effect in planengine" in caplog.text
    assert "shuffle partitions is fixed per job" in caplog.text
    with pytest.raises(ValidationError, match="expected an integer"):
        run(env, "SET 'parallelism.default' = 'four'")


def test_flink_keys_that_would_change_results_are_refused_unless_default() -> None:
    env = TableEnvironment()
    with pytest.raises(ValidationError) as error:
        run(env, "SET 'table.exec.emit.early-fire.enabled' = 'true'")
    assert "planengine does not support 'table.exec.emit.early-fire.enabled' = 'true'" in str(error.value)
    assert "windows emit once" in str(error.value)
    run(env, "SET 'table.exec.emit.early-fire.enabled' = 'false'")
    with pytest.raises(ValidationError, match="planengine runs streaming jobs"):
        run(env, "SET 'execution.runtime-mode' = 'batch'")
    run(env, "SET 'execution.runtime-mode' = 'streaming'")


def test_mapped_keys_are_stored_under_planengines_key() -> None:
    env = TableEnvironment()
    assert run(env, "SET 'sql-client.display.max-column-width' = '50'") == \
        "set 'table.display.max-column-width' = '50'"
    assert env.config == {"table.display.max-column-width": "50"}
    run(env, "RESET 'sql-client.display.max-column-width'")
    assert env.config == {}


def test_reset_validates_the_key() -> None:
    env = TableEnvironment({"table.exec.state.ttl": "1 h"})
    with pytest.raises(ValidationError, match=re.escape("did you mean 'table.exec.state.ttl'")):
        run(env, "RESET 'table.exec.state.tl'")
    run(env, "RESET 'table.exec.state.ttl'")
    assert env.config == {}


def test_set_alone_lists_the_options_in_effect() -> None:
    env = TableEnvironment({"table.exec.state.ttl": "1 h"})
    result = env.execute_sql("SET")[0]
    assert result.rows == [("table.exec.state.ttl", "1 h")]


def test_session_config_and_cli_options_are_validated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=re.escape("did you mean 'table.exec.state.ttl'")):
        TableEnvironment({"table.exec.state.tt": "1 h"})
    script = tmp_path / "job.sql"
    script.write_text(f"{DDL}\n{INSERT};\n")
    assert cli.main(["compile", str(script), "-D", "table.exec.state.ttl=forever"]) == 2
    assert "invalid value 'forever' for option 'table.exec.state.ttl'" in capsys.readouterr().err


def test_trigger_interval_set_by_the_user_is_recorded_not_overwritten() -> None:
    def plan_config(*sets: str) -> dict[str, str]:
        env = TableEnvironment()
        env.execute_sql(DDL + "".join(f"SET '{k}' = '{v}';" for k, v in (s.split("=") for s in sets)))
        return env.compile_plan_sql(INSERT).data["config"]

    assert plan_config()["pipeline.trigger-interval"] == "0 ms"
    assert plan_config("table.exec.mini-batch.enabled=true", "table.exec.mini-batch.allow-latency=2 s")[
        "pipeline.trigger-interval"] == "2 s"
    assert plan_config("pipeline.trigger-interval=5 s")["pipeline.trigger-interval"] == "5 s"
    assert plan_config("table.exec.mini-batch.enabled=true", "table.exec.mini-batch.allow-latency=2 s",
                       "pipeline.trigger-interval=500 ms")["pipeline.trigger-interval"] == "500 ms"


def test_every_consumed_option_is_declared_with_a_default_frozen_into_plans() -> None:
    undeclared = sorted({(f"{name}_{version}", key) for (name, version), cls in registered().items()
                         for meta in cls.METADATA if meta.version == version
                         for key in meta.consumed_options
                         if (o := REGISTRY.find(key)) is None or o.scope != "plan" or o.default is None})
    assert undeclared == []


OPTION_LIKE = re.compile(r"""["']((?:table|pipeline|planengine|execution|sql-client|state)\.[a-z0-9.-]*[a-z0-9])["']""")
NOT_OPTIONS = ("planengine.",)  # logger and module names share the prefix


def test_every_option_key_the_engine_mentions_is_declared() -> None:
    """A key written anywhere in the engine's code (``config.get("table.x")``) must be in the registry, so
    nothing reads an option users cannot set (or could set with a typo without being told)."""
    root = Path(planengine.__file__).parent
    modules = {m.name for m in root.rglob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
    found: dict[str, str] = {}
    for path in root.rglob("*.py"):
        if path.parent.name == "config":
            continue
        for key in OPTION_LIKE.findall(path.read_text(encoding="utf-8")):
            first = key.split(".")[1] if key.startswith(NOT_OPTIONS) else ""
            if first and (f"{first}.py" in modules or first in modules or first in ("io", "factories", "cli")):
                continue  # a logger / module name like planengine.runtime
            found.setdefault(key, str(path.relative_to(root)))
    undeclared = {k: where for k, where in found.items() if REGISTRY.find(k) is None}
    assert undeclared == {}


def test_the_registry_declares_each_key_once_and_maps_to_declared_keys() -> None:
    keys = [o.key for o in REGISTRY.options()]
    assert len(keys) == len(set(keys))
    for option in REGISTRY.options():
        if option.default is not None:
            option.parse(option.default)  # every default parses
        if option.treatment == "mapped":
            assert REGISTRY.get(option.maps_to or "").treatment == "honoured"
    with pytest.raises(ValueError, match="declared twice"):
        REGISTRY.register(REGISTRY.get("table.exec.state.ttl"))


def test_docs_options_md_is_generated_from_the_registry() -> None:
    assert docs.DOC_PATH.read_text(encoding="utf-8") == docs.render_options_markdown(), (
        "docs/options.md is out of date: run `python -m planengine.config.docs --write`")



def test_plans_freeze_the_registry_defaults() -> None:
    env = TableEnvironment()
    env.execute_sql(DDL)
    nodes = env.compile_plan_sql(INSERT).data["nodes"]
    aggregate = next(n for n in nodes if "group-aggregate" in n["type"])
    assert aggregate["configuration"] == {"table.exec.mini-batch.enabled": "false", "table.exec.state.ttl": "0 ms"}
    assert json.dumps(aggregate["configuration"])  # plain strings
