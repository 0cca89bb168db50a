"""Operators over processing time are refused when the plan is compiled, each with what to write instead.

Flink fires processing-time windows, OVER frames, sorts and joins on the wall clock. On Spark a
processing-time timer keeps a streaming query busy forever (``runtime/operators/window_state.py``), so such a job
could never go idle, be stopped at a batch boundary with a snapshot, or be upgraded; the runtime's translators
refuse them. Refusing them here instead means ``compile``, ``explain`` and ``check`` say so before anything
runs, with the operator and the fix, rather than a job failing at start. ``PROCTIME()`` columns themselves stay
legal (a lookup join ``FOR SYSTEM_TIME AS OF`` a processing-time attribute needs one, and selecting one is fine).
"""

from __future__ import annotations

from collections.abc import Callable

from planengine.errors import UnsupportedQueryError
from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, topological

_WATERMARK = "declare a WATERMARK on a rowtime column and use it instead of the PROCTIME() column"


def _first_key_is_proctime(node: ExecNode) -> bool:
    keys = getattr(node, "order_keys", ())
    return bool(keys) and node.inputs[0].field_types[keys[0].field].is_proctime


# Node class -> (does it run on processing time?, what it is, what to write instead)
_REFUSALS: tuple[tuple[type[ExecNode], Callable[[ExecNode], bool], str, str], ...] = (
    (X.WindowTableFunction, lambda n: not n.window.is_rowtime, "a window table function over processing time",
     f"{_WATERMARK} as the window's DESCRIPTOR"),
    (X.WindowAggregate, lambda n: not n.window.is_rowtime, "a window aggregate over processing time",
     f"{_WATERMARK} as the window's DESCRIPTOR"),
    (X.GroupWindowAggregate, lambda n: not n.group_window.spec.is_rowtime,
     "a group window (GROUP BY TUMBLE/HOP/SESSION) over processing time", f"{_WATERMARK} as the window's time"),
    (X.OverAggregate, _first_key_is_proctime, "an OVER window ordered by processing time",
     f"{_WATERMARK} in ORDER BY"),
    (X.TemporalSort, _first_key_is_proctime, "an ORDER BY on processing time", f"{_WATERMARK} in ORDER BY"),
    (X.IntervalJoin, lambda n: not n.is_event_time, "an interval join on processing time",
     f"{_WATERMARK} on both sides and bound the join on those columns"),
    (X.TemporalJoin, lambda n: not n.is_event_time, "a temporal join on processing time",
     "join FOR SYSTEM_TIME AS OF the left side's rowtime with a versioned table (a PRIMARY KEY and a WATERMARK), "
     "or use a lookup source (JDBC) for a processing-time lookup join"),
)


def refuse_processing_time(roots: list[ExecNode]) -> list[ExecNode]:
    """``roots`` unchanged, or an ``UnsupportedQueryError`` naming the first operator that needs a wall clock."""
    for node in topological(roots):
        for cls, on_processing_time, what, instead in _REFUSALS:
            if isinstance(node, cls) and on_processing_time(node):
                raise UnsupportedQueryError(
                    f"{what} is not supported by planengine ({node.description or node.type_name}): Spark's "
                    "processing-time timers never let a query go idle, so the job could not be stopped with a "
                    "snapshot or upgraded", hint=instead)
    return roots
