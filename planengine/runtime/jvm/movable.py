"""JVM operators a plan migration may have moved from the Python ``transformWithState`` operator.

A translator that runs a node on a JVM processor records it here (``ctx.state_move_candidates``), with what a
state move needs to start the same processor again from converted state: the node, the operator's entry
point, its spec and its input. Before any query starts, the executor moves the state of those whose restored
checkpoint still holds the Python operator's (``runtime/state/move.py``); for all others this costs
nothing but the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm import run_operator
from planengine.runtime.jvm.specs import JvmSpec


@dataclass(frozen=True)
class MovableOperator:
    """A keyed JVM processor (``Operators.<entry>``) whose initial state has the generic shape
    (``io.planengine.jvm.core.StateVariables``): ``key_columns`` of ``input_df``, then ``state``."""

    node: Any
    entry: str
    spec: JvmSpec
    input_df: Any  # the operator's input DataFrame (typed, ``_rowkind`` last on updating edges)
    key_columns: tuple[str, ...]


@dataclass(frozen=True)
class MovableGroupAggregate:
    """The JVM group aggregate, whose initial state has its own shape (``runtime/state/conversion.py``)."""

    node: Any
    stream: Stream

    @property
    def input_df(self) -> Any:
        return self.stream.df


def run_movable(df: Any, entry: str, spec: JvmSpec, node: Any, ctx: Any, key_columns: Sequence[str]) -> Any:
    """``run_operator`` that also records the operator as a state move candidate of ``ctx``."""
    ctx.state_move_candidates.append(MovableOperator(node, entry, spec, df, tuple(key_columns)))
    return run_operator(df, entry, spec)
