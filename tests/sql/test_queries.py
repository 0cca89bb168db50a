"""Query constructs the planner consumes: window TVFs, hints, temporal joins, UNNEST, OVER, group windows."""

from __future__ import annotations

import pytest
from sqlglot import exp

from planengine.sql import QueryHint, parse_query, query_hints, system_time_as_of, table_options_hint
from planengine.sql.ast import WindowTableFunction


def tvf(sql: str) -> WindowTableFunction:
    node = parse_query(sql).find(WindowTableFunction)
    assert node is not None
    return node


def interval(node: exp.Expression | None) -> str | None:
    return node.sql("flink") if node is not None else None


# kind, SQL, expected (size, slide, step, gap, offset)
TVF_CASES = [
    (
        "TUMBLE",
        "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)",
        ("INTERVAL '1' MINUTE", None, None, None, None),
    ),
    (
        "TUMBLE",
        "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '10' SECOND)",
        ("INTERVAL '1' MINUTE", None, None, None, "INTERVAL '10' SECOND"),
    ),
    (
        "TUMBLE",
        "TUMBLE(SIZE => INTERVAL '1' MINUTE, TIMECOL => DESCRIPTOR(ts), DATA => TABLE t)",
        ("INTERVAL '1' MINUTE", None, None, None, None),
    ),
    (
        "HOP",
        "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '10' MINUTE)",
        ("INTERVAL '10' MINUTE", "INTERVAL '5' MINUTE", None, None, None),
    ),
    (
        "HOP",
        "HOP(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '5' MINUTE, "
        "SIZE => INTERVAL '10' MINUTE, OFFSET => INTERVAL '1' MINUTE)",
        ("INTERVAL '10' MINUTE", "INTERVAL '5' MINUTE", None, None, "INTERVAL '1' MINUTE"),
    ),
    (
        "CUMULATE",
        "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' MINUTE, INTERVAL '10' MINUTE)",
        ("INTERVAL '10' MINUTE", None, "INTERVAL '2' MINUTE", None, None),
    ),
    (
        "CUMULATE",
        "CUMULATE(STEP => INTERVAL '2' MINUTE, SIZE => INTERVAL '10' MINUTE, "
        "DATA => TABLE t, TIMECOL => DESCRIPTOR(ts))",
        ("INTERVAL '10' MINUTE", None, "INTERVAL '2' MINUTE", None, None),
    ),
    (
        "SESSION",
        "SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '5' MINUTE)",
        (None, None, None, "INTERVAL '5' MINUTE", None),
    ),
    (
        "SESSION",
        "SESSION(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), GAP => INTERVAL '5' MINUTE)",
        (None, None, None, "INTERVAL '5' MINUTE", None),
    ),
]


@pytest.mark.parametrize(("kind", "call", "expected"), TVF_CASES)
def test_window_tvf_positional_and_named(kind, call, expected):
    node = tvf(f"SELECT window_start, COUNT(*) FROM TABLE({call}) GROUP BY window_start, window_end")
    assert node.kind == kind
    assert node.this.name == "t" and node.args["time_col"].name == "ts"
    got = tuple(interval(node.args.get(k)) for k in ("size", "slide", "step", "gap", "offset"))
    assert got == expected


@pytest.mark.parametrize(
    ("partition", "columns"),
    [("PARTITION BY a", ["a"]), ("PARTITION BY a, b", ["a", "b"]), ("PARTITION BY (a, b)", ["a", "b"])],
)
def test_session_partition_by(partition, columns):
    node = tvf(f"SELECT * FROM TABLE(SESSION(TABLE t {partition}, DESCRIPTOR(ts), INTERVAL '5' MINUTE))")
    assert [c.name for c in node.args["partition_by"]] == columns
    assert node.args["gap"].sql("flink") == "INTERVAL '5' MINUTE"


