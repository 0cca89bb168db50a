"""Inputs the issue-20 fuzzer turned into Python tracebacks (or side effects), kept as data files.

Each file in ``regressions/`` must now fail as a user error (exit 2) whose message says what was wrong and
names a line; compile must not run or write anything but its own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine.cli import main
from planengine.errors import OptionError, UserError
from tests.fuzz.harness import compile_bytes, no_spark

REGRESSIONS = Path(__file__).parent / "regressions"

# file -> (words the message must hold, line the error must name)
CASES = {
    "not_utf8.sql": ("file is not UTF-8 text: byte 0xe9", 3),
    "token_error_in_hint.sql": ("invalid hint: unterminated string literal", 3),
    "interval_overflow.sql": ("invalid interval literal", 3),
    "interval_not_a_number.sql": ("invalid interval literal", 3),
    "numeric_literal_out_of_range.sql": ("is out of range", 3),
    "map_one_parameter.sql": ("MAP has 1 type argument; write MAP<key type, value type>", 1),
    "watermark_without_column.sql": ("WATERMARK needs a column and a strategy", 1),
    "watermark_without_strategy.sql": ("WATERMARK needs a column and a strategy", 1),
    "computed_column_without_expression.sql": ("computed column 'b' has no expression", 1),
    "bare_select.sql": ("a query (SELECT/VALUES) is not allowed in a script being compiled", 3),
    "execute_plan.sql": ("EXECUTE PLAN is not allowed in a script being compiled", 3),
    "compile_plan_from.sql": ("COMPILE PLAN ... FROM (plan migration) is not allowed", 3),
    "password_in_parse_error.sql": ("expected ')' after the WITH options", 1),
    "sink_path_empty.sql": ("expected a non-empty path", 4),
    "sink_path_blank.sql": ("expected a non-empty path", 4),
    "sink_path_nul.sql": ("expected a path without NUL bytes", 4),
    "hint_with_broken_quotes.sql": ("malformed hint: expected /*+ NAME('key' = 'value', ...) */", 3),
    "column_with_stray_in.sql": ("column 'b': unexpected 'IN'", 3),
}


def test_every_regression_file_has_a_case():
    assert sorted(p.name for p in REGRESSIONS.glob("*.sql")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_regression_input_is_a_located_user_error(name: str, tmp_path: Path):
    words, line = CASES[name]
    data = (REGRESSIONS / name).read_bytes()
    data = data.replace(b"PLACEHOLDER_NEW", str(tmp_path / "new.json").encode())
    data = data.replace(b"PLACEHOLDER_OLD", str(tmp_path / "old.json").encode())
    with no_spark(), pytest.raises(UserError) as raised:
        compile_bytes(data, name)
    error = raised.value
    assert words in error.render()
    assert error.location is not None and error.location.line == line, error.render()
    assert error.exit_code == 2
    assert list(tmp_path.iterdir()) == []  # nothing written (COMPILE PLAN ... FROM used to write new.json)


def test_a_parse_error_echoing_a_password_masks_it():
    with pytest.raises(UserError) as raised:
        compile_bytes((REGRESSIONS / "password_in_parse_error.sql").read_bytes())
    text = raised.value.render()
    assert "hunter2" not in text
    assert "'password' = '******' 'topic'" in text
    caret_line = text.split("\n")[2]
    assert caret_line.index("^") == text.split("\n")[1].index("'topic'")  # the caret still points at the spot


def test_kafka_jaas_config_is_masked_in_the_plan():
    script = """
        CREATE TABLE src (a BIGINT) WITH ('connector' = 'datagen');
        CREATE TABLE k (a BIGINT) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json',
          'properties.bootstrap.servers' = 'kafka:9092',
          'properties.sasl.jaas.config' = 'PlainLoginModule required username="u" password="hunter2";');
        INSERT INTO k SELECT a FROM src;
    """
    plan = json.loads(compile_bytes(script.encode()))
    sink = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-sink"))
    assert sink["table"]["resolvedTable"]["options"]["properties.sasl.jaas.config"] == "******"
    assert "hunter2" not in json.dumps(plan)


@pytest.mark.parametrize("command", ["check", "explain"])
def test_a_plan_file_that_is_not_utf8_is_exit_2(command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    plan = tmp_path / "plan.json"
    plan.write_bytes(b'{"formatVersion": 1, "nodes": [], "x": "\xff"}')
    assert main([command, "--plan", str(plan)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and "line 1, column 41" in err and "Traceback" not in err


def test_compile_cli_refuses_a_bare_select_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "plan.json"
    with no_spark():
        code = main(["compile", str(REGRESSIONS / "bare_select.sql"), "-o", str(out)])
    assert code == 2 and not out.exists()
    assert "bare_select.sql, statement 3, line 3" in capsys.readouterr().err


def test_sink_path_empty_is_an_option_error():
    with pytest.raises(OptionError):
        compile_bytes((REGRESSIONS / "sink_path_empty.sql").read_bytes())


# Inputs the long campaign (benchmarks/fuzz/sql_campaign.py) found: a traceback, or minutes of quadratic
# GROUP BY key matching over deeply nested expressions. Each must now end quickly in a plan or a located error.
CAMPAIGN = sorted((REGRESSIONS / "campaign").glob("*.sql"))


@pytest.mark.parametrize("path", CAMPAIGN, ids=[p.stem for p in CAMPAIGN])
def test_campaign_finding_compiles_or_fails_cleanly_and_quickly(path: Path):
    import time

    from tests.fuzz.harness import CLEAN_ERROR, COMPILED, run_one

    started = time.process_time()
    with no_spark():
        outcome = run_one(path.read_bytes(), path.name)
    assert outcome.kind in (COMPILED, CLEAN_ERROR), outcome.message
    assert time.process_time() - started < 5.0


@pytest.mark.parametrize("path, refused", [
    ("{root}/runs/r1/out", True), ("{root}/snapshots", True), ("file://{root}/checkpoints/x", True),
    ("{root}", True), ("{root}/checkpoints/../runs/a", True),
    ("{root}/out", False), ("{root}-other/runs", False), ("s3a://bucket{root}/runs", False),
])
def test_a_sink_inside_the_job_roots_own_storage_is_refused_when_the_job_starts(tmp_path: Path, path: str,
                                                                                 refused: bool):
    from planengine.runtime.storage.job_root import JobRoot, refuse_sinks_inside

    root = tmp_path / "job"
    sink = {"type": "stream-exec-sink_2", "table": {"identifier": "`s`", "resolvedTable": {
        "options": {"connector": "filesystem", "format": "json", "path": path.format(root=root)}}}}
    if refused:
        with pytest.raises(UserError, match="the engine keeps its checkpoints, runs and snapshots there"):
            refuse_sinks_inside(JobRoot(root), {"nodes": [sink]})
    else:
        refuse_sinks_inside(JobRoot(root), {"nodes": [sink]})
