"""Restore checks (DESIGN §3, CLI contract §6): ``planengine check`` verdicts, exit codes and reasons, plus the
file semantics of plans (``from_file(if_absent=...)``, overwrite protection, ``IF NOT EXISTS``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planengine import version as V
from planengine.cli import main as cli_main
from planengine.errors import PlanError
from planengine.plan import restore as R
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.serde import compute_plan_id, dumps
from tests.plan._support import cli, env_with

DDL = ("CREATE TABLE generated (id BIGINT, score INT, label STRING) WITH ('connector' = 'datagen');"
       "CREATE TABLE printed (k STRING, v BIGINT) WITH ('connector' = 'print')")
PROGRAM = "INSERT INTO printed SELECT UPPER(label), id FROM generated WHERE score > 0"


def good_plan() -> dict[str, Any]:
    return json.loads(env_with(DDL).compile_plan_sql(PROGRAM).as_json())


def resealed(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A plan edited like a different engine would have written it: the planId is recomputed."""
    plan = good_plan()
    edit(plan)
    plan["planId"] = compute_plan_id(plan)
    return plan


def set_upper_version(plan: dict[str, Any]) -> None:
    text = json.dumps(plan["nodes"])
    assert '{"name": "UPPER", "version": 1}' in text
    plan["nodes"] = json.loads(text.replace('{"name": "UPPER", "version": 1}', '{"name": "UPPER", "version": 99}'))


def rename_calc(plan: dict[str, Any]) -> None:
    plan["nodes"][1]["type"] = "stream-exec-calc_7"


def hand_edit(plan: dict[str, Any]) -> None:
    plan["nodes"][1]["description"] = "edited"


