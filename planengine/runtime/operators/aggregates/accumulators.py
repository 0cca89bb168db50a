"""Flink's built-in aggregate functions as Python accumulators.

An accumulator is a JSON-serialisable value (it is kept in operator state as text). Every aggregator
ignores NULL arguments (``COUNT(*)`` counts rows). Functions that cannot retract from a summary (MIN, MAX)
keep, under retraction, the multiset of their inputs in a ``ValueBag`` that the operator backs with a
MapState, and cache the current extreme in the accumulator so only retracting the extreme scans the bag.
``DISTINCT`` wraps any aggregator: the bag counts each distinct value and the inner aggregator sees a value
only when its count goes 0 → 1 (accumulate) or 1 → 0 (retract).

>>> from planengine.ir import types as T
>>> from planengine.ir.aggregates import AggregateCall
>>> avg = make_aggregator(AggregateCall("AVG", 1, (0,), T.INT, "a"), [T.INT], retraction=True).aggregator
>>> acc = avg.create()
>>> for v in (1, 2, 4):
...     acc = avg.accumulate(acc, v, None)
>>> avg.result(acc)
2
>>> avg.result(avg.retract(acc, 1, None))
3
"""

from __future__ import annotations

import base64
import decimal
import math
import pickle
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from planengine.errors import ValidationError
from planengine.functions import python_udf
from planengine.ir.types import DataType, Kind
from planengine.runtime.operators.state_codec import FLOATING, INTEGRAL, coerce, dump_state, load_state


class ValueBag(Protocol):
    """A multiset of one aggregate's values (backed by the operator's ``distinctValues`` MapState)."""

    def add(self, value: Any, delta: int) -> int:
        """Change the count of ``value`` by ``delta``; return the new count (0 removes it)."""

    def items(self) -> Iterator[tuple[Any, int]]:
        """Every ``(value, count)`` with count > 0."""


class Aggregator:
    """One aggregate call: ``create`` → ``accumulate``/``retract`` → ``result``."""

    uses_bag = False

    def __init__(self, result_type: DataType, arg_type: DataType | None):
        self.result_type = result_type
        self.arg_type = arg_type

    def create(self) -> Any:
        return None

    def accumulate(self, acc: Any, value: Any, bag: ValueBag | None) -> Any:
        raise NotImplementedError

    def retract(self, acc: Any, value: Any, bag: ValueBag | None) -> Any:
        raise ValidationError(f"{type(self).__name__} cannot retract")

    def value(self, acc: Any) -> Any:
        raise NotImplementedError

    def result(self, acc: Any) -> Any:
        return coerce(self.value(acc), self.result_type)


_BITS = {Kind.TINYINT: 8, Kind.SMALLINT: 16, Kind.INT: 32, Kind.BIGINT: 64}


def in_type(value: Any, t: DataType | None) -> Any:
    """``value`` as Flink's arithmetic in type ``t`` leaves it: integers wrap at their width like Java's,
    FLOAT rounds to single precision, DECIMAL(p, s) rounds HALF_UP to s and is NULL when it needs more than
    p digits (Flink's ``DecimalData`` overflow)."""
    if value is None or t is None:
        return value
    bits = _BITS.get(t.kind)
    if bits is not None:
        half, full = 1 << (bits - 1), 1 << bits
        return (int(value) + half) % full - half
    if t.kind is Kind.FLOAT:
        return struct.unpack("f", struct.pack("f", float(value)))[0]
    if t.kind is Kind.DOUBLE:
        return float(value)
    if t.kind is Kind.DECIMAL:
        scale, precision = t.scale or 0, t.precision or 38
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        q = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
        return None if q.adjusted() + 1 > precision - scale else q
    return value


def _add(a: Any, b: Any, t: DataType | None = None) -> Any:
    """Flink's ``IF(ISNULL(sum), x, sum + x)`` in type ``t``: a DECIMAL sum that overflowed to NULL restarts."""
    return in_type(b, t) if a is None else in_type(a + b, t)


class Count(Aggregator):
    def create(self) -> int:
        return 0

    def accumulate(self, acc, value, bag):
        return acc + 1

    def retract(self, acc, value, bag):
        return acc - 1

    def value(self, acc):
        return acc


