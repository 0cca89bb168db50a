"""Accumulators for the built-in aggregate functions, shared by group and window aggregates.

``make_aggregator(call, input_types, retraction)`` turns an exec node's ``AggregateCall`` into an
``Aggregator``: JSON-serialisable accumulators (they live in operator state) with Flink's semantics.
"""

from planengine.runtime.operators.aggregates.accumulators import (
    Aggregator,
    ValueBag,
    make_aggregator,
)

__all__ = ["Aggregator", "ValueBag", "make_aggregator"]
