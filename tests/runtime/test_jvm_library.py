"""The JVM operator library: built against this venv's PySpark, loaded by the engine's session, runs.

Building costs one ``javac`` run (seconds), so the build test compiles once, into a temporary directory, for
a made-up Spark version label against the real PySpark jars; everything else uses the jar the session loaded.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from planengine.errors import InternalError
from planengine.runtime.jvm import build
from planengine.runtime.jvm.specs import AggCallSpec, GroupAggregateSpec, KeyedRowCountSpec, SparkType

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def private_jar_dirs(tmp_path, monkeypatch):
    """Builds read a copy of the sources and go to a temporary package dir and cache; nothing touches the real
    sources or jars."""
    import shutil

    shutil.copytree(build.SOURCES, tmp_path / "java")
    monkeypatch.setattr(build, "SOURCES", tmp_path / "java")
    monkeypatch.setattr(build, "PACKAGE_JARS", tmp_path / "package-jars")
    monkeypatch.setenv("PLANENGINE_JVM_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.usefixtures("jvm_process")  # javac
def test_build_once_then_reuse_and_rebuild_on_a_source_change(private_jar_dirs):
    real = build.current_target()
    target = build.Target("0.0-test", real.jars_dir)
    assert build.find_jar(target) is None
    jar = build.ensure_jar(target)
    assert jar == private_jar_dirs / "package-jars" / "planengine-jvm-spark0.0-test.jar"
    import zipfile

    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        info = z.read("io/planengine/jvm/build-info.properties").decode()
    assert "io/planengine/jvm/Operators.class" in names
    assert "sparkVersion=0.0-test" in info and build.source_digest(target) in info
    mtime = jar.stat().st_mtime_ns
    assert build.ensure_jar(target) == jar and jar.stat().st_mtime_ns == mtime  # up to date: no rebuild

    # A changed source changes the digest: the jar is stale and found no more (the next ensure rebuilds).
    operators = private_jar_dirs / "java" / "io" / "planengine" / "jvm" / "Operators.java"
    operators.write_text(operators.read_text() + "\n// changed\n")
    assert build.find_jar(target) is None


@pytest.mark.usefixtures("jvm_process")  # javac
def test_a_warning_fails_the_build_and_is_shown(private_jar_dirs):
    """-Xlint:all -Werror, as Spark's build: a raw type fails the build where it is written."""
    (private_jar_dirs / "java" / "io" / "planengine" / "jvm" / "RawUse.java").write_text(
        "package io.planengine.jvm;\n\nfinal class RawUse {\n"
        "  java.util.List names = new java.util.ArrayList<String>();\n}\n")
    target = build.Target("0.0-lint", build.current_target().jars_dir)
    with pytest.raises(build.JvmLibraryUnavailable) as raised:
        build.ensure_jar(target)
    assert "RawUse.java:4: warning: [rawtypes]" in str(raised.value) and "-Werror" in str(raised.value)
    assert build.find_jar(target) is None


def test_the_compile_class_path_leaves_out_jars_whose_manifest_names_missing_jars(tmp_path):
    """-Xlint:path warns about every Class-Path entry that does not exist (PySpark ships Derby's jars without
    the locale jars their manifests name); such jars are not compiled against."""
    import zipfile

    def jar(name: str, class_path: str | None) -> None:
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            manifest = "Manifest-Version: 1.0\n" + (f"Class-Path: {class_path}\n" if class_path else "")
            z.writestr("META-INF/MANIFEST.MF", manifest)

    jar("spark-sql.jar", None)
    jar("derby.jar", "derbyshared.jar derbyLocale_cs.jar der\n byLocale_de.jar")  # a continued manifest line
    jar("uses-a-shipped-one.jar", "spark-sql.jar")
    (tmp_path / "connect-repl").mkdir()
    assert build.compile_classpath(tmp_path).split(os.pathsep) == [
        str(tmp_path / "spark-sql.jar"), str(tmp_path / "uses-a-shipped-one.jar")]
    assert build._manifest_class_path(tmp_path / "derby.jar") == ["derbyshared.jar", "derbyLocale_cs.jar",
                                                                  "derbyLocale_de.jar"]


def test_a_missing_jdk_names_the_remedy(private_jar_dirs, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(private_jar_dirs / "no-jdk"))
    monkeypatch.setenv("PATH", str(private_jar_dirs / "empty-bin"))
    target = build.Target("0.0-nojdk", build.current_target().jars_dir)
    with pytest.raises(build.JvmLibraryUnavailable) as raised:
        build.ensure_jar(target)
    text = str(raised.value)
    assert "no `javac`" in text and "Spark 0.0-nojdk" in text
    assert "openjdk-17-jdk-headless" in text and "make venv" in text and "JAVA_HOME" in text


def test_the_wheel_ships_the_built_jar():
    """Built jars are git-ignored, so hatch must list them as artifacts to put them in the wheel."""
    artifacts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
        "artifacts"]
    jar = build.PACKAGE_JARS.relative_to(REPO) / build.current_target().jar_name
    import fnmatch

    assert any(fnmatch.fnmatch(str(jar), pattern) for pattern in artifacts)
    assert any(fnmatch.fnmatch(str(jar.with_suffix(".stamp")), pattern) for pattern in artifacts)


# --- in the engine's session ---------------------------------------------------------------------------------
def test_the_session_loads_the_jar_built_for_its_spark(spark):
    from planengine.runtime.jvm import build_info

    info = build_info(spark)
    target = build.current_target()
    assert info["sparkVersion"] == target.spark_version == info["runtimeSparkVersion"] == spark.version
    assert info["sourceDigest"] == build.source_digest(target)


def test_a_processor_keeps_state_across_batches_and_a_restart(spark, tmp_path):
    from planengine.runtime.jvm import run_operator

    src = tmp_path / "src"
    src.mkdir()
    collected: list[tuple] = []

    def run() -> None:
        df = spark.readStream.schema("k STRING, v INT").option("maxFilesPerTrigger", 1).json(str(src))
        out = run_operator(df, "keyedRowCount", KeyedRowCountSpec(keys=(0,)))
        query = (out.writeStream.option("checkpointLocation", str(tmp_path / "ck"))
                 .foreachBatch(lambda b, _: collected.extend(tuple(r) for r in b.collect())).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    (src / "1.json").write_text('{"k": "a", "v": 1}\n{"k": "b", "v": 2}\n{"k": "a", "v": 3}\n')
    run()
    assert sorted(collected) == [("a", 2, "+I"), ("b", 1, "+I")]
    collected.clear()
    (src / "2.json").write_text('{"k": "a", "v": 4}\n')
    os.utime(src / "2.json", (os.path.getmtime(src / "1.json") + 5,) * 2)
    run()  # a new query on the same checkpoint: the count continues from state
    assert collected == [("a", 3, "+U")]


def test_a_bad_spec_fails_on_the_driver_with_its_path(spark):
    from planengine.runtime.jvm import run_operator

    df = spark.range(3).selectExpr("CAST(id AS INT) AS f0")
    call = AggCallSpec(function="SUM", version=1, args=(5,), filter_arg=None, distinct=False,
                       result_type=SparkType("BIGINT"), constants=())
    spec = GroupAggregateSpec(grouping=(), agg_calls=(call,), output_types=(SparkType("BIGINT"),),
                              need_retraction=False, input_updating=False, generate_update_before=True,
                              mini_batch=False, state_ttl_ms=0, state_names=("accumulators", "distinctValues"))
    with pytest.raises(InternalError, match=r"\$\.aggCalls\[0\]\.args .*field 5"):
        run_operator(df, "groupAggregate", spec)