def test_window_tvf_alias_join_and_view_input():
    query = parse_query(
        "SELECT * FROM TABLE(TUMBLE(TABLE db.v, DESCRIPTOR(ts), INTERVAL '1' HOUR)) AS w "
        "JOIN TABLE(TUMBLE(TABLE u, DESCRIPTOR(ts), INTERVAL '1' HOUR)) w2 ON w.window_start = w2.window_start"
    )
    left = query.args["from_"].this
    right = query.args["joins"][0].this
    assert isinstance(left, WindowTableFunction) and left.alias == "w"
    assert [p.name for p in left.this.parts] == ["db", "v"]
    assert isinstance(right, WindowTableFunction) and right.alias == "w2"


def test_system_time_as_of():
    query = parse_query(
        "SELECT * FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.cid = c.id"
    )
    customers = query.args["joins"][0].this
    assert customers.alias == "c"
    assert system_time_as_of(customers).sql("flink") == "o.proc_time"
    assert system_time_as_of(query.args["from_"].this) is None


def test_table_options_hint_and_lookup_hint():
    query = parse_query(
        "SELECT /*+ LOOKUP('table'='c', 'retry-predicate'='lookup_miss', 'max-attempts'='3') */ * "
        "FROM orders /*+ OPTIONS('scan.startup.mode'='earliest-offset', 'a'='b') */ AS o "
        "LEFT JOIN customers /*+ OPTIONS('lookup.cache'='PARTIAL') */ FOR SYSTEM_TIME AS OF o.pt AS c "
        "ON o.cid = c.id"
    )
    orders = query.args["from_"].this
    customers = query.args["joins"][0].this
    assert table_options_hint(orders) == {"scan.startup.mode": "earliest-offset", "a": "b"}
    assert table_options_hint(customers) == {"lookup.cache": "PARTIAL"}
    assert system_time_as_of(customers).sql("flink") == "o.pt"
    assert query_hints(query) == [
        QueryHint("LOOKUP", {"table": "c", "retry-predicate": "lookup_miss", "max-attempts": "3"}, [])
    ]


def test_query_hints_state_ttl_and_list_hints():
    query = parse_query(
        "SELECT /*+ STATE_TTL('t' = '1d', 'u' = '12h'), BROADCAST(t, u) */ * FROM t JOIN u ON t.a = u.a"
    )
    assert query_hints(query) == [
        QueryHint("STATE_TTL", {"t": "1d", "u": "12h"}, []),
        QueryHint("BROADCAST", {}, ["t", "u"]),
    ]
    assert query_hints(parse_query("SELECT 1")) == []
    assert table_options_hint(parse_query("SELECT * FROM t").find(exp.Table)) == {}


@pytest.mark.parametrize(
    ("sql", "alias", "columns", "kind"),
    [
        ("SELECT * FROM o CROSS JOIN UNNEST(o.tags) AS t (tag)", "t", ["tag"], "CROSS"),
        ("SELECT * FROM o CROSS JOIN UNNEST(o.items) AS t (a, b)", "t", ["a", "b"], "CROSS"),
        ("SELECT * FROM o LEFT JOIN UNNEST(o.items) AS t (a) ON TRUE", "t", ["a"], ""),
    ],
)
def test_unnest(sql, alias, columns, kind):
    join = parse_query(sql).args["joins"][0]
    assert isinstance(join.this, exp.Unnest)
    assert join.this.alias == alias
    assert [c.name for c in join.this.args["alias"].columns] == columns
    assert join.args.get("kind", "") == kind or join.args.get("side", "") == "LEFT"


def test_top_n_and_dedup_shapes():
    query = parse_query(
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC) AS rn FROM t) WHERE rn <= 3"
    )
    window = query.find(exp.Window)
    assert isinstance(window.this, exp.RowNumber)
    assert [c.name for c in window.args["partition_by"]] == ["a"]
    assert window.args["order"].expressions[0].args["desc"] is True
    assert query.args["where"].this.sql("flink") == "rn <= 3"
    dedup = parse_query(
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt) AS rn FROM t) WHERE rn = 1"
    )
    assert dedup.args["where"].this.sql("flink") == "rn = 1"


