"""Run the test tiers in order, stop at the first that fails, end with one line that sums them.

    python -m tests.tiers.run [STEP ...] [-- PYTEST_ARGS ...]

Steps, in this order by default (``make test``; ``make test-fast`` runs ``fast`` alone):

* ``fast``: ``pytest --tier fast``: no Spark, no PostgreSQL, no processes of the product, no JVM;
* ``jvm``: the Java unit tests of the JVM operator library (``tests/jvm``), one JVM, no Spark session;
* ``spark``: ``pytest --tier spark``: the shared SparkSession, the PostgreSQL server;
* ``e2e``: ``pytest --tier e2e``: the engine CLI as processes, the operator's worlds, the test kubelet.

The cheapest verdict comes first: a broken planner fails in the first minutes, not after the Spark tiers. A step's
set-up that only it needs and that takes long (the control plane's cold build for ``e2e``: tens of minutes of Go
compilation on 2 cores) starts in the background, at the lowest CPU priority, when the run starts, and the step
waits for it: the fast tier uses one core and the Spark tier leaves idle time, which the build takes instead of
adding its whole length to the run (``make test`` runs ``tests/setup/prepare.sh --except 40-controlplane``). A
step
fails on a failing test, an error, or any pytest exit status but 0 and 5 (5: the tier selected no test, which is
not a failure). The last line is plain ``N passed, N failed, N skipped`` over the steps that ran (an xfail counts
as skipped, an error as failed); CI reads it. The exit status is the failing step's, else 0.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.tiers import costs
from tests.tiers.background import ADOPT_ENV, LOGS, STEPS, BackgroundSetup
from tests.tiers.rules import TIERS

REPO = Path(__file__).resolve().parents[2]
NO_TESTS_COLLECTED = 5  # pytest's exit status when a selection is empty


@dataclass(frozen=True)
class Outcome:
    """What one step did: its counts and its exit status (0 or 5 for a passing pytest step)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    status: int = 0

    @property
    def ok(self) -> bool:
        return self.status in (0, NO_TESTS_COLLECTED) and self.failed == 0

    def __add__(self, other: Outcome) -> Outcome:
        """The counts of both (the status of a sum means nothing; ``main`` keeps the failing step's)."""
        return Outcome(self.passed + other.passed, self.failed + other.failed, self.skipped + other.skipped)


def closing_line(total: Outcome) -> str:
    """The run's last line.

    >>> closing_line(Outcome(2391, 0, 12) + Outcome(300, 1, 3, status=1))
    '2691 passed, 1 failed, 15 skipped'
    """
    return f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped"


def took(seconds: float) -> str:
    """A wall time as people read it in a CI log (the tiers' times are what the CI budget is spent on).

    >>> took(3.2), took(754.6)
    ('3 s', '12 min 35 s')
    """
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def read_report(path: Path, status: int) -> Outcome:
    """A step's outcome from its JSON report (``--tier-report``); a step that failed without saying how many
    tests failed (a usage error, a crash) counts one failure, so the closing line never reads ``0 failed`` for a
    failed run."""
    try:
        counts = json.loads(path.read_text())
    except (OSError, ValueError):
        counts = {}
    outcome = Outcome(int(counts.get("passed", 0)), int(counts.get("failed", 0)), int(counts.get("skipped", 0)),
                      status)
    if not outcome.ok and outcome.failed == 0:
        return Outcome(outcome.passed, 1, outcome.skipped, status or 1)
    return outcome


