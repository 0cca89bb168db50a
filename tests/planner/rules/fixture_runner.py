"""Per-rule fixtures: ``<rule>.yaml`` holds cases ``{name, sql, expected}``; each case plans ``sql`` (after the
golden prelude's tables) and applies ONLY that rule, then compares the DAG text with ``expected``. A rule
that rewrites what earlier programs produced (``merge_scans`` merges pushed-down scans) gets its input from
those programs first (``SETUP``).

Regenerate on purpose with ``python -m tests.planner.rules.fixture_runner --write`` and review the diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from planengine.api import TableEnvironment
from planengine.commands.compile import split_program
from planengine.planner import programs as P
from planengine.planner.rules.context import RuleContext

HERE = Path(__file__).parent
PRELUDE = HERE.parents[1] / "golden" / "programs" / "_prelude.sql"
RULES = {
    "fold_constants": P.fold_constants,
    "merge_calcs": P.merge_calcs,
    "remove_identity_calc": P.remove_identity_calc,
    "push_filter_into_join": P.push_filter_into_join,
    "push_filter_into_scan": P.push_filter_into_scan,
    "push_projection_into_scan": P.push_projection_into_scan,
    "share_common_subplans": P.share_common_subplans,
    "merge_scans": P.merge_scans,
}
# Programs run before the rule, by the name of the last one (the rule's input is their output).
SETUP = {"merge_scans": "source-push-down"}
WHOLE_DAG = {"merge_scans"}


def setup_programs(rule_name: str) -> tuple[P.RuleProgram, ...]:
    last = SETUP.get(rule_name)
    if last is None:
        return ()
    names = [p.name for p in P.PROGRAMS]
    return P.PROGRAMS[:names.index(last) + 1]


def apply_rule(rule_name: str, sql: str) -> str:
    env = TableEnvironment()
    env.execute_sql(PRELUDE.read_text())
    inserts = split_program(env, sql, "fixture.sql")
    planner = env._planner()
    roots = [planner.to_logical_sink(i) for i in inserts]
    ctx = RuleContext(env.registry, env.config)
    roots = P.optimize(roots, ctx, programs=setup_programs(rule_name))
    program = P.RuleProgram(rule_name, (RULES[rule_name],), fixpoint=rule_name not in ("share_common_subplans",
                                                                                    *WHOLE_DAG),
                        whole_dag=rule_name in WHOLE_DAG)
    out = P.optimize(roots, ctx, programs=(program,))
    return P.explain_dag(out)


def fixture_path(rule_name: str) -> Path:
    return HERE / f"{rule_name}.yaml"


def load(rule_name: str) -> list[dict]:
    return yaml.safe_load(fixture_path(rule_name).read_text())["cases"]


class _Literal(str):
    pass


def _literal(dumper: yaml.Dumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")


def write_all() -> None:
    yaml.add_representer(_Literal, _literal)
    for rule in RULES:
        cases = load(rule)
        for case in cases:
            case["expected"] = _Literal(apply_rule(rule, case["sql"]) + "\n")
        fixture_path(rule).write_text(yaml.dump({"rule": rule, "cases": cases}, sort_keys=False, width=120))


if __name__ == "__main__":
    if "--write" in sys.argv:
        write_all()
