"""Each rule alone, on its fixture cases (see fixture_runner)."""

from __future__ import annotations

import pytest

from tests.planner.rules.fixture_runner import RULES, apply_rule, load

CASES = [(rule, case) for rule in RULES for case in load(rule)]


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r}-{c['name']}" for r, c in CASES])
def test_rule_fixture(rule: str, case: dict) -> None:
    assert apply_rule(rule, case["sql"]) + "\n" == case["expected"]


def test_every_rule_has_a_fixture_that_changes_the_plan() -> None:
    """A fixture whose expected output equals the unoptimised plan would not test the rule."""
    from planengine.api import TableEnvironment
    from planengine.commands.compile import split_program
    from planengine.planner import programs as P
    from planengine.planner.programs import explain_dag
    from planengine.planner.rules.context import RuleContext
    from tests.planner.rules.fixture_runner import PRELUDE, setup_programs

    for rule in RULES:
        changed = False
        for case in load(rule):
            env = TableEnvironment()
            env.execute_sql(PRELUDE.read_text())
            planner = env._planner()
            roots = [planner.to_logical_sink(i) for i in split_program(env, case["sql"], "x.sql")]
            roots = P.optimize(roots, RuleContext(env.registry, env.config), programs=setup_programs(rule))
            if explain_dag(roots) + "\n" != case["expected"]:
                changed = True
        assert changed, f"no fixture of {rule} shows the rule changing a plan"
