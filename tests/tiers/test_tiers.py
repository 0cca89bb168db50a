"""The tiers: marks derived from fixtures and folders, ``--tier``, the guard, the report and the runner.

The plugin is exercised on small suites of its own (``pytester``, in this process), whose conftest registers it
and replaces ``spark`` and ``postgres`` by plain values: a test here never starts Spark or a JVM.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.waits import wait_for
from tests.tiers import costs, run
from tests.tiers.rules import E2E, FAST, SPARK, needs, tier_of

INNER_CONFTEST = """
import pytest

pytest_plugins = ["tests.tiers.plugin", "tests.tiers.guard"]


@pytest.fixture(scope="session")
def spark():
    return "a stand-in: the tiers judge the fixture's name, not what it returns"


@pytest.fixture(scope="session")
def postgres():
    return "a stand-in"


@pytest.fixture
def feed(spark):
    return spark
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider --import-mode=importlib\n"
                     "asyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(INNER_CONFTEST)
    return pytester


@pytest.mark.parametrize(("folder", "fixtures", "expected_needs", "expected_tier"), [
    (("sql",), ["tmp_path"], set(), FAST),
    (("runtime", "operators"), ["feed", "spark", "tmp_path"], {"spark"}, SPARK),
    (("runtime", "connectors"), ["postgres_db", "postgres"], {"postgres"}, SPARK),
    (("runtime",), ["spark", "postgres", "engine_process"], {"spark", "postgres", "e2e"}, E2E),
    (("runtime",), ["jvm_process"], {"spark"}, SPARK),
    (("operator", "e2e"), ["kapi"], {"e2e"}, E2E),
    (("operator", "kubelet"), [], {"e2e"}, E2E),
    (("operator",), ["world"], {"e2e"}, E2E),
    (("operator",), ["kapi"], set(), FAST),  # the API emulator runs in a thread of the test process
])
def test_needs_and_tier_follow_the_fixtures_and_the_folder(folder, fixtures, expected_needs, expected_tier):
    assert needs(folder, fixtures) == expected_needs
    assert tier_of(needs(folder, fixtures)) == expected_tier


def test_marks_are_derived_and_tier_selects_exactly_one_partition(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_probe_marks="""
        import pytest

        def test_plain(request):
            assert {m.name for m in request.node.iter_markers()} == {"fast"}

        def test_through_a_fixture(feed, request):
            assert {m.name for m in request.node.iter_markers()} == {"spark"}

        def test_database(postgres, request):
            assert {m.name for m in request.node.iter_markers()} == {"postgres"}

        @pytest.mark.usefixtures("engine_process")
        def test_cli(spark, request):
            assert {m.name for m in request.node.iter_markers()} >= {"spark", "e2e"}
        """)
    suite.runpytest().assert_outcomes(passed=4)
    counts = {}
    for name in ("fast", "spark", "e2e"):
        result = suite.runpytest("--tier", name, "--collect-only", "-q")
        counts[name] = sorted(line.split("::")[1] for line in result.outlines if "::" in line)
    assert counts == {"fast": ["test_plain"], "spark": ["test_database", "test_through_a_fixture"],
                      "e2e": ["test_cli"]}
    assert suite.runpytest("-m", "postgres or fast", "-q").parseoutcomes() == {"passed": 2, "deselected": 2}


