"""The optimiser driver: ordered rule programs over the whole multi-sink DAG.

Programs run in order; each is a tuple of rules applied bottom-up to every node (inputs first, shared
nodes once) until nothing changes or the iteration cap is hit. A *whole-DAG* program's rules take all roots
at once instead (``merge_scans`` must see every scan of a table across the statement set). The driver,
not the rules, owns recursion, fix-points, change tracking, disabling rules by name
(``table.optimizer.disabled-rules``, comma separated) and the check that a rule never changes a node's
output types. With ``trace`` it records the plan after
every rule that changed something, which ``EXPLAIN`` prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from planengine.errors import InternalError
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext
from planengine.planner.rules.fold_constants import fold_constants
from planengine.planner.rules.merge_calcs import merge_calcs
from planengine.planner.rules.merge_scans import merge_scans
from planengine.planner.rules.push_filter_into_join import push_filter_into_join
from planengine.planner.rules.push_filter_into_scan import push_filter_into_scan
from planengine.planner.rules.push_projection_into_scan import push_projection_into_scan
from planengine.planner.rules.remove_identity_calc import remove_identity_calc
from planengine.planner.rules.share_common_subplans import share_common_subplans

Rule = Callable[[L.LogicalNode, RuleContext], L.LogicalNode]
DagRule = Callable[[list[L.LogicalNode], RuleContext], list[L.LogicalNode]]


@dataclass(frozen=True)
class RuleProgram:
    name: str
    rules: tuple[Rule, ...] | tuple[DagRule, ...]
    fixpoint: bool = True
    whole_dag: bool = False  # rules take and return all roots (the driver still checks types and changes)


PROGRAMS: tuple[RuleProgram, ...] = (
    # Constants first, so later rules see folded predicates (and push-down gets literals, not calls).
    RuleProgram("simplify", (fold_constants,)),
    # Merge adjacent Calcs before push-down: a source is offered the whole filter and the final column set.
    RuleProgram("calc-merge", (merge_calcs, remove_identity_calc)),
    # Join conditions written in WHERE (comma joins) move into the join, so equi-keys and time bounds are
    # visible to physical conversion (regular vs interval join) and one-side filters run before join state.
    RuleProgram("join-push-down", (push_filter_into_join, merge_calcs, remove_identity_calc)),
    # Filters before projections: a pushed filter may need columns the projection would drop.
    RuleProgram("source-push-down", (push_filter_into_scan, push_projection_into_scan)),
    # After push-down (it merges what push-down made different) and before sharing (which then makes the one
    # merged scan a shared node). The Calcs it adds are folded into their consumers by the exec-level Calc
    # merge (final rewrites), so plans without a merge keep their exact shape.
    RuleProgram("merge-scans", (merge_scans,), fixpoint=False, whole_dag=True),
    # Sharing last, once everything is canonical, so identical scans/aggregates across sinks collapse.
    RuleProgram("share-common-subplans", (share_common_subplans,), fixpoint=False),
)
MAX_ITERATIONS = 20


@dataclass
class TraceStep:
    program: str
    rule: str
    plan: str


def optimize(roots: list[L.LogicalNode], ctx: RuleContext, trace: list[TraceStep] | None = None,
             programs: tuple[RuleProgram, ...] = PROGRAMS) -> list[L.LogicalNode]:
    disabled = {r.strip() for r in ctx.config.get("table.optimizer.disabled-rules", "").split(",") if r.strip()}
    for program in programs:
        for _ in range(MAX_ITERATIONS if program.fixpoint else 1):
            changed = False
            for rule in program.rules:
                if rule.__name__ in disabled:
                    continue
                if program.whole_dag:
                    roots, rule_changed = _apply_dag(rule, roots, ctx)  # type: ignore[arg-type]
                else:
                    roots, rule_changed = _apply(rule, roots, ctx)  # type: ignore[arg-type]
                if rule_changed:
                    changed = True
                    if trace is not None:
                        trace.append(TraceStep(program.name, rule.__name__, explain_dag(roots)))
            if not changed:
                break
    return roots


def _apply(rule: Rule, roots: list[L.LogicalNode], ctx: RuleContext) -> tuple[list[L.LogicalNode], bool]:
    memo: dict[int, L.LogicalNode] = {}
    changed = False

    def visit(node: L.LogicalNode) -> L.LogicalNode:
        nonlocal changed
        key = id(node)
        if key in memo:
            return memo[key]
        inputs = tuple(visit(i) for i in node.inputs)
        current = node if all(a is b for a, b in zip(inputs, node.inputs)) else node.with_inputs(inputs)
        result = rule(current, ctx)
        if result is not current:
            _check_types(rule, current, result)
            changed = True
        if current is not node:
            changed = True
        memo[key] = result
        return result

    return [visit(r) for r in roots], changed


def _apply_dag(rule: DagRule, roots: list[L.LogicalNode], ctx: RuleContext) -> tuple[list[L.LogicalNode], bool]:
    out = rule(list(roots), ctx)
    if len(out) != len(roots):
        raise InternalError(f"rule {rule.__name__} returned {len(out)} roots for {len(roots)}")
    for before, after in zip(roots, out):
        if after is not before:
            _check_types(rule, before, after)  # type: ignore[arg-type]
    return out, any(a is not b for a, b in zip(out, roots))


def scans(roots: list[L.LogicalNode]) -> list[L.LogicalScan]:
    """Every distinct scan of a DAG, in depth-first order (for tests and explanations)."""
    seen: set[int] = set()
    out: list[L.LogicalScan] = []

    def visit(node: L.LogicalNode) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, L.LogicalScan):
            out.append(node)
        for i in node.inputs:
            visit(i)

    for r in roots:
        visit(r)
    return out


def _check_types(rule: Rule, before: L.LogicalNode, after: L.LogicalNode) -> None:
    b = [str(t.without_time_attribute()) for t in before.field_types]
    a = [str(t.without_time_attribute()) for t in after.field_types]
    if a != b:
        raise InternalError(f"rule {rule.__name__} changed the output types of {type(before).__name__}: {b} -> {a}")


def explain_dag(roots: list[L.LogicalNode]) -> str:
    """Text form of a multi-sink DAG; a node shared by several parents is printed once and referenced."""
    seen: dict[int, int] = {}
    lines: list[str] = []

    def visit(node: L.LogicalNode, indent: int) -> None:
        pad = "  " * indent
        name = type(node).__name__.removeprefix("Logical")
        if id(node) in seen:
            lines.append(f"{pad}{name}(reused #{seen[id(node)]})")
            return
        seen[id(node)] = len(seen) + 1
        lines.append(f"{pad}#{seen[id(node)]} {name}({node.explain_terms()})")
        for i in node.inputs:
            visit(i, indent + 1)

    for r in roots:
        visit(r, 0)
    return "\n".join(lines)
