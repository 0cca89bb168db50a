"""Plan migration (DESIGN §3): a node version changes, old plans keep restoring or are migrated, never re-planned.

The node under test is ``stream-exec-test-tag`` (``tests/plan/_migration_nodes.py``), put into a real
compiled plan in place of its Calc; each test registers exactly the versions and migrations it needs.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.cli import main as cli_main
from planengine.errors import PlanIncompatible, PlanMigrationRequired
from planengine.exec import base as B
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.migrate import migrate_plan
from planengine.plan.node_migrations import migration
from planengine.plan.serde import compute_plan_id, dumps
from tests.plan import _migration_nodes as T
from tests.plan._support import REPO, cli


@pytest.fixture(autouse=True)
def _clean_registry():
    before = B.registered()
    yield
    T.uninstall()
    assert B.registered() == before, "the test node must not leak into other tests"


def write(tmp_path: Path, plan: dict, name: str = "old.json") -> Path:
    path = tmp_path / name
    path.write_text(dumps(plan))
    return path


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    """``planengine check --plan P --json`` in this process (so it sees the test registry)."""
    code = cli_main(["check", "--plan", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def tag_node(sinks: list) -> T.TagNode:
    return next(n for n in B.topological(sinks) if isinstance(n, T.TagNode))


# (i) a new version with a new field and default; the old version stays registered --------------------------
def test_version_1_plan_restores_with_version_1_semantics_while_both_are_registered() -> None:
    T.install(versions=(1, 2))
    node = tag_node(CompiledPlan(T.plan_with_tag_node(1)).restore())
    assert node.type_name == f"{T.NAME}_1" and node.version == 1
    assert node.tag_case == "UPPER"  # the new field's default was filled in ...
    assert node.apply("x") == "web:x"  # ... but a version-1 node keeps version-1 semantics
    fresh = tag_node(CompiledPlan(T.plan_with_tag_node(2)).restore())
    assert fresh.type_name == f"{T.NAME}_2" and fresh.apply("x") == "WEB:x"


def test_compiling_writes_the_newest_version() -> None:
    T.install(versions=(1, 2))
    assert B.newest_metadata(T.TagNode).version == 2
    node = T.TagNode(inputs=(), output_type=tag_node(CompiledPlan(T.plan_with_tag_node(2)).restore()).output_type,
                     tag="web")
    assert node.type_name == f"{T.NAME}_2"
    assert node.specific_json() == {"tag": "web", "tagCase": "UPPER"}


# (ii) a dropped version demands migration ---------------------------------------------------------------------
def test_dropped_version_needs_migration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    T.install(versions=(2,), dropped=(1,), with_migration=True)
    path = write(tmp_path, T.plan_with_tag_node(1))
    code, report = check(path, capsys)
    assert code == 3 and report["status"] == "needs-migration" and report["exitCode"] == 3
    [reason] = report["reasons"]
    assert reason["node"] == 2
    assert f"{T.NAME} version 1 is no longer restorable" in reason["message"]
    assert "COMPILE PLAN 'new' FROM 'old'" in reason["hint"]
    with pytest.raises(PlanMigrationRequired, match=re.escape("COMPILE PLAN 'new.json' FROM 'old.json'")):
        CompiledPlan.from_file(path).restore()


def test_migrate_plan_rewrites_the_node_and_keeps_everything_else(caplog: pytest.LogCaptureFixture,
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    T.install(versions=(2,), dropped=(1,), with_migration=True)
    old = T.plan_with_tag_node(1)
    with caplog.at_level(logging.INFO, logger="planengine.migrate"):
        new, decisions = migrate_plan(old)
    assert new["nodes"][1]["type"] == f"{T.NAME}_2"
    assert new["nodes"][1]["tagCase"] == "AS_IS"
    for before, after in zip(old["nodes"], new["nodes"], strict=True):
        assert after["id"] == before["id"]
        assert after.get("uids") == before.get("uids")
        assert after.get("state") == before.get("state")
        if after["id"] != 2:
            assert after == before
    assert new["edges"] == old["edges"]
    assert new["planId"] == compute_plan_id(new) != old["planId"]
    assert list(new) == list(old), "envelope key order is part of the format"
    assert f"node 2: migrated {T.NAME} version 1 -> 2 (uids and state kept)" in decisions
    assert "node 1: stream-exec-table-source-scan version 1 kept (registered)" in decisions
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert all(d in logged for d in decisions), (decisions, logged)
    migrated = write(tmp_path, new, "new.json")
    assert check(migrated, capsys)[0] == 0
    node = tag_node(CompiledPlan.from_file(migrated).restore())
    assert node.version == 2 and node.apply("x") == "web:x", "the migration keeps version-1 behaviour"


def test_a_migration_that_changes_uids_is_refused() -> None:
    T.install(versions=(2,), dropped=(1,))

    @migration(T.NAME, 1, 2)
    def bad(node: dict) -> dict:
        node["uids"] = [f"2_{T.NAME}-2_tagger"]
        return node

    with pytest.raises(Exception, match="changed the node's id, uids, state names or output"):
        migrate_plan(T.plan_with_tag_node(1))


# (iii) no migration registered ----------------------------------------------------------------------------------
def test_dropped_version_without_migration_is_incompatible(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    T.install(versions=(2,), dropped=(1,), with_migration=False)
    path = write(tmp_path, T.plan_with_tag_node(1))
    code, report = check(path, capsys)
    assert code == 4 and report["status"] == "incompatible"
    [reason] = report["reasons"]
    assert reason["node"] == 2 and "has no migration" in reason["message"]
    assert "intermediate engine version" in reason["hint"]
    with pytest.raises(PlanIncompatible, match=f"node 2: exec node {T.NAME} version 1 .* no migration"):
        migrate_plan(T.plan_with_tag_node(1))


@pytest.mark.parametrize(("edit", "fragment"), [
    ({"engineVersion": "9.0"}, "newer engine"),
    ({"engineVersion": "0.0", "formatVersion": 7}, "format version 7"),
])
def test_unreadable_plans_are_not_migrated(edit: dict, fragment: str) -> None:
    """Migrating must not re-stamp a plan this engine cannot read (it would bypass the restore checks)."""
    plan = {**T.plan_with_tag_node(1), **edit}
    T.install(versions=(1, 2))
    plan["planId"] = compute_plan_id(plan)
    with pytest.raises(PlanIncompatible, match=fragment):
        migrate_plan(plan)


def test_hand_edited_plans_are_not_migrated() -> None:
    T.install(versions=(1, 2))
    plan = T.plan_with_tag_node(1)
    plan["nodes"][1]["tag"] = "edited"
    with pytest.raises(PlanIncompatible, match="planId does not match"):
        migrate_plan(plan)


# (iv) the SQL statement and the CLI -------------------------------------------------------------------------------
def test_compile_plan_from_statement(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    T.install(versions=(2,), dropped=(1,), with_migration=True)
    old = write(tmp_path, T.plan_with_tag_node(1))
    new = tmp_path / "new.json"
    env = TableEnvironment()
    with caplog.at_level(logging.INFO, logger="planengine.migrate"):
        [result] = env.execute_sql(f"COMPILE PLAN '{new}' FROM '{old}'")
    assert f"node 2: migrated {T.NAME} version 1 -> 2" in result.message
    assert f"node 2: migrated {T.NAME} version 1 -> 2" in caplog.text
    assert json.loads(new.read_text()) == migrate_plan(T.plan_with_tag_node(1))[0]
    assert CompiledPlan.from_file(new).check().exit_code == 0


SITECUSTOMIZE = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from tests.plan import _migration_nodes
_migration_nodes.install(versions=(2,), dropped=(1,), with_migration={{with_migration}})
"""