def test_the_e2e_shares_split_the_e2e_tier_exactly_and_by_recorded_cost(suite: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``--e2e-share a|b``: together the e2e tier, no test in both, the longest tests apart (the recorded costs of
    ``tests/tiers/e2e_costs.json``; a test it does not know costs the median). ``make test`` runs them side by
    side."""
    suite.makeconftest(INNER_CONFTEST + """

@pytest.fixture
def world():
    return "the contract double's world (a stand-in)"
""")
    suite.makepyfile(test_probe_shares="""
        import pytest

        def test_long(world):
            pass

        @pytest.mark.usefixtures("engine_process")
        def test_longer():
            pass

        @pytest.mark.usefixtures("engine_process")
        def test_short():
            pass

        @pytest.mark.usefixtures("engine_process")
        def test_unknown():
            pass

        def test_fast():
            pass
        """)
    recorded = suite.path / "costs.json"
    recorded.write_text(json.dumps({"test_probe_shares.py::test_longer": 300, "test_probe_shares.py::test_long": 200,
                                    "test_probe_shares.py::test_short": 10}))
    monkeypatch.setattr(costs, "COSTS", recorded)

    def selected(*args: str) -> list[str]:
        result = suite.runpytest_inprocess("--tier", "e2e", *args, "--collect-only", "-q")
        return sorted(line.split("::")[1] for line in result.outlines if "::" in line)

    # longest first: longer -> a (300), long -> b (200), unknown (median 200) -> b (400), short -> a (310)
    assert selected("--e2e-share", "a") == ["test_longer", "test_short"]
    assert selected("--e2e-share", "b") == ["test_long", "test_unknown"]
    assert selected() == ["test_long", "test_longer", "test_short", "test_unknown"]


def test_costs_are_read_from_pytest_durations(tmp_path: Path) -> None:
    log = tmp_path / "e2e-a.log"
    log.write_text("=== slowest durations ===\n120.50s call     tests/x.py::test_a[kubernetes]\n"
                   "3.20s setup    tests/x.py::test_a[kubernetes]\n0.40s teardown tests/x.py::test_b\n"
                   "(12 durations < 0.005s hidden.)\n")
    assert costs.parse_durations(log.read_text()) == {"tests/x.py::test_a[kubernetes]": 123.7,
                                                       "tests/x.py::test_b": 0.4}


def test_a_hand_written_tier_mark_stops_collection_and_is_named(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_probe_handwritten="""
        import pytest

        pytestmark = pytest.mark.spark

        def test_claims_spark():
            pass
        """)
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tier marks are derived*",
                                 "*test_probe_handwritten.py::test_claims_spark: @pytest.mark.spark*"])


def _fake_cli(directory: Path) -> Path:
    """An executable named ``planengine`` that does nothing: what the guard recognises by name."""
    exe = directory / "bin" / "planengine"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_only_e2e_tests_may_run_the_cli(suite: pytest.Pytester) -> None:
    exe = _fake_cli(suite.path)
    suite.makepyfile(test_probe_cli=f"""
        import subprocess
        import pytest

        def run_cli():
            subprocess.run([{str(exe)!r}, "--version"], check=True)

        def test_fast_runs_the_cli():
            run_cli()

        def test_spark_runs_the_cli(spark):
            run_cli()

        @pytest.mark.usefixtures("engine_process")
        def test_declared_e2e_runs_the_cli():
            run_cli()

        def test_fast_runs_python():
            subprocess.run([{sys.executable!r}, "-c", "pass"], check=True)
        """)
    result = suite.runpytest("-q")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines([
        "*test_fast_runs_the_cli is in the fast tier but started 1 process(es)*planengine CLI process:*bin/planengine"
        " --version*engine_process*",
        "*test_spark_runs_the_cli is in the spark tier but started 1 process(es)*"])


@pytest.mark.usefixtures("jvm_process")
def test_a_fast_test_that_starts_a_jvm_fails_and_names_it(suite: pytest.Pytester, monkeypatch) -> None:
    """A real JVM (``java -version``), so this test runs in the spark tier; its suite runs in a subprocess."""
    monkeypatch.setenv("PYTHONPATH", str(run.REPO))  # the suite's conftest imports tests.tiers
    suite.makepyfile(test_probe_jvm="""
        import subprocess

        def test_starts_java():
            subprocess.run(["java", "-version"], check=True, capture_output=True)
        """)
    result = suite.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_starts_java is in the fast tier but started 1 process(es)*JVM pid *"])


def test_the_report_counts_each_test_once(suite: pytest.Pytester, tmp_path: Path) -> None:
    suite.makepyfile(test_probe_report="""
        import pytest

        @pytest.fixture
        def breaks_on_teardown():
            yield
            raise RuntimeError("teardown")

        def test_passes():
            pass

        def test_fails():
            assert False

        def test_passes_then_fails_in_teardown(breaks_on_teardown):
            pass

        @pytest.mark.skip(reason="not here")
        def test_skipped():
            pass

        @pytest.mark.xfail(reason="known")
        def test_expected_failure():
            assert False
        """)
    report = tmp_path / "fast.json"
    suite.runpytest("--tier", "fast", "--tier-report", str(report))
    assert json.loads(report.read_text()) == {"tier": "fast", "passed": 1, "failed": 2, "skipped": 2,
                                              "exitstatus": 1}


# --- the runner -------------------------------------------------------------------------------------------------
def _steps(monkeypatch: pytest.MonkeyPatch, outcomes: dict[str, run.Outcome]) -> list[str]:
    ran: list[str] = []

    def step(name: str):  # type: ignore[no-untyped-def]
        def go(extra, scratch):  # type: ignore[no-untyped-def]
            ran.append(name)
            return outcomes[name]
        return go

    monkeypatch.setattr(run, "STEPS", {name: step(name) for name in outcomes})
    monkeypatch.setattr(run, "BACKGROUND", {})  # never the real control-plane build
    return ran


def _script(directory: Path, body: str) -> Path:
    script = directory / "setup.sh"
    script.write_text(body)
    return script


def test_a_steps_background_setup_runs_while_earlier_steps_test_and_the_step_waits(
        monkeypatch, capsys, tmp_path: Path) -> None:
    marker = tmp_path / "built"
    ran = _steps(monkeypatch, {"fast": run.Outcome(1), "e2e": run.Outcome(2)})
    order: list[str] = []
    steps = dict(run.STEPS)
    monkeypatch.setattr(run, "STEPS", {
        "fast": lambda extra, scratch: (order.append(f"fast saw built={marker.exists()}"), steps["fast"](extra,
                                                                                                       scratch))[1],
        "e2e": lambda extra, scratch: (order.append(f"e2e saw built={marker.exists()}"), steps["e2e"](extra,
                                                                                                     scratch))[1]})
    monkeypatch.setattr(run, "BACKGROUND", {"e2e": _script(tmp_path, f"sleep 1; echo built; touch {marker}\n")})
    monkeypatch.setattr(run, "BACKGROUND_LOG", tmp_path / "logs")
    assert run.main([]) == 0
    assert order == ["fast saw built=False", "e2e saw built=True"] and ran == ["fast", "e2e"]
    out = capsys.readouterr().out
    assert f"waiting for {tmp_path}/setup.sh (log: {tmp_path}/logs/setup.log)" in out and "built" in out
    assert out.splitlines()[-1] == "3 passed, 0 failed, 0 skipped"


def test_a_failed_background_setup_fails_its_step_with_the_logs_tail(monkeypatch, capsys, tmp_path: Path) -> None:
    ran = _steps(monkeypatch, {"fast": run.Outcome(1), "e2e": run.Outcome(2)})
    monkeypatch.setattr(run, "BACKGROUND", {"e2e": _script(tmp_path, "echo 'go: module lookup disabled'; exit 3\n")})
    monkeypatch.setattr(run, "BACKGROUND_LOG", tmp_path / "logs")
    assert run.main([]) == 3
    assert ran == ["fast"]  # the e2e tests never ran on a missing control plane
    out = capsys.readouterr().out
    assert "setup.sh failed (exit 3)" in out and "go: module lookup disabled" in out
    assert out.splitlines()[-1] == "1 passed, 1 failed, 0 skipped"


def test_a_background_setup_nobody_waits_for_is_stopped(monkeypatch, tmp_path: Path) -> None:
    pid = tmp_path / "child.pid"

    def failing_fast(extra, scratch) -> run.Outcome:
        wait_for(lambda: pid.exists() and pid.read_text().strip(), 10, "the setup to start its child")
        return run.Outcome(0, 1, 0, status=1)

    _steps(monkeypatch, {"fast": run.Outcome(), "e2e": run.Outcome(2)})
    monkeypatch.setattr(run, "STEPS", {"fast": failing_fast, "e2e": run.STEPS["e2e"]})
    monkeypatch.setattr(run, "BACKGROUND", {"e2e": _script(tmp_path, f"sleep 60 & echo $! > {pid}; wait\n")})
    monkeypatch.setattr(run, "BACKGROUND_LOG", tmp_path / "logs")
    began = time.monotonic()
    assert run.main([]) == 1  # fast failed: the build is killed, not left to run for half an hour
    assert time.monotonic() - began < 40  # not waited for: its child sleeps 60 s
    status = Path(f"/proc/{pid.read_text().strip()}/status")
    # the whole process group went (the child too, not only the script); a zombie awaiting its reaper is gone
    wait_for(lambda: not status.exists() or "\tZ" in status.read_text(), 10, "the setup's child to end")


def test_the_runner_stops_at_the_first_failing_tier_and_sums_the_tiers_that_ran(monkeypatch, capsys) -> None:
    ran = _steps(monkeypatch, {"fast": run.Outcome(10, 0, 2), "jvm": run.Outcome(3),
                               "spark": run.Outcome(5, 1, 0, status=1), "e2e": run.Outcome(7)})
    assert run.main([]) == 1
    assert ran == ["fast", "jvm", "spark"]
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == "tier spark failed; not run: e2e"
    assert lines[-1] == "18 passed, 1 failed, 2 skipped"


def test_a_tier_without_tests_is_not_a_failure(monkeypatch, capsys) -> None:
    ran = _steps(monkeypatch, {"fast": run.Outcome(4), "jvm": run.Outcome(2),
                               "spark": run.Outcome(status=run.NO_TESTS_COLLECTED), "e2e": run.Outcome(1)})
    assert run.main([]) == 0
    assert ran == ["fast", "jvm", "spark", "e2e"]
    assert capsys.readouterr().out.splitlines()[-1] == "7 passed, 0 failed, 0 skipped"


def test_a_step_that_dies_without_a_report_counts_as_one_failure(tmp_path: Path) -> None:
    assert run.read_report(tmp_path / "missing.json", 4) == run.Outcome(0, 1, 0, status=4)
    (tmp_path / "empty.json").write_text(json.dumps({"passed": 0, "failed": 0, "skipped": 0}))
    assert run.read_report(tmp_path / "empty.json", 5).ok


def test_an_unknown_step_is_a_usage_error(capsys) -> None:
    assert run.main(["fats"]) == 2
    assert "unknown step(s) fats" in capsys.readouterr().err


def test_the_runner_lets_python_cache_bytecode() -> None:
    """Each tier is a fresh interpreter that imports the engine and ~200 test modules (assertions rewritten):
    without a bytecode cache that is compiled again on every run."""
    assert "PYTHONDONTWRITEBYTECODE" not in run.step_environment({**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_the_runner_adopts_the_build_make_started_and_waits_for_its_status(monkeypatch, capsys, tmp_path: Path) -> None:
    """`make test` starts the build before `make venv` (tests/tiers/background.py); the runner must wait for that
    one, not start a second."""
    from tests.tiers.background import BackgroundSetup

    marker = tmp_path / "runs"
    script = _script(tmp_path, f"echo started >> {marker}; sleep 1; echo built\n")
    BackgroundSetup(script, tmp_path / "logs").start()  # what make does
    ran = _steps(monkeypatch, {"fast": run.Outcome(1), "e2e": run.Outcome(2)})
    monkeypatch.setattr(run, "BACKGROUND", {"e2e": script})
    monkeypatch.setattr(run, "BACKGROUND_LOG", tmp_path / "logs")
    monkeypatch.setenv(run.ADOPT_ENV, "1")
    assert run.main([]) == 0 and ran == ["fast", "e2e"]
    assert marker.read_text() == "started\n"  # one build, not two
    assert "built" in capsys.readouterr().out
