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

import decimal
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from planengine.errors import ValidationError
from planengine.ir.types import DataType, Kind
from planengine.runtime.operators._codec import FLOATING, INTEGRAL, coerce


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


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a + b


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
    """``[sum, count of non-null values]``; NULL when no value is left (``SUM0``: 0)."""

    zero_when_empty = False

    def create(self):
        return [None, 0]

    def accumulate(self, acc, value, bag):
        return [_add(acc[0], value), acc[1] + 1]

    def retract(self, acc, value, bag):
        s = acc[0] if acc[0] is not None else _zero(self.arg_type)
        return [s - value, acc[1] - 1]

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


class Avg(Sum):
    """Sum and count; integral averages divide like Java (truncating toward zero), as Flink does."""

    def value(self, acc):
        s, n = acc
        if n <= 0:
            return None
        k = self.result_type.kind
        if k in INTEGRAL:
            q = abs(s) // n
            return q if s >= 0 else -q
        if k is Kind.DECIMAL:
            return decimal.Decimal(s) / decimal.Decimal(n)
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
    """STDDEV_POP/SAMP, VAR_POP/SAMP from ``[n, sum, sum of squares]`` (floating point, like Flink)."""

    def __init__(self, result_type, arg_type, *, name: str):
        super().__init__(result_type, arg_type)
        self.sample = name.endswith("SAMP")
        self.root = name.startswith("STDDEV")

    def create(self):
        return [0, 0.0, 0.0]

    def accumulate(self, acc, value, bag):
        v = float(value)
        return [acc[0] + 1, acc[1] + v, acc[2] + v * v]

    def retract(self, acc, value, bag):
        v = float(value)
        return [acc[0] - 1, acc[1] - v, acc[2] - v * v]

    def value(self, acc):
        n, s, sq = acc
        if n <= 0 or (self.sample and n <= 1):
            return None
        var = max((sq - s * s / n) / (n - 1 if self.sample else n), 0.0)
        out = math.sqrt(var) if self.root else var
        if self.result_type.kind is Kind.DECIMAL:
            return decimal.Decimal(repr(out))
        return out

    def result(self, acc):
        v = self.value(acc)
        if v is not None and self.result_type.kind in INTEGRAL:
            return int(v)
        return coerce(v, self.result_type)


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

    Its accumulator may be any Python object, so state keeps it pickled (base64 text inside the JSON state);
    the function is loaded lazily in the worker from its Python path."""

    def __init__(self, result_type: DataType, arg_type: DataType | None, class_name: str, name: str):
        super().__init__(result_type, arg_type)
        self.class_name = class_name
        self.name = name
        self._fn: Any = None

    @property
    def fn(self) -> Any:
        if self._fn is None:
            from planengine.functions import python_udf

            self._fn = python_udf.load(self.class_name).instance
        return self._fn

    @staticmethod
    def _load(acc: str) -> Any:
        import base64
        import pickle

        return pickle.loads(base64.b64decode(acc))

    @staticmethod
    def _dump(value: Any) -> str:
        import base64
        import pickle

        return base64.b64encode(pickle.dumps(value)).decode("ascii")

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


def make_aggregator(call: Any, input_types: Sequence[DataType], retraction: bool) -> BoundAggregate:
    """Bind an ``AggregateCall`` (function name, args, distinct, filter, constants) to an accumulator."""
    name = call.function.upper()
    arg_type = input_types[call.args[0]] if call.args else None
    t = call.type
    agg: Aggregator
    user = getattr(call, "user_function", None)
    if user is not None:
        if not user.class_name:
            raise ValidationError(f"aggregate function {call.function} was not resolved to a Python class")
        agg = UserAggregate(t, arg_type, user.class_name, call.function)
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
    from dataclasses import replace

    return replace(call, args=call.args[:1])
