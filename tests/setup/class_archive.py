"""A class-data-sharing archive (JDK AppCDS) of the classes a test run's Spark driver loads.

A Spark driver loads about 18 000 classes before its first query; parsing and verifying them from ~250 jars is
most of the 16 CPU-seconds a JVM start costs here, and the test suite starts hundreds (every engine process of the
CLI and e2e tests, every pod of the test kubelet). Mapped from an archive, those classes cost a fraction: one CLI
test (a compile, a run, a restore) went from 67.6 to 42.8 CPU-seconds (2026-11-29, measured over its whole
process tree). The archive is built once per machine by the set-up (``tests/setup/prepare.d/35-class-archive.sh``)
from ``make run``'s job, and named after everything that must not change under it (the JDK, the JVM options, every
jar's name, size and time), so a new PySpark or JDK gets a new archive instead of a rejected one.

Nothing depends on it: without an archive, or when the JVM refuses it (``-Xshare:auto``), the JVM loads classes
from the jars as before, and its CDS messages are off so no output changes. It is a property of this machine's
test runs, like the other JVM options in ``tests/fixtures/spark.py``; the engine's own settings do not name it.

    python -m tests.setup.class_archive build [--quiet]   # once; a no-op when the archive is there
    python -m tests.setup.class_archive path              # the archive's path, if built
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = REPO / ".tools" / "class-archive"
#: How long the workload and the archive's dump at JVM exit may take on a loaded 2-core machine.
BUILD_TIMEOUT_S = 900


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def _spark_jars() -> Path | None:
    try:
        import pyspark  # only where the venv has it (the set-up runs after `make venv`)
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if jars.is_dir() else None


def archive_key(java: Path, jars: Path, jvm_options: str) -> str:
    """What the archive depends on, hashed: the JDK binary, the JVM options and every jar (name, size, mtime).

    The JVM checks the class path's jars itself and refuses a stale archive, but a refused archive helps
    nobody: a key that changes with them builds a fresh one instead."""
    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}:{stat.st_size}:{stat.st_mtime_ns}\n{jvm_options}\n".encode())
    for jar in sorted(jars.glob("*.jar")):
        s = jar.stat()
        digest.update(f"{jar.name}:{s.st_size}:{s.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path(jvm_options: str) -> Path | None:
    """Where this machine's archive for ``jvm_options`` is (or would be); None without a JDK or PySpark."""
    java, jars = _java(), _spark_jars()
    if java is None or jars is None:
        return None
    return ARCHIVE_DIR / f"spark-driver-{archive_key(java, jars, jvm_options)}.jsa"


def archive_options(jvm_options: str) -> str:
    """The JVM options that map the archive, or "" when none is built."""
    path = archive_path(jvm_options)
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xshare:auto -Xlog:cds*=off"


_WORKLOAD = """
import sys
sys.path.insert(0, {repo!r})
from examples.clicks import main as clicks
status = clicks.main()
from pyspark import SparkContext
if SparkContext._active_spark_context is not None:
    SparkContext._active_spark_context.stop()
if SparkContext._gateway is not None:
    SparkContext._gateway.proc.stdin.close()  # the JVM exits at its stdin's end and dumps the archive as it exits
    SparkContext._gateway.proc.wait(timeout={timeout})
sys.exit(status)
"""


def build(jvm_options: str, *, quiet: bool = False) -> Path | None:
    """Run ``make run``'s clicks job with the archive dumped at the JVM's exit; None when no JDK or PySpark."""
    target = archive_path(jvm_options)
    if target is None:
        print("class archive: no JDK or PySpark here; nothing built", file=sys.stderr)
        return None
    if target.is_file():
        if not quiet:
            print(f"class archive: {target} (built before)")
        return target
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PLANENGINE_SPARK_CONF"] = (f"spark.driver.extraJavaOptions={jvm_options} "
                                    f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="class-archive-") as work:
        env["CLICKS_WORK_DIR"] = work
        try:
            done = subprocess.run([sys.executable, "-c", _WORKLOAD.format(repo=str(REPO), timeout=BUILD_TIMEOUT_S)],
                                  cwd=REPO, env=env, timeout=BUILD_TIMEOUT_S, capture_output=quiet, text=True)
        except subprocess.TimeoutExpired:
            print(f"class archive: the workload took over {BUILD_TIMEOUT_S} s; test JVMs will load classes from the "
                  "jars as before", file=sys.stderr)
            partial.unlink(missing_ok=True)
            return None
    if done.returncode != 0 or not partial.is_file():
        tail = (done.stdout or "")[-2000:] + (done.stderr or "")[-2000:] if quiet else ""
        print(f"class archive: the workload failed (exit {done.returncode}) or dumped nothing; test JVMs will "
              f"load classes from the jars as before\n{tail}", file=sys.stderr)
        partial.unlink(missing_ok=True)
        return None
    partial.replace(target)
    for old in ARCHIVE_DIR.glob("spark-driver-*.jsa"):  # archives of an earlier JDK or PySpark
        if old != target:
            old.unlink(missing_ok=True)
    print(f"class archive: {target} ({target.stat().st_size // 2**20} MB) in {time.monotonic() - started:.0f} s")
    return target


def main(argv: list[str] | None = None) -> int:
    from tests.fixtures.spark import TEST_DRIVER_OPTIONS  # here, not above: that module imports this one

    parser = argparse.ArgumentParser(prog="python -m tests.setup.class_archive", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("build", "path"))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "path":
        path = archive_path(TEST_DRIVER_OPTIONS)
        if path is None or not path.is_file():
            return 1
        print(path)
        return 0
    # A failed build is not a failed set-up: the tests run without the archive, only slower.
    build(TEST_DRIVER_OPTIONS, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
