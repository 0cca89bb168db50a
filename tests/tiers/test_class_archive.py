"""The test JVMs' class archive is named after what it depends on and is only named to the JVM when built."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.setup import class_archive


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A fake JDK binary and PySpark jars folder, and an archive folder of the test's own."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"core")
    (jars / "scala-library.jar").write_bytes(b"scala")
    monkeypatch.setattr(class_archive, "_java", lambda: java)
    monkeypatch.setattr(class_archive, "_spark_jars", lambda: jars)
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", tmp_path / "archives")
    return java, jars


def test_the_key_changes_with_a_jar_the_jdk_or_the_options(machine: tuple[Path, Path]) -> None:
    java, jars = machine
    first = class_archive.archive_key(java, jars, "-XX:+UseSerialGC")
    assert class_archive.archive_key(java, jars, "-XX:+UseSerialGC") == first
    assert class_archive.archive_key(java, jars, "-XX:+UseG1GC") != first
    (jars / "spark-core.jar").write_bytes(b"core, a new build")
    second = class_archive.archive_key(java, jars, "-XX:+UseSerialGC")
    assert second != first
    os.utime(java, ns=(1, 1))
    assert class_archive.archive_key(java, jars, "-XX:+UseSerialGC") != second


def test_no_archive_no_option_and_a_built_one_is_mapped_without_messages(machine: tuple[Path, Path]) -> None:
    assert class_archive.archive_options("-XX:+UseSerialGC") == ""
    path = class_archive.archive_path("-XX:+UseSerialGC")
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    options = class_archive.archive_options("-XX:+UseSerialGC").split()
    # -Xshare:auto: a JVM that cannot use the archive loads from the jars; its CDS messages would reach stdout.
    assert options == [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", "-Xlog:cds*=off"]
    assert class_archive.archive_options("-XX:+UseG1GC") == ""  # another JVM's options: another archive


def test_no_jdk_or_pyspark_builds_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(class_archive, "_java", lambda: None)
    assert class_archive.archive_path("") is None
    assert class_archive.build("", quiet=True) is None
    assert "nothing built" in capsys.readouterr().err


def test_a_workload_that_overruns_builds_nothing_and_fails_nothing(machine: tuple[Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    def overrun(*args: object, **kwargs: object) -> None:
        raise class_archive.subprocess.TimeoutExpired(cmd="python", timeout=1)

    monkeypatch.setattr(class_archive.subprocess, "run", overrun)
    assert class_archive.build("-XX:+UseSerialGC", quiet=True) is None
    assert "took over" in capsys.readouterr().err
    assert not list((class_archive.ARCHIVE_DIR).glob("*"))