class Sum(Aggregator):
    """``[sum, count of non-null values]`` in the result type (Flink's ``SumWithRetractAggFunction``): integers
    wrap, FLOAT adds in single precision, a DECIMAL overflow makes the sum NULL; NULL when no value is left
    (``SUM0``: 0)."""

    zero_when_empty = False

    def create(self):
        return [None, 0]

    def accumulate(self, acc, value, bag):
        return [_add(acc[0], value, self.result_type), acc[1] + 1]

    def retract(self, acc, value, bag):
        s = acc[0] if acc[0] is not None else _zero(self.result_type)
        return [in_type(s - value, self.result_type), acc[1] - 1]

    def value(self, acc):
        if acc[1] <= 0:
            return _zero(self.result_type) if self.zero_when_empty else None
        return acc[0]


class Sum0(Sum):
    zero_when_empty = True


def _zero(t: DataType | None) -> Any:
    if t is not None and t.kind is Kind.DECIMAL:
        return decimal.Decimal(0)
    if t is not None and t.kind in FLOATING:
        return 0.0
    return 0


class Avg(Aggregator):
    """Flink's ``AvgAggFunction``: ``[sum, count]`` with the sum in BIGINT for integers (wrapping), DOUBLE for
    floating point, DECIMAL(38, s) for DECIMAL(p, s) (an overflow keeps it NULL); the result is ``sum / count``:
    integers divide like Java (truncating toward zero), DECIMAL rounds HALF_UP to ``max(6, s)`` digits."""

    def __init__(self, result_type, arg_type):
        super().__init__(result_type, arg_type)
        k = arg_type.kind if arg_type is not None else result_type.kind
        if k in INTEGRAL:
            self.sum_type: DataType = DataType(Kind.BIGINT)
        elif k is Kind.DECIMAL:
            self.sum_type = DataType(Kind.DECIMAL, precision=38, scale=(arg_type or result_type).scale or 0)
        else:
            self.sum_type = DataType(Kind.DOUBLE)

    def create(self):
        return [_zero(self.sum_type), 0]

    def _sum(self, acc):
        # [None, 0] is an empty accumulator written before the sum started at zero; None with values counted
        # is a DECIMAL sum that overflowed, which stays NULL like Flink's ``sum + x``.
        return _zero(self.sum_type) if acc[0] is None and acc[1] == 0 else acc[0]

    def accumulate(self, acc, value, bag):
        s = self._sum(acc)
        return [None if s is None else in_type(s + value, self.sum_type), acc[1] + 1]

    def retract(self, acc, value, bag):
        s = self._sum(acc)
        return [None if s is None else in_type(s - value, self.sum_type), acc[1] - 1]

    def value(self, acc):
        s, n = acc
        if n == 0 or s is None:
            return None
        k = self.sum_type.kind
        if k in INTEGRAL:
            q = abs(s) // abs(n)
            return q if (s >= 0) == (n > 0) else -q
        if k is Kind.DECIMAL:
            scale = max(6, self.sum_type.scale or 0)
            with decimal.localcontext() as dc:
                dc.prec = 100
                return (decimal.Decimal(s) / decimal.Decimal(n)).quantize(
                    decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
        return s / n


class Extreme(Aggregator):
    """MIN / MAX. Without retraction the accumulator is the extreme; with it, the bag holds every input."""

    def __init__(self, result_type, arg_type, *, is_max: bool, retraction: bool):
        super().__init__(result_type, arg_type)
        self.is_max = is_max
        self.uses_bag = retraction

    def _better(self, a: Any, b: Any) -> bool:
        return a > b if self.is_max else a < b

    def accumulate(self, acc, value, bag):
        if bag is not None and self.uses_bag:
            bag.add(value, 1)
        return value if acc is None or self._better(value, acc) else acc

    def retract(self, acc, value, bag):
        assert bag is not None
        left = bag.add(value, -1)
        if left > 0 or acc is None or value != acc:
            return acc
        best = None
        for v, _ in bag.items():
            if best is None or self._better(v, best):
                best = v
        return best

    def value(self, acc):
        return acc


class FirstLast(Aggregator):
    """FIRST_VALUE / LAST_VALUE: the value, or under retraction the ordered list of values."""

    def __init__(self, result_type, arg_type, *, last: bool, retraction: bool):
        super().__init__(result_type, arg_type)
        self.last = last
        self.retraction = retraction

    def create(self):
        return [] if self.retraction else None

    def accumulate(self, acc, value, bag):
        if self.retraction:
            return [*acc, value]
        if self.last or acc is None:
            return value
        return acc

    def retract(self, acc, value, bag):
        if not self.retraction:
            return super().retract(acc, value, bag)
        out = list(acc)
        if value in out:
            # The most recent occurrence goes first (the row being retracted is usually the latest one).
            del out[len(out) - 1 - out[::-1].index(value)]
        return out

    def value(self, acc):
        if not self.retraction:
            return acc
        if not acc:
            return None
        return acc[-1] if self.last else acc[0]


class ListAgg(Aggregator):
    """LISTAGG(x [, separator]) in arrival order; the list is kept so values can be retracted."""

    def __init__(self, result_type, arg_type, *, separator: str):
        super().__init__(result_type, arg_type)
        self.separator = separator

    def create(self):
        return []

    def accumulate(self, acc, value, bag):
        return [*acc, value]

    def retract(self, acc, value, bag):
        out = list(acc)
        if value in out:
            out.remove(value)
        return out

    def value(self, acc):
        return self.separator.join(str(v) for v in acc) if acc else None


class Collect(Aggregator):
    """COLLECT: a MULTISET (value → multiplicity) kept as ``[[value, count], …]``."""

    def create(self):
        return []

    def _change(self, acc, value, delta):
        out = [list(e) for e in acc]
        for e in out:
            if e[0] == value:
                e[1] += delta
                break
        else:
            out.append([value, delta])
        return [e for e in out if e[1] > 0]

    def accumulate(self, acc, value, bag):
        return self._change(acc, value, 1)

    def retract(self, acc, value, bag):
        return self._change(acc, value, -1)

    def value(self, acc):
        return {(tuple(v) if isinstance(v, list) else v): c for v, c in acc}

    def result(self, acc):
        return self.value(acc)


class Variance(Aggregator):
    """STDDEV_POP/SAMP, VAR_POP/SAMP as Flink computes them (Calcite's reduction): ``[n, SUM(x), SUM(x*x)]``
    with ``x`` in the result type, then ``(SUM(x*x) - SUM(x)*SUM(x)/n) / (n or n-1)`` and the square root for
    STDDEV. Integer result types make every step integer arithmetic (wrapping sums and squares, truncating
    divisions; a negative variance's root is NaN, cast to 0); other types use double precision (for DECIMAL
    an approximation of Flink's decimal steps). NULL for no values, and SAMP of one value."""

    def __init__(self, result_type, arg_type, *, name: str):
        super().__init__(result_type, arg_type)
        self.sample = name.endswith("SAMP")
        self.root = name.startswith("STDDEV")
        self.integral = result_type.kind in INTEGRAL
        self.sum_type = result_type if self.integral else DataType(Kind.DOUBLE)

    def create(self):
        return [0, _zero(self.sum_type), _zero(self.sum_type)]

    def _terms(self, value):
        v = in_type(value, self.sum_type)
        return v, in_type(v * v, self.sum_type)

    def accumulate(self, acc, value, bag):
        v, sq = self._terms(value)
        return [acc[0] + 1, in_type(acc[1] + v, self.sum_type), in_type(acc[2] + sq, self.sum_type)]

    def retract(self, acc, value, bag):
        v, sq = self._terms(value)
        return [acc[0] - 1, in_type(acc[1] - v, self.sum_type), in_type(acc[2] - sq, self.sum_type)]

    def value(self, acc):
        n, s, squares = acc
        if n <= 0 or (self.sample and n == 1):
            return None
        denominator = n - 1 if self.sample else n
        if self.integral:
            variance = _java_div(squares - _java_div(in_type(s * s, self.sum_type), n), denominator)
            if not self.root:
                return in_type(variance, self.result_type)
            root = math.sqrt(variance) if variance >= 0 else math.nan
            return 0 if math.isnan(root) else in_type(int(root), self.result_type)
        variance = (squares - s * s / n) / denominator
        out = (math.sqrt(variance) if variance >= 0 else math.nan) if self.root else variance
        if self.result_type.kind is Kind.DECIMAL:
            return None if math.isnan(out) or math.isinf(out) else decimal.Decimal(repr(out))
        return out

    def result(self, acc):
        return coerce(self.value(acc), self.result_type)


def _java_div(a: int, b: int) -> int:
    """Java's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class BoolAgg(Aggregator):
    """BOOL_AND / BOOL_OR from ``[true count, false count]``."""

    def __init__(self, result_type, arg_type, *, is_and: bool):
        super().__init__(result_type, arg_type)
        self.is_and = is_and

    def create(self):
        return [0, 0]

    def accumulate(self, acc, value, bag):
        return [acc[0] + 1, acc[1]] if value else [acc[0], acc[1] + 1]

    def retract(self, acc, value, bag):
        return [acc[0] - 1, acc[1]] if value else [acc[0], acc[1] - 1]

    def value(self, acc):
        if acc[0] + acc[1] <= 0:
            return None
        return acc[1] == 0 if self.is_and else acc[0] > 0


class Distinct(Aggregator):
    """Feeds ``inner`` each distinct value once; the bag counts duplicates."""

    uses_bag = True

    def __init__(self, inner: Aggregator):
        super().__init__(inner.result_type, inner.arg_type)
        self.inner = inner

    def create(self):
        return self.inner.create()

    def accumulate(self, acc, value, bag):
        assert bag is not None
        return self.inner.accumulate(acc, value, None) if bag.add(value, 1) == 1 else acc

    def retract(self, acc, value, bag):
        assert bag is not None
        return self.inner.retract(acc, value, None) if bag.add(value, -1) == 0 else acc

    def value(self, acc):
        return self.inner.value(acc)

    def result(self, acc):
        return self.inner.result(acc)


class UserAggregate(Aggregator):
    """A Python aggregate function (``create_accumulator``/``accumulate``/``retract``/``get_value``).

    The accumulator travels as text inside the JSON state: with ``json_state`` (group-aggregate_4 onwards) the
    versioned state codec's tagged JSON (``state_codec.dump_state``), so it must be made of JSON-representable values
    (lists, tuples, dicts, sets, numbers, strings, Decimal, date/time values, bytes, Rows); before that any
    Python object, pickled (base64), which older plans' snapshots hold and keep. The function is loaded lazily
    in the worker from its Python path."""

    def __init__(self, result_type: DataType, arg_type: DataType | None, class_name: str, name: str,
                 json_state: bool = False):
        super().__init__(result_type, arg_type)
        self.class_name = class_name
        self.name = name
        self.json_state = json_state
        self._fn: Any = None

    @property
    def fn(self) -> Any:
        if self._fn is None:
            self._fn = python_udf.load(self.class_name).instance
        return self._fn

    def _load(self, acc: str) -> Any:
        if self.json_state:
            return load_state(acc)
        return pickle.loads(base64.b64decode(acc))

    def _dump(self, value: Any) -> str:
        if not self.json_state:
            return base64.b64encode(pickle.dumps(value)).decode("ascii")
        try:
            return dump_state(value)
        except (TypeError, ValueError) as error:
            raise ValidationError(
                f"the accumulator of aggregate function {self.name} ({self.class_name}) cannot be kept in operator "
                f"state: {error}",
                hint="build the accumulator from JSON-representable values only: lists, tuples, dicts, sets, "
                     "numbers, strings, Decimal, date/time values, bytes or pyspark Rows (no class instances, "
                     "functions or open resources)") from None

    def create(self) -> Any:
        return self._dump(self.fn.create_accumulator())

    def accumulate(self, acc, value, bag):
        state = self._load(acc)
        self.fn.accumulate(state, *(value if isinstance(value, tuple) else (value,)))
        return self._dump(state)

    def retract(self, acc, value, bag):
        if not callable(getattr(self.fn, "retract", None)):
            raise ValidationError(f"aggregate function {self.name} receives retractions but defines no retract()",
                                  hint="implement retract(acc, *args), or feed it an insert-only input")
        state = self._load(acc)
        self.fn.retract(state, *(value if isinstance(value, tuple) else (value,)))
        return self._dump(state)

    def value(self, acc):
        return self.fn.get_value(self._load(acc))


@dataclass(frozen=True)
class BoundAggregate:
    """An aggregator with where its arguments come from (positions in the input row)."""

    aggregator: Aggregator
    args: tuple[int, ...]
    filter_arg: int | None
    count_star: bool

    def argument(self, row: Sequence[Any]) -> Any:
        """The value to aggregate, or ``_SKIP`` when the row does not contribute (NULL or filtered out)."""
        if self.filter_arg is not None and row[self.filter_arg] is not True:
            return _SKIP
        if self.count_star:
            return True
        if len(self.args) == 1:
            v = row[self.args[0]]
            return _SKIP if v is None else v
        vs = tuple(row[a] for a in self.args)
        return _SKIP if any(v is None for v in vs) else vs


_SKIP = object()
SKIP = _SKIP


class MemoryBag:
    """A ``ValueBag`` in memory, for evaluating a call over rows at hand (no state behind it)."""

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}

    def add(self, value: Any, delta: int) -> int:
        c = max(self.counts.get(value, 0) + delta, 0)
        if c:
            self.counts[value] = c
        else:
            self.counts.pop(value, None)
        return c

    def items(self) -> Iterator[tuple[Any, int]]:
        return iter(list(self.counts.items()))


def evaluate_rows(call: Any, rows: Sequence[Sequence[Any]], input_types: Sequence[DataType] | None = None) -> Any:
    """``call`` over ``rows`` (tuples in input field order): a fresh accumulator, every row accumulated, the
    result. The same accumulators as the operators' state, so an aggregate recomputed from rows (OVER frames,
    sessions) agrees with one kept incrementally."""
    bound = make_aggregator(call, input_types, retraction=False)
    bag = MemoryBag() if bound.aggregator.uses_bag else None
    acc = bound.aggregator.create()
    for row in rows:
        v = bound.argument(row)
        if v is not SKIP:
            acc = bound.aggregator.accumulate(acc, v, bag)
    return bound.aggregator.result(acc)


def make_aggregator(call: Any, input_types: Sequence[DataType] | None, retraction: bool,
                    json_user_accumulators: bool = False) -> BoundAggregate:
    """Bind an ``AggregateCall`` (function name, args, distinct, filter, constants) to an accumulator.

    Without ``input_types`` the argument types are taken as unknown (the result type decides arithmetic).
    ``json_user_accumulators``: a Python aggregate function's accumulator is kept as tagged JSON, not pickled."""
    name = call.function.upper()
    arg_type = input_types[call.args[0]] if call.args and input_types is not None else None
    t = call.type
    agg: Aggregator
    user = getattr(call, "user_function", None)
    if user is not None:
        if not user.class_name:
            raise ValidationError(f"aggregate function {call.function} was not resolved to a Python class")
        agg = UserAggregate(t, arg_type, user.class_name, call.function, json_state=json_user_accumulators)
        return BoundAggregate(agg, tuple(call.args), call.filter_arg, count_star=False)
    if name == "COUNT":
        agg = Count(t, arg_type)
    elif name == "SUM":
        agg = Sum(t, arg_type)
    elif name == "SUM0" or name == "$SUM0":
        agg = Sum0(t, arg_type)
    elif name == "AVG":
        agg = Avg(t, arg_type)
    elif name in ("MIN", "MAX"):
        agg = Extreme(t, arg_type, is_max=name == "MAX", retraction=retraction and not call.distinct)
    elif name in ("FIRST_VALUE", "LAST_VALUE"):
        agg = FirstLast(t, arg_type, last=name == "LAST_VALUE", retraction=retraction)
    elif name == "LISTAGG":
        sep = ","
        if call.constants:
            sep = str(call.constants[0].value)
        elif len(call.args) > 1:
            raise ValidationError("LISTAGG's separator must be a literal")
        agg = ListAgg(t, arg_type, separator=sep)
        call = _first_arg_only(call)
    elif name == "COLLECT":
        agg = Collect(t, arg_type)
    elif name in ("STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "STDDEV", "VARIANCE"):
        agg = Variance(t, arg_type, name={"STDDEV": "STDDEV_SAMP", "VARIANCE": "VAR_SAMP"}.get(name, name))
    elif name in ("BOOL_AND", "BOOL_OR"):
        agg = BoolAgg(t, arg_type, is_and=name == "BOOL_AND")
    else:
        raise ValidationError(f"aggregate function {call.function} is not supported by the group aggregate "
                              "operator", hint="use a built-in aggregate (COUNT, SUM, AVG, MIN, MAX, …)")
    if call.distinct:
        agg = Distinct(agg)
    return BoundAggregate(agg, tuple(call.args), call.filter_arg, count_star=name == "COUNT" and not call.args)


def _first_arg_only(call: Any) -> Any:
    return replace(call, args=call.args[:1])
