"""Pytest hooks of the tiers: derived marks, ``--tier`` selection, the declaration fixtures and ``--tier-report``.

Every collected test gets the marks of its needs (``spark``, ``postgres``, ``e2e``; ``tests/tiers/rules.py``) and
exactly one tier (``fast``, ``spark``, ``e2e``); a fast test also gets the mark ``fast``. Those marks are derived
only: one written by hand (``@pytest.mark.spark``, ``pytestmark = pytest.mark.e2e``) would say what the test
needed once, not what it needs now, so collection stops and names it. A test whose needs no fixture shows (it
runs the CLI in a subprocess, or javac) requests a declaration fixture below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tiers import costs
from tests.tiers.rules import NEEDS, TIERS, needs, tier_of

TIER_KEY = pytest.StashKey[str]()
DERIVED_MARKS = (*NEEDS, "fast")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tiers", "test tiers (docs/testing.md)")
    group.addoption("--tier", choices=TIERS, default=None,
                    help="run only the tests of this tier (derived from their fixtures and folder)")
    group.addoption("--e2e-share", choices=costs.SHARES, default=None,
                    help="of the e2e tier, only share a or b: the tier split in two of about equal recorded wall "
                         "time (tests/tiers/costs.py), which make test runs side by side")
    group.addoption("--tier-report", metavar="PATH", default=None,
                    help="write this run's test counts as JSON to PATH (read by `python -m tests.tiers.run`)")


def tier(item: pytest.Item) -> str | None:
    """The item's tier, or None for an item this plugin did not see (collected by another session)."""
    return item.stash.get(TIER_KEY, None)


def _folder(item: pytest.Item) -> tuple[str, ...]:
    tests_root = Path(str(item.config.rootpath)) / "tests"
    try:
        return Path(str(item.path)).parent.relative_to(tests_root).parts
    except ValueError:  # a doctest of planengine/…, or a test outside tests/
        return ()


@pytest.hookimpl(tryfirst=True)  # before `-m`/`-k` deselect: `-m fast` must see the derived marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    written: list[str] = []
    for item in items:
        by_hand = sorted({mark.name for mark in item.iter_markers() if mark.name in DERIVED_MARKS})
        if by_hand:
            written.append(f"  {item.nodeid}: {', '.join('@pytest.mark.' + name for name in by_hand)}")
        test_needs = needs(_folder(item), getattr(item, "fixturenames", ()))
        item.stash[TIER_KEY] = tier_of(test_needs)
        for need in sorted(test_needs):
            item.add_marker(need)
        if not test_needs:
            item.add_marker("fast")
    if written:
        raise pytest.UsageError(
            "tier marks are derived from the fixtures a test uses and its folder (tests/tiers/rules.py), never "
            "written by hand; remove these (request `spark`, `postgres`, `engine_process` or `jvm_process` "
            "instead when the test needs one):\n" + "\n".join(written[:40])
            + (f"\n  … and {len(written) - 40} more" if len(written) > 40 else ""))
    wanted = config.getoption("--tier")
    if wanted is None:
        return
    keep = [item for item in items if item.stash[TIER_KEY] == wanted]
    share = config.getoption("--e2e-share")
    if share is not None:
        shares = costs.partition((item.nodeid for item in keep), costs.load())
        keep = [item for item in keep if shares[item.nodeid] == share]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def engine_process() -> None:
    """Declares that the test runs the engine in a subprocess (tier ``e2e``): the ``planengine`` CLI (Spark for
    ``run``; ``tests/tiers/guard.py`` fails a fast or spark test that starts one undeclared) or another fresh
    interpreter importing the whole engine, seconds each on a loaded machine."""


@pytest.fixture(scope="session")
def jvm_process() -> None:
    """Declares that the test starts a JVM of its own, such as ``javac`` (tier ``spark``)."""


class TierReport:
    """``--tier-report``: one outcome per test (a test that passes and then fails in teardown counts once, as
    failed) and one failure per collection error, so the counts of the tiers add up to the tests run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}
        self.collection_errors = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            now = "failed"
        elif report.skipped:  # a skip or an xfail, in setup or call
            now = "skipped"
        elif report.when == "call":
            now = "passed"
        else:
            return
        if self.outcomes.get(report.nodeid) != "failed":
            self.outcomes[report.nodeid] = now

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    def counts(self) -> dict[str, int]:
        values = list(self.outcomes.values())
        return {"passed": values.count("passed"), "failed": values.count("failed") + self.collection_errors,
                "skipped": values.count("skipped")}

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        report = {"tier": session.config.getoption("--tier"), **self.counts(), "exitstatus": int(exitstatus)}
        self.path.write_text(json.dumps(report) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--tier-report")
    if path:
        config.pluginmanager.register(TierReport(Path(path)), "planengine-tier-report")