@pytest.mark.parametrize(
    ("frame", "kind", "start", "start_side"),
    [
        ("RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW", "RANGE", "INTERVAL '1' HOUR", "PRECEDING"),
        ("ROWS BETWEEN 2 PRECEDING AND CURRENT ROW", "ROWS", "2", "PRECEDING"),
    ],
)
def test_over_window_frames(frame, kind, start, start_side):
    query = parse_query(f"SELECT SUM(x) OVER (PARTITION BY a ORDER BY pt {frame}) FROM t")
    spec = query.find(exp.WindowSpec)
    assert spec.args["kind"] == kind
    bound = spec.args["start"]
    assert (bound.sql("flink") if isinstance(bound, exp.Expression) else bound) == start
    assert spec.args["start_side"] == start_side
    assert spec.args["end"] == "CURRENT ROW"


def test_named_window_clause():
    query = parse_query(
        "SELECT SUM(x) OVER w, MAX(x) OVER w FROM t "
        "WINDOW w AS (PARTITION BY a ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)"
    )
    (named,) = query.args["windows"]
    assert named.name == "w"
    assert [c.name for c in named.args["partition_by"]] == ["a"]
    assert all(w.alias == "w" for w in query.expressions)


@pytest.mark.parametrize(
    ("group_by", "function", "arity"),
    [
        ("TUMBLE(ts, INTERVAL '5' SECOND)", "TUMBLE", 2),
        ("HOP(ts, INTERVAL '1' SECOND, INTERVAL '5' SECOND)", "HOP", 3),
        ("SESSION(ts, INTERVAL '1' MINUTE)", "SESSION", 2),
    ],
)
def test_legacy_group_windows_are_anonymous_functions(group_by, function, arity):
    prefix = function
    args = group_by[len(function) :]
    query = parse_query(
        f"SELECT {prefix}_START{args}, {prefix}_END{args}, {prefix}_ROWTIME{args}, {prefix}_PROCTIME{args}, "
        f"COUNT(*) FROM t GROUP BY {group_by}, k"
    )
    window = query.args["group"].expressions[0]
    assert isinstance(window, exp.Anonymous) and window.name == function and len(window.expressions) == arity
    names = [e.name for e in query.expressions[:4]]
    assert names == [f"{function}_START", f"{function}_END", f"{function}_ROWTIME", f"{function}_PROCTIME"]


@pytest.mark.parametrize(
    ("sql", "node"),
    [
        ("SELECT TIMESTAMPADD(MINUTE, 1, ts)", exp.TimestampAdd),
        ("SELECT TIMESTAMPDIFF(SECOND, a, b)", exp.TimestampDiff),
        ("SELECT IF(a > 1, 'x', 'y')", exp.If),
        ("SELECT a IS NOT DISTINCT FROM b", exp.NullSafeEQ),
        ("SELECT a IS DISTINCT FROM b", exp.NullSafeNEQ),
        ("SELECT SUBSTRING(s FROM 2 FOR 3)", exp.Substring),
        ("SELECT EXTRACT(MINUTE FROM ts)", exp.Extract),
        ("SELECT a SIMILAR TO 'x%'", exp.SimilarTo),
        ("SELECT TRY_CAST(a AS INT)", exp.TryCast),
        ("SELECT a || b", exp.DPipe),
        ("SELECT EXISTS (SELECT 1 FROM t)", exp.Exists),
    ],
)
def test_builtin_shapes(sql, node):
    assert isinstance(parse_query(sql).expressions[0], node)


def test_timestamp_functions_keep_unit_and_argument_order():
    add, diff = parse_query("SELECT TIMESTAMPADD(minute, 1, ts), TIMESTAMPDIFF(SECOND, a, b)").expressions
    assert (add.args["unit"].name, add.expression.sql(), add.this.sql()) == ("MINUTE", "1", "ts")
    assert (diff.args["unit"].name, diff.expression.sql(), diff.this.sql()) == ("SECOND", "a", "b")


def test_identifiers_keep_case_keywords_do_not():
    query = parse_query("select `MyCol`, Other from `T` where x = 1")
    assert [c.name for c in query.expressions] == ["MyCol", "Other"]
    assert query.sql("flink") == "SELECT `MyCol`, Other FROM `T` WHERE x = 1"
