"""Flink's own keys: every key of the generated table resolves, with a disposition that cannot lie."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

import planengine
from planengine import cli
from planengine.api import TableEnvironment
from planengine.config import REGISTRY
from planengine.config import options as engine_options
from planengine.config.flink import IGNORED_BECAUSE, MAPPED, UNSUPPORTED
from planengine.config.flink_table import flink_option_specs, flink_table
from planengine.config.registry import Option
from planengine.errors import ValidationError

DDL_AND_INSERT = """
CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE dst (k STRING, v BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO dst SELECT k, v FROM src;
"""
PACKAGE = Path(planengine.__file__).parent


def compile_script(tmp_path: Path, script: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "job.sql"
    path.write_text(script)
    code = cli.main(["compile", str(path), "-o", str(tmp_path / "plan.json")])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("statement", [
    "SET 'table.optimizer.union-all-as-breakpoint-enabled' = 'false';",
    "SET 'table.optimizer.reuse-optimize-block-with-digest-enabled' = 'true';",
])
def test_documented_flink_keys_pasted_from_a_flink_job_compile(
        statement: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="planengine"):
        code, err = compile_script(tmp_path, statement + DDL_AND_INSERT, capsys)
    assert code == 0, err
    assert "has no effect in planengine" in caplog.text


def test_an_ignored_key_warns_once_per_session_saying_why(caplog: pytest.LogCaptureFixture) -> None:
    env = TableEnvironment()
    with caplog.at_level(logging.WARNING, logger="planengine"):
        env.execute_sql("SET 'table.optimizer.union-all-as-breakpoint-enabled' = 'false';"
                        "SET 'table.optimizer.union-all-as-breakpoint-enabled' = 'true'")
    warnings = [r.getMessage() for r in caplog.records if "union-all-as-breakpoint" in r.getMessage()]
    assert warnings == ["'table.optimizer.union-all-as-breakpoint-enabled' has no effect in planengine: planengine "
                        "plans all sinks of a script as one DAG and shares common sub-plans by digest"]
    assert env.config == {"table.optimizer.union-all-as-breakpoint-enabled": "true"}


def test_an_unknown_key_is_an_error_with_did_you_mean() -> None:
    with pytest.raises(ValidationError) as error:
        TableEnvironment().execute_sql("SET 'table.optimizer.union-all-as-breakpoint-enable' = 'false'")
    assert str(error.value).startswith(
        "statement 1, line 1, column 1: unknown option 'table.optimizer.union-all-as-breakpoint-enable'; "
        "did you mean 'table.optimizer.union-all-as-breakpoint-enabled'?")


def test_a_bad_value_of_a_typed_flink_key_exits_2_naming_key_type_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = compile_script(tmp_path, "SET 'pipeline.name' = 'x';\nSET 'table.exec.mini-batch.enabled' = 'maybe';"
                               + DDL_AND_INSERT, capsys)
    assert code == 2
    assert "statement 2, line 2, column 1: invalid value 'maybe' for option 'table.exec.mini-batch.enabled': " \
           "expected 'true' or 'false' (type Boolean)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("table.optimizer.union-all-as-breakpoint-enabled", "maybe", "expected 'true' or 'false' (type Boolean)"),
    ("execution.checkpointing.interval", "soon", "expected a duration such as '100 ms'"),
    ("execution.checkpointing.data-inline-threshold", "lots", "expected a memory size such as '512 kb'"),
    ("table.optimizer.distinct-agg.split.bucket-num", "many", "expected an integer (type Integer)"),
    ("table.optimizer.runtime-filter.min-filter-ratio", "half", "expected a number (type Double)"),
    ("execution.checkpointing.mode", "SOMETIMES", "expected one of 'EXACTLY_ONCE', 'AT_LEAST_ONCE' (type Enum)"),
    ("state.backend.rocksdb.compression.per.level", "LZ4_COMPRESSION;FAST", "(type List<Enum>)"),
    ("pipeline.global-job-parameters", "a=1", "expected a map such as 'k1:v1,k2:v2' (type Map)"),
])
def test_values_of_ignored_flink_keys_are_checked_by_their_flink_type(key: str, value: str, expected: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(expected)):
        REGISTRY.check(key, value)


@pytest.mark.parametrize(("key", "value"), [
    ("execution.checkpointing.mode", "at_least_once"),  # Flink matches enum values ignoring case
    ("state.backend.rocksdb.compression.per.level", "LZ4_COMPRESSION;ZSTD_COMPRESSION"),
    ("state.backend.rocksdb.compression.per.level", "[LZ4_COMPRESSION, ZSTD_COMPRESSION]"),
    ("pipeline.global-job-parameters", "a:1,b:2"),
    ("pipeline.global-job-parameters.a", "1"),  # Flink sets a Map option one entry at a time too
    ("execution.checkpointing.interval", "3 min"),
])
def test_good_values_of_flink_keys_are_kept(key: str, value: str) -> None:
    assert REGISTRY.check(key, value).value == value


def test_a_deprecated_flink_key_is_stored_under_its_current_key() -> None:
    env = TableEnvironment()
    assert str(env.execute_sql("SET 'state.checkpoints.dir' = '/ckpt'")[0]) == \
        "set 'execution.checkpointing.dir' = '/ckpt'"
    env.execute_sql("RESET 'state.checkpoints.dir'")
    assert env.config == {}


def test_the_generated_file_is_sorted_unique_and_from_one_flink_release() -> None:
    data = flink_table()
    keys = [entry["key"] for entry in data["options"]]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["flinkVersion"])
    assert {"table.exec.state.ttl", "execution.checkpointing.interval", "pipeline.name", "state.backend.type",
            "sql-client.execution.result-mode", "restart-strategy.type", "parallelism.default"} <= set(keys)
    text = (PACKAGE / "config" / "flink_options.json").read_text(encoding="utf-8")
    assert json.loads(text) == data


def test_every_flink_key_has_one_disposition_with_its_reason() -> None:
    missing, no_reason = [], []
    for spec in flink_option_specs():
        option = REGISTRY.find(spec.key)
        if option is None:
            missing.append(spec.key)
        elif option.treatment != "honoured" and not option.note:
            no_reason.append(spec.key)
        for alias in spec.deprecated_keys + spec.fallback_keys:
            assert REGISTRY.find(alias) is not None, alias
        if spec.default is not None and option is not None and option.treatment != "honoured":
            option.parse(spec.default)  # Flink's own default passes planengine's check of its type
    assert missing == []
    assert no_reason == [], "give these keys a reason in planengine/config/flink.py (IGNORED_BECAUSE)"
    flink_keys = {spec.key for spec in flink_option_specs()}
    stale = sorted(k for k in [*UNSUPPORTED, *MAPPED] if k not in flink_keys and REGISTRY.find(k) is None)
    assert stale == [], "dispositions for keys that no longer exist"
    unused = sorted(p for p in IGNORED_BECAUSE if not any(k.startswith(p) for k in flink_keys))
    assert unused == [], "reasons that match no key of the table"


def _read_outside_config(option: Option) -> bool:
    """The key is written in the engine's code, or the code reads the option's declaration by name."""
    names = [name for name, value in vars(engine_options).items() if value is option]
    pattern = re.compile("|".join([re.escape(f'"{option.key}"'), re.escape(f"'{option.key}'"),
                                   *(rf"\b{re.escape(name)}\b" for name in names)]))
    return any(pattern.search(path.read_text(encoding="utf-8"))
               for path in PACKAGE.rglob("*.py") if path.parent.name != "config")


def test_every_honoured_or_mapped_key_is_read_by_the_engine() -> None:
    """So the table cannot claim planengine honours a key nothing reads."""
    honoured = [o for o in REGISTRY.options() if o.treatment == "honoured"]
    assert {spec.key for spec in flink_option_specs()} & {o.key for o in honoured}  # Flink keys among them
    unread = [o.key for o in honoured if not _read_outside_config(o)]
    mapped_to_unread = [o.key for o in REGISTRY.options() if o.treatment == "mapped"
                        and (o.maps_to is None or not _read_outside_config(REGISTRY.get(o.maps_to)))]
    assert unread == [] and mapped_to_unread == []
