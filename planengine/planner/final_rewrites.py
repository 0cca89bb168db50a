"""Final physical rewrites (DESIGN §5, phase C); phase B, the trigger interval, is recorded by the plan writer
(``planengine.plan.serde.infer_trigger_interval``).

After changelog inference the exec DAG may hold Calc chains that came from different logical nodes (the
window-aggregate reordering Calc under the sink's cast Calc, say). Merging them keeps one stateless step
per edge; it runs after inference because inference never needs to look inside a Calc.
"""

from __future__ import annotations

from dataclasses import replace

from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, InputProperty, rebuild, topological
from planengine.ir.expressions import Call, FunctionRef, InputRef, substitute
from planengine.ir.types import BOOLEAN


def merge_exec_calcs(sinks: list[X.Sink]) -> list[X.Sink]:
    consumers: dict[int, int] = {}
    for node in topological(list(sinks)):
        for i in node.inputs:
            consumers[id(i)] = consumers.get(id(i), 0) + 1

    def fn(node: ExecNode, inputs: tuple[ExecNode, ...]) -> ExecNode:
        new = replace(node, inputs=inputs) if inputs != node.inputs else node
        if isinstance(new, X.Calc) and isinstance(new.inputs[0], X.Calc) and consumers.get(id(node.inputs[0])) == 1:
            below = new.inputs[0]
            replacements = list(below.projection)
            projection = tuple(substitute(e, replacements) for e in new.projection)
            condition = below.condition
            if new.condition is not None:
                upper = substitute(new.condition, replacements)
                condition = upper if condition is None else Call(
                    FunctionRef("AND", 1), (condition, upper), BOOLEAN.with_nullable(
                        condition.type.nullable or upper.type.nullable))
            merged = replace(new, inputs=below.inputs, projection=projection, condition=condition)
            if _is_identity(merged):
                return merged.inputs[0]
            return merged
        if isinstance(new, X.Calc) and _is_identity(new) and not isinstance(new.inputs[0], X.TableSourceScan):
            return new.inputs[0]
        if isinstance(new, X.Sink) and isinstance(new.inputs[0], X.Calc) and _is_positional_identity(new.inputs[0]) \
                and consumers.get(id(node.inputs[0])) == 1:
            # Sinks write by position, so a Calc that only renames (or relaxes nullability) is not needed.
            return replace(new, inputs=new.inputs[0].inputs)
        return new

    return rebuild(list(sinks), fn)  # type: ignore[return-value]


def insert_exchanges(sinks: list[X.Sink]) -> list[X.Sink]:
    """Make every re-partitioning explicit as an Exchange node (HASH by keys, or SINGLETON), as Flink's
    plans do, so a reader of the plan sees where rows are shuffled and by what key."""

    def fn(node: ExecNode, inputs: tuple[ExecNode, ...]) -> ExecNode:
        new = replace(node, inputs=inputs) if inputs != node.inputs else node
        if isinstance(new, X.Exchange) or not new.input_properties:
            return new
        wrapped = []
        for child, prop in zip(new.inputs, new.input_properties):
            if prop.distribution in ("HASH", "SINGLETON") and not isinstance(child, X.Exchange):
                keys = ", ".join(child.field_names[k] for k in prop.keys)
                child = X.Exchange(inputs=(child,), output_type=child.output_type,
                                   changelog_mode=child.changelog_mode, input_properties=(prop,),
                                   description=f"Exchange(distribution=[{prop.distribution.lower()}"
                                               + (f"[{keys}]" if keys else "") + "])")
            wrapped.append(child)
        return replace(new, inputs=tuple(wrapped), input_properties=tuple(InputProperty() for _ in wrapped))

    return rebuild(list(sinks), fn)  # type: ignore[return-value]


def _is_identity(calc: X.Calc) -> bool:
    child = calc.inputs[0]
    if calc.condition is not None or len(calc.projection) != len(child.field_names):
        return False
    if calc.field_names != child.field_names:
        return False
    return all(isinstance(e, InputRef) and e.index == i and e.type == child.field_types[i]
               for i, e in enumerate(calc.projection))


def _is_positional_identity(calc: X.Calc) -> bool:
    child = calc.inputs[0]
    if calc.condition is not None or len(calc.projection) != len(child.field_names):
        return False
    return all(isinstance(e, InputRef) and e.index == i and
               e.type.without_time_attribute().with_nullable(True) ==
               calc.field_types[i].without_time_attribute().with_nullable(True)
               for i, e in enumerate(calc.projection))



