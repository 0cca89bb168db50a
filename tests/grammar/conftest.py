"""The grammar drift guard's counts in pytest's closing summary: a passing test's output is hidden, and the corpus
size and the counts are what a reader of a CI log wants to see move (docs/testing.md, "The grammar drift guard")."""

from __future__ import annotations

from collections.abc import Callable

import pytest

SUMMARY = pytest.StashKey[str]()


@pytest.fixture
def drift_summary(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with the report's text to have it printed in the terminal summary."""

    def record(text: str) -> None:
        request.config.stash[SUMMARY] = text

    return record


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    text = config.stash.get(SUMMARY, None)
    if text:
        terminalreporter.write_sep("-", "grammar drift guard")
        terminalreporter.write_line(text)