def step_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a step: this one, with Python's bytecode cache allowed (``PYTHONDONTWRITEBYTECODE``
    removed). Each step is a fresh interpreter importing the engine and every test module (assertions
    rewritten); uncached, collecting the fast tier took 16 s of CPU instead of 9 s. The cache files
    (``__pycache__``) are git-ignored."""
    env = dict(os.environ if environ is None else environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def pytest_step(tier: str) -> Callable[[Sequence[str], Path], Outcome]:
    def run(extra: Sequence[str], scratch: Path) -> Outcome:
        report = scratch / f"{tier}.json"
        command = [sys.executable, "-m", "pytest", "--tier", tier, "--tier-report", str(report), *extra]
        status = subprocess.run(command, cwd=REPO, env=step_environment()).returncode
        return read_report(report, status)

    return run


def jvm_step(extra: Sequence[str], scratch: Path) -> Outcome:
    """The Java unit tests (pytest arguments do not apply to them)."""
    report = scratch / "jvm.json"
    command = [sys.executable, "-m", "tests.jvm.run", "--report", str(report)]
    status = subprocess.run(command, cwd=REPO, env=step_environment()).returncode
    return read_report(report, status)


# Step → the set-up it alone needs, started in the background when the run starts (or adopted from `make test`).
BACKGROUND = {"e2e": STEPS / "40-controlplane.sh"}
BACKGROUND_LOG = LOGS


def e2e_step(extra: Sequence[str], scratch: Path) -> Outcome:
    """The e2e tier as two pytest processes side by side, shares ``a`` and ``b`` of about equal recorded wall time
    (``tests/tiers/costs.py``): one process kept the 2 cores busy only part of the time (44 min), and two split by
    kind (contract scenarios beside the JVM-heavy rest) took 15 and more than 60 minutes. Share b's output streams;
    share a's is printed when both ended. Every test's duration is printed (``--durations=0``), so a CI log is
    enough to refresh the costs. Each share has its own control plane, namespaces and nodes."""
    runs = []
    started = time.monotonic()
    for share in costs.SHARES:
        report = scratch / f"e2e-{share}.json"
        command = [sys.executable, "-m", "pytest", "--tier", "e2e", "--e2e-share", share, "--tier-report",
                   str(report), "--durations=0", *extra]
        out = open(scratch / f"e2e-{share}.log", "wb") if share == costs.SHARES[0] else None  # noqa: SIM115
        runs.append((share, report, out, subprocess.Popen(command, cwd=REPO, env=step_environment(),
                                                           stdout=out, stderr=subprocess.STDOUT if out else None)))
    total = Outcome()
    for share, report, out, process in reversed(runs):  # the streaming one first
        status = process.wait()
        print(f"--- e2e, {share} share ended after {took(time.monotonic() - started)} ---", flush=True)
        if out is not None:
            out.close()
            print(f"--- e2e, {share} share ---\n" + (scratch / f"e2e-{share}.log").read_text(errors="replace"),
                  flush=True)
        outcome = read_report(report, status)
        failed_status = total.status or (0 if outcome.ok else outcome.status or 1)
        total = dataclasses.replace(total + outcome, status=failed_status)
    return total


STEPS: dict[str, Callable[[Sequence[str], Path], Outcome]] = {
    TIERS[0]: pytest_step(TIERS[0]),
    "jvm": jvm_step,
    TIERS[1]: pytest_step(TIERS[1]),
    TIERS[2]: e2e_step,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, extra = args[:at], args[at + 1:]
    unknown = [name for name in args if name not in STEPS]
    if unknown:
        print(f"error: unknown step(s) {', '.join(unknown)}; the steps are {', '.join(STEPS)} "
              f"(pytest arguments go after `--`)", file=sys.stderr)
        return 2
    chosen = [name for name in STEPS if name in args] if args else list(STEPS)
    total = Outcome()
    failed_step: str | None = None
    failed_status = 0
    setups = {name: BackgroundSetup(script, BACKGROUND_LOG) for name, script in BACKGROUND.items() if name in chosen}
    try:
        for setup in setups.values():
            setup.start(adopt=os.environ.get(ADOPT_ENV) == "1")
        with tempfile.TemporaryDirectory(prefix="planengine-tiers-") as scratch:
            for name in chosen:
                print(f"=== tier {name} ===", flush=True)
                started = time.monotonic()
                if name in setups and (status := setups[name].wait()) != 0:
                    outcome = Outcome(failed=1, status=status)
                else:
                    if name in setups:
                        print(f"(waited {took(time.monotonic() - started)} for the {name} set-up)", flush=True)
                    outcome = STEPS[name](extra, Path(scratch))
                total = total + outcome
                print(f"=== tier {name}: {closing_line(outcome)} in {took(time.monotonic() - started)} ===",
                      flush=True)
                if not outcome.ok:
                    failed_step, failed_status = name, outcome.status or 1
                    break
    finally:
        for setup in setups.values():
            setup.stop()
    if failed_step is not None:
        skipped = chosen[chosen.index(failed_step) + 1:]
        print(f"tier {failed_step} failed" + (f"; not run: {', '.join(skipped)}" if skipped else ""), flush=True)
    print(closing_line(total), flush=True)
    return failed_status


if __name__ == "__main__":
    sys.exit(main())
