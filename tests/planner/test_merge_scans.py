"""``merge_scans`` beyond its fixture file: when separate scans are cheaper, and what the compiled plan reads."""

from __future__ import annotations

from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.connectors import discovery
from planengine.connectors.abilities import FilterResult, SupportsFilterPushDown
from planengine.connectors.base import ScanRuntimeProvider, ScanTableSource
from planengine.connectors.factories import DynamicTableSourceFactory
from planengine.ir.changelog import INSERT_ONLY, ChangelogMode
from planengine.ir.expressions import Call
from tests.planner.rules.fixture_runner import PRELUDE


class KeyedSource(ScanTableSource, SupportsFilterPushDown):
    """Reads one key at a time: accepts ``k = literal`` and nothing else (no disjunctions)."""

    def __init__(self) -> None:
        self.filters: list[Any] = []

    def changelog_mode(self) -> ChangelogMode:
        return INSERT_ONLY

    def scan_runtime_provider(self, ctx: Any) -> ScanRuntimeProvider:
        return ScanRuntimeProvider("keyed", self, is_bounded=True)

    def apply_filters(self, filters: list[Any]) -> FilterResult:
        accepted = [f for f in filters if isinstance(f, Call) and f.function.name == "="]
        self.filters = accepted
        return FilterResult(accepted, [f for f in filters if f not in accepted])

    def copy(self) -> KeyedSource:
        return KeyedSource()

    def as_summary_string(self) -> str:
        return "keyed"


class KeyedFactory(DynamicTableSourceFactory):
    factory_identifier = "keyed"

    def required_options(self) -> tuple[()]:
        return ()

    def optional_options(self) -> tuple[()]:
        return ()

    def create_dynamic_table_source(self, ctx: Any) -> KeyedSource:
        return KeyedSource()


@pytest.fixture
def keyed() -> Any:
    discovery.register_factory(KeyedFactory())
    yield
    discovery.unregister_factory("keyed")


def _scans(env: TableEnvironment, sql: str) -> list[dict[str, Any]]:
    plan = env.compile_plan_sql(sql)
    return [n for n in plan.data["nodes"] if n["type"].startswith("stream-exec-table-source-scan")]


def test_scans_that_each_read_one_key_stay_separate_when_the_source_cannot_read_both(keyed: Any) -> None:
    env = TableEnvironment()
    env.execute_sql("CREATE TABLE kv (k STRING, v BIGINT) WITH ('connector' = 'keyed');"
                    "CREATE TABLE out1 (k STRING, v BIGINT) WITH ('connector' = 'blackhole');"
                    "CREATE TABLE out2 (k STRING, v BIGINT) WITH ('connector' = 'blackhole')")
    scans = _scans(env, "EXECUTE STATEMENT SET BEGIN "
                        "INSERT INTO out1 SELECT k, v FROM kv WHERE k = 'a'; "
                        "INSERT INTO out2 SELECT k, v FROM kv WHERE k = 'b'; END;")
    assert len(scans) == 2  # one unpruned scan would read every key; two keyed reads are cheaper


def test_a_statement_set_over_one_table_compiles_to_one_scan_of_the_columns_it_uses() -> None:
    env = TableEnvironment()
    env.execute_sql(PRELUDE.read_text())
    scans = _scans(env, "EXECUTE STATEMENT SET BEGIN "
                        "INSERT INTO append_out SELECT page, user_id FROM plain_clicks WHERE dt = 'x'; "
                        "INSERT INTO printed SELECT page, user_id FROM plain_clicks WHERE dt = 'y'; END;")
    assert len(scans) == 1
    (scan,) = scans
    specs = {s["type"]: s for s in scan["abilities"]}
    assert [s["type"] for s in scan["abilities"]] == ["FilterPushDown", "ProjectPushDown"]
    (pruning,) = specs["FilterPushDown"]["predicates"]
    assert pruning["function"]["name"] == "OR"
    assert sorted(o["operands"][1]["value"] for o in pruning["operands"]) == ["x", "y"]
    # user_id and page for both, dt because each INSERT's own partition filter is re-applied above the scan
    assert specs["ProjectPushDown"]["projectedFields"] == [[0], [1], [3]]


def test_scans_that_pushed_different_filters_are_never_shared_as_equal() -> None:
    """Regression: a scan's digest named only the spec types, so two partition filters looked alike and the
    second INSERT read the first one's partition."""
    from planengine.planner import programs as P
    from planengine.planner.rules.context import RuleContext
    from tests.planner.rules.fixture_runner import setup_programs

    env = TableEnvironment()
    env.execute_sql(PRELUDE.read_text())
    from planengine.commands.compile import split_program

    inserts = split_program(env, "EXECUTE STATEMENT SET BEGIN "
                                 "INSERT INTO append_out SELECT page, user_id FROM plain_clicks WHERE dt = 'x'; "
                                 "INSERT INTO printed SELECT page, user_id FROM plain_clicks WHERE dt = 'y'; END;",
                            "t.sql")
    roots = [env._planner().to_logical_sink(i) for i in inserts]
    pushed = P.optimize(roots, RuleContext(env.registry, env.config), programs=setup_programs("merge_scans"))
    digests = {s.digest for s in P.scans(pushed)}
    assert len(digests) == 2
