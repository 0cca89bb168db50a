"""The fast tier starts no JVM, and only the e2e tier runs the ``planengine`` CLI: a test that does fails, naming it.

Both are watched by their effects, not by code paths, so a new way of reaching Spark cannot slip past:

* **JVMs.** While a fast test runs (its fixtures' set-up and teardown included), ``JAVA_TOOL_OPTIONS`` asks every
  JVM that starts to open a log file named after its pid in a directory of this session. Every JVM honours
  that variable, whoever starts it: PySpark's gateway in this process, ``spark-submit`` under a CLI subprocess,
  ``javac``. A file that appears during a fast test is a JVM that test started. (A JVM a spark-tier test
  started earlier in a mixed run is already running and not counted; ``--tier fast`` has none.)
* **CLI processes.** A Python audit hook sees every ``subprocess.Popen`` of this process; one that runs the
  engine's CLI (``-m planengine.cli`` or a ``planengine`` executable) is a fresh interpreter importing the
  whole engine, seconds each on a loaded machine, and Spark for ``run``: such a test in the fast or the spark
  tier fails, because it belongs to ``e2e`` (it declares ``engine_process``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.tiers.plugin import tier
from tests.tiers.rules import FAST, SPARK

ENV = "JAVA_TOOL_OPTIONS"
WATCH_DIR_KEY = pytest.StashKey[Path]()
BEFORE_KEY = pytest.StashKey[tuple[str | None, frozenset[str]]]()
REMEDY = ("Request the fixture that says what it needs, so it runs in a tier that may: `spark` (the shared "
          "SparkSession), `engine_process` (the planengine CLI in a subprocess) or `jvm_process` (javac, java); "
          "or keep the process out of the test (tests/tiers/rules.py, docs/testing.md).")


def jvm_log_option(directory: Path) -> str:
    """A unified-logging output that every JVM creates at start-up (``%p``: its pid); the ``arguments`` tag
    writes nothing, so the file stays empty: only its existence is the signal."""
    return f"-Xlog:arguments=info:file={directory}/jvm-%p.log"


def started_jvms(directory: Path, before: frozenset[str]) -> list[str]:
    """The pids of the JVMs that started since ``before`` (a listing of ``directory``)."""
    return sorted(name.removeprefix("jvm-").removesuffix(".log") for name in set(os.listdir(directory)) - before)


def describe_jvm(pid: str) -> str:
    """``pid: command line`` while the process lives (the in-process session's JVM does), else the pid."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"JVM pid {pid} (exited)"
    return f"JVM pid {pid}: {command[:300]}"


def is_engine_cli(args: Any) -> bool:
    """Whether a ``Popen`` argument list runs the planengine CLI.

    >>> is_engine_cli(["/venv/bin/python", "-m", "planengine.cli", "compile", "x.sql"])
    True
    >>> is_engine_cli(["/repo/.venv-spark42/bin/planengine", "run"])
    True
    >>> is_engine_cli(["/venv/bin/python", "-c", "import operator"]) or is_engine_cli("helm template x")
    False
    """
    if isinstance(args, (str, bytes, os.PathLike)):
        return False  # a shell line or a bare program: none of the suite's CLI calls look like that
    words = [os.fsdecode(a) for a in args]
    return bool(words) and (Path(words[0]).name == "planengine"
                            or any(a == "-m" and b == "planengine.cli" for a, b in itertools.pairwise(words)))


class CliWatch:
    """Records the engine CLI commands started while ``armed`` (one audit hook per process: hooks cannot be
    removed, so it stays installed and only records while a fast test runs)."""

    def __init__(self) -> None:
        self.armed = False
        self.seen: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.armed and event == "subprocess.Popen" and is_engine_cli(args[1]):
            self.seen.append(" ".join(os.fsdecode(a) for a in args[1])[:200])


CLI_WATCH = CliWatch()
sys.addaudithook(CLI_WATCH)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[WATCH_DIR_KEY] = Path(tempfile.mkdtemp(prefix="planengine-jvm-watch-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(WATCH_DIR_KEY, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item):  # type: ignore[no-untyped-def]
    test_tier = tier(item)
    if test_tier == FAST:
        directory = item.config.stash[WATCH_DIR_KEY]
        previous = os.environ.get(ENV)
        item.stash[BEFORE_KEY] = (previous, frozenset(os.listdir(directory)))
        os.environ[ENV] = f"{previous} {jvm_log_option(directory)}" if previous else jvm_log_option(directory)
    if test_tier in (FAST, SPARK):  # only e2e tests run the CLI
        CLI_WATCH.armed, CLI_WATCH.seen = True, []
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    watched = item.stash.get(BEFORE_KEY, None)
    try:
        result = yield
    finally:
        commands, CLI_WATCH.armed, CLI_WATCH.seen = CLI_WATCH.seen, False, []
        if watched is not None:
            del item.stash[BEFORE_KEY]
            if watched[0] is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = watched[0]
    offences = [] if watched is None else [
        describe_jvm(pid) for pid in started_jvms(item.config.stash[WATCH_DIR_KEY], watched[1])]
    offences += [f"planengine CLI process: {command}" for command in commands]
    if offences:
        fail(item.nodeid, tier(item), offences)
    return result


def fail(nodeid: str, test_tier: str | None, offences: Sequence[str]) -> None:
    pytest.fail(f"{nodeid} is in the {test_tier} tier but started {len(offences)} process(es) that tier must not: "
                + "; ".join(offences) + ". " + REMEDY, pytrace=False)
