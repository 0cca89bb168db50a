"""Conformance reporting (the tests use the suite's SparkSession, ``tests/fixtures/spark.py``): the per-family
pass table at the end of the run, and the baseline rewrite (``CONFORMANCE_WRITE_BASELINE=1``, set by
``python -m tests.conformance.update_baseline``)."""

from __future__ import annotations

import os
from collections import Counter

from tests.conformance.baseline import load_baseline, write_baseline
from tests.conformance.harness import RESULTS, family_table


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if not RESULTS:
        return
    outcomes = list(RESULTS.values())
    line, _, _ = family_table(outcomes)
    tr = terminalreporter
    tr.section("conformance")
    exact = sum(1 for o in outcomes if o.passed and o.exact)
    seconds = sum(o.seconds for o in outcomes)
    tr.write_line(f"conformance: {line}")
    tr.write_line(f"  exact changelog also equal: {exact}; folded (materialized-equal only): "
                  f"{sum(1 for o in outcomes if o.passed) - exact}; program time {seconds:.0f} s")
    failures = [o for o in outcomes if not o.passed]
    if failures:
        categories = Counter(o.category or "?" for o in failures)
        tr.write_line("  failures by category: " + ", ".join(f"{c} {n}" for c, n in categories.most_common()))
        for o in sorted(failures, key=lambda o: (o.category or "", o.key)):
            tr.write_line(f"  - {o.key} [{o.category}] {(o.error or '')[:300]}")
    baseline = load_baseline()
    new = sorted(o.program.id for o in outcomes if o.passed and o.program.id not in baseline)
    if new and not os.environ.get("CONFORMANCE_WRITE_BASELINE"):
        tr.write_line(f"  newly passing (not in baseline.json yet): {', '.join(new)} — run "
                      "`python -m tests.conformance.update_baseline`")


def pytest_sessionfinish(session, exitstatus) -> None:  # type: ignore[no-untyped-def]
    if not os.environ.get("CONFORMANCE_WRITE_BASELINE") or not RESULTS:
        return
    ran = {o.program.id for o in RESULTS.values()}
    keep = {pid for pid in load_baseline() if pid not in ran}  # programs this session did not run
    passed = keep | {o.program.id for o in RESULTS.values() if o.passed}
    exact = (load_baseline(key="exact_changelog") & keep) | {o.program.id for o in RESULTS.values()
                                                              if o.passed and o.exact}
    from tests.conformance.test_conformance import PROGRAMS

    write_baseline(passed, exact, len(PROGRAMS))
