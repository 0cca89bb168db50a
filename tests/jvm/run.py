"""The JVM operator library's unit tests: compile ``tests/jvm/java`` against the library and PySpark's jars, run them.

    python -m tests.jvm.run [--report PATH] [TestClass ...]

The tests drive processors without a streaming query (``io.planengine.jvm.testing.Processors`` over Spark's
``TwsTester``): one JVM, no SparkSession, seconds. They compile with the library's own checks (``-Xlint:all
-Werror``), and every ``*Test.java`` runs unless classes are named. The library jar is (re)built first when its
sources changed (``planengine.runtime.jvm.build.ensure_jar``). Then each family's spec pair, the Java record and
the Python dataclass, is checked to have the same fields (``tests/jvm/spec_pairs.py``: one test per pair; with
classes named, only when ``SpecPairs`` is among them). ``make test`` runs this as the ``jvm`` step between the
fast and the spark tiers (``tests/tiers/run.py``); exit status 1 when a test fails, 2 when the tests do not
compile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from planengine.runtime.jvm import build
from planengine.runtime.jvm.specs import SPECS
from tests.jvm.spec_pairs import mismatches

SOURCES = Path(__file__).resolve().parent / "java"
RUNNER = "io.planengine.jvm.testing.TestRunner"
SPEC_RECORDS = "io.planengine.jvm.testing.SpecRecords"
SPEC_PAIRS = "SpecPairs"  # the name the pair check answers to on the command line and in the report
# What Spark's launcher opens for Spark on Java 17 (org.apache.spark.launcher.JavaModuleOptions), for the
# encoders and Platform (off-heap memory) that state access and row conversion touch.
MODULE_OPTIONS = (*(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in (
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
    "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
    "sun.security.action", "sun.util.calendar")), "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dlog4j2.level=ERROR")  # the last: Spark's start-up chatter


def test_classes(sources: Path = SOURCES) -> list[str]:
    """The fully qualified names of the ``*Test.java`` sources, in path order."""
    return [".".join(path.relative_to(sources).with_suffix("").parts)
            for path in sorted(sources.rglob("?*Test.java"))]  # not the annotation Test.java itself


def java_tool(name: str) -> str:
    javac, where = build.find_javac()
    if javac is None:
        raise build.JvmLibraryUnavailable(f"no `javac` in {where}", hint=build.REMEDY)
    return str(Path(javac).with_name(name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", help="write the counts as JSON here (python -m tests.tiers.run reads it)")
    ap.add_argument("classes", nargs="*", help=f"test classes to run (default: every *Test.java, then {SPEC_PAIRS})")
    args = ap.parse_args(argv)
    target = build.current_target()
    try:
        jar = build.ensure_jar(target, log=lambda m: print(m, file=sys.stderr))
        javac, java = java_tool("javac"), java_tool("java")
    except build.JvmLibraryUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="planengine-jvm-tests-") as scratch:
        classes = Path(scratch) / "classes"
        sources = Path(scratch) / "sources.txt"
        sources.write_text("\n".join(str(p) for p in sorted(SOURCES.rglob("*.java"))) + "\n")
        compile_path = os.pathsep.join([str(jar), build.compile_classpath(target.jars_dir)])
        # -proc:none: the runner's @Test is read by reflection at run time; with annotation processing on,
        # -Xlint:processing warns that no processor claims it.
        done = subprocess.run([javac, "--release", build.JAVA_RELEASE, "-encoding", "UTF-8", *build.JAVAC_CHECKS,
                               "-proc:none", "-cp", compile_path, "-d", str(classes), f"@{sources}"])
        if done.returncode != 0:
            print("error: the JVM library's unit tests do not compile (above)", file=sys.stderr)
            return 2
        run_path = os.pathsep.join([str(classes), str(jar), str(target.jars_dir / "*")])
        report = ["--report", args.report] if args.report else []
        if args.report:
            Path(args.report).unlink(missing_ok=True)  # the pair check adds to the runner's counts, not to old ones
        pairs = not args.classes or SPEC_PAIRS in args.classes
        named = [c for c in args.classes if c != SPEC_PAIRS] if args.classes else test_classes()
        status = 0
        if named:
            command = [java, *MODULE_OPTIONS, "-cp", run_path, RUNNER, *report, *named]
            status = subprocess.run(command).returncode
        if pairs:
            listing = Path(scratch) / "spec-records.json"
            subprocess.run([java, "-cp", run_path, SPEC_RECORDS, str(listing)], check=True)
            failed = check_spec_pairs(json.loads(listing.read_text()), args.report)
            status = status or (1 if failed else 0)
        return status


def check_spec_pairs(java: dict, report: str | None) -> int:
    """Prints one line per spec pair as the Java runner prints a test, adds them to the counts in ``report`` (the
    runner's, when it ran), and answers how many pairs disagree. ``java``: ``SpecRecords``' listing."""
    found = mismatches(java, SPECS)
    failed = 0
    for name, problems in found.items():
        if problems:
            failed += 1
            print(f"FAILED {SPEC_PAIRS}.{name}: " + "; ".join(problems))
        else:
            print(f"passed {SPEC_PAIRS}.{name}")
    print(f"{len(found) - failed} passed, {failed} failed (spec pairs: Java records and Python dataclasses)")
    if report:
        counts = json.loads(Path(report).read_text()) if Path(report).exists() else {
            "passed": 0, "failed": 0, "skipped": 0}
        counts["passed"] += len(found) - failed
        counts["failed"] += failed
        Path(report).write_text(json.dumps(counts) + "\n")
    return failed


if __name__ == "__main__":
    sys.exit(main())