def run_engine(tmp_path: Path, *args: str, with_migration: bool = True):
    """The CLI in a fresh interpreter whose engine knows the test node (version 2 only), as a newer engine would."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(with_migration=with_migration))
    env = dict(os.environ, PYTHONPATH=str(site))
    return cli(*args, env=env)


@pytest.mark.usefixtures("engine_process")
def test_cli_migrate(tmp_path: Path) -> None:
    old = write(tmp_path, T.plan_with_tag_node(1))
    new = tmp_path / "new.json"
    before = run_engine(tmp_path, "check", "--plan", str(old), "--json")
    assert before.returncode == 3, before.stderr
    done = run_engine(tmp_path, "migrate", "--plan", str(old), "-o", str(new))
    assert done.returncode == 0, done.stderr
    assert f"node 2: migrated {T.NAME} version 1 -> 2" in done.stderr
    T.install(versions=(2,), dropped=(1,), with_migration=True)
    assert new.read_text() == dumps(migrate_plan(T.plan_with_tag_node(1))[0])
    after = run_engine(tmp_path, "check", "--plan", str(new), "--json")
    assert after.returncode == 0 and json.loads(after.stdout)["status"] == "compatible"
    again = run_engine(tmp_path, "migrate", "--plan", str(old), "-o", str(new))
    assert again.returncode == 2 and "already exists" in again.stderr


@pytest.mark.usefixtures("engine_process")
def test_cli_migrate_without_migration_exits_4(tmp_path: Path) -> None:
    old = write(tmp_path, T.plan_with_tag_node(1))
    done = run_engine(tmp_path, "migrate", "--plan", str(old), "-o", str(tmp_path / "new.json"),
                      with_migration=False)
    assert done.returncode == 4
    assert "no migration" in done.stderr and not (tmp_path / "new.json").exists()


def test_migrated_node_keeps_its_operator_uid_at_run_time() -> None:
    """State is addressed by uid: the runtime must use the plan's recorded uid, not one derived from the new
    version (``2_stream-exec-test-tag-2_tagger`` would start from empty state)."""
    from planengine.runtime.engine.context import TranslationContext

    T.install(versions=(2,), dropped=(1,), with_migration=True)
    old = T.plan_with_tag_node(1)
    new, _ = migrate_plan(old)
    sinks = CompiledPlan(new).restore()
    node = tag_node(sinks)
    ctx = TranslationContext(spark=None, config={}, node_ids={id(node): 2})
    assert ctx.uid(node, "tagger") == old["nodes"][1]["uids"][0] == f"2_{T.NAME}-1_tagger"
