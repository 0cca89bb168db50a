"""The Kafka jars: the committed lock, the checked fetch, where the engine finds them, and that the pinned
connector links against the PySpark this project runs (Maven Central serves no 4.3.0 connector: jars.lock)."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from planengine.runtime.connectors import extra_jars, maven_jars

REPO = Path(__file__).resolve().parents[3]


def test_the_lock_pins_the_connector_and_a_broker() -> None:
    connector = {a.coordinate.rsplit(":", 1)[0]: a.coordinate.rsplit(":", 1)[1]
                 for a in maven_jars.read_lock("kafka-connector")}
    assert set(connector) == {"org.apache.spark:spark-sql-kafka-0-10_2.13",
                              "org.apache.spark:spark-token-provider-kafka-0-10_2.13",
                              "org.apache.kafka:kafka-clients", "org.apache.commons:commons-pool2"}
    # The connector and its token provider come from one Spark release, of the Spark major line we run.
    spark_pin = re.search(r'"pyspark==([\d.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    sql, token = connector["org.apache.spark:spark-sql-kafka-0-10_2.13"], connector[
        "org.apache.spark:spark-token-provider-kafka-0-10_2.13"]
    assert sql == token and sql.split(".")[0] == spark_pin.split(".")[0]
    assert tuple(map(int, sql.split("."))) <= tuple(map(int, spark_pin.split(".")))
    broker = [a.coordinate for a in maven_jars.read_lock("kafka-broker")]
    assert any(c.startswith("org.apache.kafka:kafka_2.13:4.") for c in broker)
    for group in ("kafka-connector", "kafka-broker"):  # one folder per group: file names must not collide
        names = [a.file_name for a in maven_jars.read_lock(group)]
        assert len(names) == len(set(names))


def test_a_malformed_lock_line_is_named() -> None:
    with pytest.raises(maven_jars.JarCheckFailed, match=r"jars.lock:2: expected"):
        maven_jars.parse_lock("# ok\nkafka org.x:y:1 not-a-sha\n")
    with pytest.raises(maven_jars.JarCheckFailed, match="no jars in group 'nope'"):
        maven_jars.read_lock("nope")


def repository_with(tmp_path: Path, coordinate: str, content: bytes) -> tuple[str, maven_jars.Artifact]:
    """A file:// Maven repository holding one jar; the artifact pins ``content``."""
    artifact = maven_jars.Artifact("g", coordinate, hashlib.sha256(content).hexdigest())
    path = tmp_path / "repo" / artifact.path
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return (tmp_path / "repo").as_uri(), artifact


def test_fetch_checks_the_sha256_and_is_idempotent(tmp_path: Path) -> None:
    repo, artifact = repository_with(tmp_path, "org.example:thing:1.0", b"jar bytes")
    dest = tmp_path / "jars"
    assert maven_jars.fetch([artifact], dest, repo, say=False) == [dest / "thing-1.0.jar"]
    assert (dest / "thing-1.0.jar").read_bytes() == b"jar bytes"
    shutil.rmtree(tmp_path / "repo")  # a verified cache needs no repository
    assert maven_jars.fetch([artifact], dest, repo, say=False) == [dest / "thing-1.0.jar"]


def test_a_jar_that_differs_from_the_lock_is_refused_and_never_installed(tmp_path: Path) -> None:
    repo, artifact = repository_with(tmp_path, "org.example:thing:1.0", b"jar bytes")
    tampered = maven_jars.Artifact("g", artifact.coordinate, hashlib.sha256(b"other").hexdigest())
    dest = tmp_path / "jars"
    with pytest.raises(maven_jars.JarCheckFailed, match=r"has sha256 \w+, but jars\.lock pins"):
        maven_jars.fetch([tampered], dest, repo, say=False)
    assert list(dest.iterdir()) == []  # no jar, no partial file
    (dest / "thing-1.0.jar").write_bytes(b"corrupted")  # a damaged cache is replaced, not trusted
    maven_jars.fetch([artifact], dest, repo, say=False)
    assert (dest / "thing-1.0.jar").read_bytes() == b"jar bytes"


def test_the_fetch_command_fails_with_a_message(tmp_path: Path, capsys) -> None:
    assert maven_jars.main(["fetch", "no-such-group", "--dest", str(tmp_path)]) == 1
    assert "maven_jars: " in capsys.readouterr().err


def test_the_engine_finds_jars_from_the_environment_or_the_set_up_cache(tmp_path: Path, monkeypatch) -> None:
    folder, single = tmp_path / "dir", tmp_path / "one.jar"
    folder.mkdir()
    (folder / "b.jar").write_bytes(b"")
    (folder / "a.jar").write_bytes(b"")
    (folder / "notes.txt").write_bytes(b"")
    single.write_bytes(b"")
    monkeypatch.setenv(extra_jars.ENV, f"{folder}:{single},{tmp_path / 'missing.jar'}")
    assert extra_jars.extra_jars() == [folder / "a.jar", folder / "b.jar", single]
    conf = extra_jars.with_extra_jars({"spark.jars": f"/lib/x.jar,{single}"})
    assert conf["spark.jars"] == f"/lib/x.jar,{single},{folder / 'a.jar'},{folder / 'b.jar'}"

    monkeypatch.setenv(extra_jars.ENV, "")  # set and empty: no extra jars, not even the cache's
    assert extra_jars.extra_jars() == []

    monkeypatch.delenv(extra_jars.ENV)
    cache = tmp_path / "cache"
    monkeypatch.setattr(maven_jars, "CACHE", cache)
    assert extra_jars.extra_jars() == []  # nothing fetched
    wanted = [cache / "kafka-connector" / a.file_name for a in maven_jars.read_lock("kafka-connector")]
    wanted[0].parent.mkdir(parents=True)
    for jar in wanted[:-1]:
        jar.write_bytes(b"")
    assert extra_jars.extra_jars() == []  # an incomplete set would fail later, in a task: none is loaded
    wanted[-1].write_bytes(b"")
    assert extra_jars.extra_jars() == wanted
    assert extra_jars.where_searched() == f"{cache / 'kafka-connector'} (PLANENGINE_EXTRA_JARS unset)"


@pytest.mark.usefixtures("jvm_process")
def test_the_pinned_connector_links_against_the_installed_pyspark() -> None:
    """Every class the connector and its token provider refer to exists in PySpark's jars plus the lock's: the
    4.2.0 connector on Spark 4.3.0 (the broker tests exercise it; this catches a removed class at once)."""
    jars = maven_jars.cached("kafka-connector")
    assert jars is not None, "run `bash tests/setup/prepare.d/25-kafka.sh` (make test runs it)"
    jdeps = shutil.which("jdeps")
    assert jdeps is not None, "jdeps (JDK 17) is needed"
    pyspark_jars = Path(importlib.util.find_spec("pyspark").origin).parent / "jars"
    spark_jars = [str(j) for j in jars if j.name.startswith("spark-")]
    result = subprocess.run([jdeps, "--multi-release", "17", "--missing-deps", "-cp",
                             f"{pyspark_jars}/*:{':'.join(map(str, jars))}", *spark_jars],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    missing = [line for line in result.stdout.splitlines() if "not found" in line]
    assert missing == [], "\n".join(missing[:20])
