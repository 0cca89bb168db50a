"""A walk over the registry: every built-in is tested and every scalar renders for Spark."""

from __future__ import annotations

from planengine.functions.defaults import default_registry
from planengine.functions.registry import FunctionKind
from tests.functions.test_evaluation import CASES
from tests.functions.test_type_inference import ERRORS, INFERENCE

# Operator-shaped names that the evaluation cases exercise through SQL syntax rather than by name.
_SYNTAX = {
    "+": ["+"], "-": [" - "], "*": ["*"], "/": ["/"], "%": ["%"], "NEGATE": ["-i", "-d"], "=": ["="],
    "<>": ["<>"], "<": ["<"], "<=": ["<="], ">": [">"], ">=": [">="], "AND": [" AND "], "OR": [" OR "],
    "NOT": ["NOT "], "IS NULL": ["IS NULL"], "IS NOT NULL": ["IS NOT NULL"], "IS TRUE": ["IS TRUE"],
    "IS FALSE": ["IS FALSE"], "IS NOT TRUE": ["IS NOT TRUE"], "IS NOT FALSE": ["IS NOT FALSE"],
    "IS DISTINCT FROM": ["IS DISTINCT FROM"], "IS NOT DISTINCT FROM": ["IS NOT DISTINCT FROM"],
    "LIKE": [" LIKE "], "NOT LIKE": ["NOT LIKE"], "SIMILAR TO": ["SIMILAR TO"], "BETWEEN": [" BETWEEN "],
    "NOT BETWEEN": ["NOT BETWEEN"], "IN": [" IN ("], "NOT IN": ["NOT IN"], "CASE": ["CASE "], "CAST": ["CAST("],
    "TRY_CAST": ["TRY_CAST("], "ITEM": ["arr[", "mp["], "||": ["||"],
}


def _evaluated(name: str) -> bool:
    needles = _SYNTAX.get(name, [f"{name}("])
    return any(n in sql or (n.strip() == sql.strip()) for sql, _ in CASES for n in needles) or any(
        sql.startswith(name) for sql, _ in CASES)


def test_every_builtin_has_a_type_inference_test_or_an_evaluation_case():
    inferred = {case[0] for case in INFERENCE + ERRORS}
    registry = default_registry()
    missing = []
    for fn in registry.all():
        names = {fn.name} | ({fn.internal_name} if fn.internal_name else set())
        if not (names & inferred or _evaluated(fn.name)):
            missing.append(f"{fn.name} v{fn.version}")
    assert not missing, f"untested built-ins: {missing}"


def test_every_scalar_renders_for_spark_and_nothing_else_does():
    for fn in default_registry().all():
        if fn.kind is FunctionKind.SCALAR:
            assert fn.render_spark is not None, fn.name
        else:
            assert fn.render_spark is None, fn.name


def test_superseded_versions_keep_an_internal_name():
    registry = default_registry()
    by_name: dict[str, list[int]] = {}
    for fn in registry.all():
        by_name.setdefault(fn.name, []).append(fn.version)
    for name, versions in by_name.items():
        for version in sorted(versions)[:-1]:
            fn = registry.get(name, version)
            assert fn.internal_name == f"${name}${version}"
            assert registry.resolve(fn.internal_name) is fn


def test_nondeterministic_functions_are_marked():
    assert {"RAND", "UUID", "CURRENT_TIMESTAMP", "NOW", "PROCTIME", "CURRENT_ROW_TIMESTAMP"} <= \
        default_registry().nondeterministic_names()