# name -> (plan, engine version of this engine, exit code, fragments of the one reason, its node)
CASES: dict[str, tuple[Callable[[], dict[str, Any]], str, int, tuple[str, ...], int | None]] = {
    "good": (good_plan, "0.1", 0, (), None),
    "unknown-format-version": (lambda: resealed(lambda p: p.update(formatVersion=3)), "0.1", 4,
                               ("plan format version 3 is not readable by this engine (reads 1, 2)",
                                "engine that wrote it"), None),
    "newer-engine": (lambda: resealed(lambda p: p.update(engineVersion="0.2")), "0.1", 4,
                     ("compiled by a newer engine (0.2) than this one (0.1)", "that engine version or newer"), None),
    "oldest-in-window": (lambda: resealed(lambda p: p.update(engineVersion="0.3")), "0.5", 0, (), None),
    "older-than-window": (lambda: resealed(lambda p: p.update(engineVersion="0.2")), "0.5", 4,
                          ("0.2 is outside the supported window of 0.5", "intermediate engine versions"), None),
    "other-major": (lambda: resealed(lambda p: p.update(engineVersion="1.0")), "2.0", 4, ("outside",), None),
    "unknown-node-version": (lambda: resealed(rename_calc), "0.1", 4,
                             ("exec node stream-exec-calc version 7 is unknown", "it has versions [1]",
                              "engine version that compiled the plan"), 2),
    "unknown-function-version": (lambda: resealed(set_upper_version), "0.1", 4,
                                 ("built-in function UPPER version 99 is not available",), 2),
    "plan-id-mismatch": (lambda: (lambda p: (hand_edit(p), p)[1])(good_plan()), "0.1", 4,
                         ("planId does not match", "instead of editing it"), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_check_verdicts(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    make, engine, code, fragments, node = CASES[case]
    path = tmp_path / "plan.json"
    path.write_text(dumps(make()))
    monkeypatch.setattr(R, "ENGINE_VERSION", engine)
    assert cli_main(["check", "--plan", str(path), "--json"]) == code
    report = json.loads(capsys.readouterr().out)
    assert report["exitCode"] == code
    assert report["status"] == {0: "compatible", 3: "needs-migration", 4: "incompatible"}[code]
    if not fragments:
        assert report["reasons"] == []
        return
    reasons = report["reasons"]
    assert len(reasons) == 1, reasons
    text = reasons[0]["message"] + " | " + reasons[0].get("hint", "")
    for fragment in fragments:
        assert fragment in text
    assert reasons[0].get("node") == node


@pytest.mark.usefixtures("engine_process")
def test_check_in_a_fresh_process(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(dumps(good_plan()))
    bad.write_text(dumps(resealed(rename_calc)))
    assert cli("check", "--plan", str(good), "--json").returncode == 0
    out = cli("check", "--plan", str(bad), "--json")
    assert out.returncode == 4 and json.loads(out.stdout)["reasons"][0]["node"] == 2


@pytest.mark.usefixtures("engine_process")
def test_malformed_json_is_a_user_error_with_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    text = dumps(good_plan())
    path.write_text(text.replace('"edges": [', '"edges": [,', 1))
    line = text[: text.index('"edges": [')].count("\n") + 1
    out = cli("check", "--plan", str(path), "--json")
    assert out.returncode == 2
    assert f"plan is not valid JSON: Expecting value at line {line}, column" in out.stderr
    assert "compile it again" in out.stderr


def test_restore_checks_log_every_node_at_info(caplog: pytest.LogCaptureFixture) -> None:
    plan = good_plan()
    with caplog.at_level(logging.INFO, logger="planengine.restore"):
        CompiledPlan.from_json(json.dumps(plan), env_with(DDL).plan_session()).restore()
    for node in plan["nodes"]:
        name, version = node["type"].rsplit("_", 1)
        assert f"restore check: node {node['id']} {name}-{version} registered" in caplog.text
    for nid in (1, plan["nodes"][-1]["id"]):
        assert f"node {nid}: table `default_catalog`" in caplog.text


def test_restore_refuses_an_incompatible_plan_with_the_reasons() -> None:
    from planengine.errors import PlanIncompatible

    with pytest.raises(PlanIncompatible, match="UPPER version 99"):
        CompiledPlan.from_json(json.dumps(resealed(set_upper_version)), env_with(DDL).plan_session()).restore()


def test_version_window_is_this_minor_and_two_before() -> None:
    assert V.SUPPORTED_MINOR_WINDOW == 2


# --- EXPLAIN PLAN ---------------------------------------------------------------------------------------------
def test_explain_plan(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    plan = good_plan()
    path.write_text(dumps(plan))
    [result] = env_with(DDL).execute_sql(f"EXPLAIN PLAN '{path}'")
    text = result.message
    assert text.startswith(f"== Compiled plan {plan['planId'][:12]} (engine 0.1) ==")
    assert "stream-exec-sink_2" in text and "stream-exec-table-source-scan_1" in text
    assert "== Restore check ==" in text and f"plan {plan['planId']}: compatible" in text
    path.write_text(dumps(resealed(rename_calc)))
    [broken] = env_with(DDL).execute_sql(f"EXPLAIN PLAN '{path}'")
    assert "incompatible" in broken.message and "node 2: exec node stream-exec-calc version 7" in broken.message


# --- files: compile once, never overwrite by accident ------------------------------------------------------------
def test_from_file_if_absent_compiles_once(tmp_path: Path) -> None:
    path = tmp_path / "plans" / "job.json"
    env = env_with(DDL)
    calls: list[int] = []

    def compile_it() -> CompiledPlan:
        calls.append(1)
        return env.compile_plan_sql(PROGRAM)

    first = CompiledPlan.from_file(path, if_absent=compile_it)
    assert calls == [1] and path.read_text() == first.as_json()
    written = path.read_bytes()
    second = CompiledPlan.from_file(path, if_absent=compile_it)
    assert calls == [1], "an existing plan file is reused, never recompiled"
    assert second.plan_id == first.plan_id and path.read_bytes() == written


def test_write_to_file_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text("keep me")
    plan = env_with(DDL).compile_plan_sql(PROGRAM)
    with pytest.raises(PlanError, match="already exists") as info:
        plan.write_to_file(path)
    assert "table.plan.force-recompile" in info.value.hint
    plan.write_to_file(path, ignore_if_exists=True)
    assert path.read_text() == "keep me"
    forced = env_with(DDL, **{"table.plan.force-recompile": "true"}).compile_plan_sql(PROGRAM)
    forced.write_to_file(path)
    assert path.read_text() == forced.as_json()


def test_compile_plan_if_not_exists_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    env = env_with(DDL)
    env.execute_sql(f"COMPILE PLAN '{path}' FOR {PROGRAM}")
    original = path.read_text()
    changed = PROGRAM.replace("score > 0", "score > 5")
    [kept] = env.execute_sql(f"COMPILE PLAN '{path}' IF NOT EXISTS FOR {changed}")
    assert "kept" in kept.message and path.read_text() == original
    with pytest.raises(PlanError, match="already exists"):
        env.execute_sql(f"COMPILE PLAN '{path}' FOR {changed}")
    env.execute_sql("SET 'table.plan.force-recompile' = 'true'")
    env.execute_sql(f"COMPILE PLAN '{path}' IF NOT EXISTS FOR {changed}")
    assert path.read_text() != original and '"value":5' in path.read_text()
