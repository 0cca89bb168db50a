"""Python counterparts of the Java UDFs the conformance programs call (their ``semantics`` line, and Flink's
test sources where the line points at the expected output). Registered by the harness as
``CREATE [TEMPORARY [SYSTEM]] FUNCTION <name> AS 'tests.conformance.udfs.<name>' LANGUAGE PYTHON``.

Aggregate functions follow ``planengine.functions.python_udf``'s accumulator protocol; their accumulators
are mutable lists that ``accumulate``/``retract`` also return, so either calling convention works.
"""

from __future__ import annotations

import datetime as dt

from planengine.functions.python_udf import udf, udtf


# --- scalar (calc-udf-complex) -----------------------------------------------------------------------------
@udf(result_type="BIGINT")
def udf1(x):
    """JavaFunc0: x + 1."""
    return None if x is None else x + 1


def _epoch_millis(ts: dt.datetime) -> int:
    if ts.tzinfo is not None:
        ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
    return (ts - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)


@udf(result_type="STRING")
def udf2(a, b, ts):
    """JavaFunc1: a || ' and ' || b || ' and ' || epoch_millis(ts)."""
    if ts is None:
        return None
    return f"{a} and {b} and {_epoch_millis(ts)}"


@udf(result_type="STRING")
def udf3(s, *ints):
    """JavaFunc2: s followed by every int (varargs)."""
    if s is None:
        return None
    return s + "".join(str(i) for i in ints)


@udf(result_type="STRING")
def udf4(s):
    """UdfWithOpen: '$' || s (Flink's version fails unless open() ran; ours is always open)."""
    return None if s is None else "$" + s


@udf(result_type="TIMESTAMP(3)")
def udf5(ts, ms):
    """JavaFunc5: ts shifted back by ms milliseconds."""
    if ts is None or ms is None:
        return None
    return ts - dt.timedelta(milliseconds=ms)


# --- table (correlate-*) -----------------------------------------------------------------------------------
@udtf(result_type="STRING")
def func1(s, prefix=None):
    """TableFunc1: one row per '#'-separated part of s (nothing without '#'); with a prefix, prefix || part."""
    if s is None or "#" not in s:
        return
    for part in s.split("#"):
        yield part if prefix is None else prefix + part


# --- aggregates --------------------------------------------------------------------------------------------
class my_sum1:
    """VarSum1AggFunction: SUM over rows of the sum of every non-null argument."""

    result_type = "BIGINT"

    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, *args):
        acc[0] += sum(int(x) for x in args if x is not None)
        return acc

    def retract(self, acc, *args):
        acc[0] -= sum(int(x) for x in args if x is not None)
        return acc

    def get_value(self, acc):
        return acc[0]


class my_sum2:
    """VarSum2AggFunction: its accumulator is an immutable java.lang.Long, so it always yields 0."""

    result_type = "BIGINT"

    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, *args):
        return acc

    def retract(self, acc, *args):
        return acc

    def get_value(self, acc):
        return acc[0]


class my_avg:
    """WeightedAvg: SUM(value * weight) / SUM(weight) in long arithmetic (null when the weights sum to 0)."""

    result_type = "BIGINT"

    def create_accumulator(self):
        return [0, 0]

    def accumulate(self, acc, value, weight):
        if value is not None and weight is not None:
            acc[0] += int(value) * int(weight)
            acc[1] += int(weight)
        return acc

    def retract(self, acc, value, weight):
        if value is not None and weight is not None:
            acc[0] -= int(value) * int(weight)
            acc[1] -= int(weight)
        return acc

    def get_value(self, acc):
        if acc[1] == 0:
            return None
        q = abs(acc[0]) // abs(acc[1])  # Java's long division truncates toward zero
        return q if (acc[0] >= 0) == (acc[1] > 0) else -q


class LTCNT:
    """LargerThanCount: the number of rows whose a > threshold (supports retraction)."""

    result_type = "BIGINT"

    def create_accumulator(self):
        return [0]

    def accumulate(self, acc, a, threshold):
        if a is not None and threshold is not None and a > threshold:
            acc[0] += 1
        return acc

    def retract(self, acc, a, threshold):
        if a is not None and threshold is not None and a > threshold:
            acc[0] -= 1
        return acc

    def get_value(self, acc):
        return acc[0]
