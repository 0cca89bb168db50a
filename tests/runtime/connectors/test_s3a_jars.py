"""The S3A jars of the lock (group ``s3a``): Hadoop's own version, one AWS SDK release, nothing PySpark already ships,
and loaded by default beside the Kafka connector. That they work is tests/runtime/test_s3a_checkpoint.py's
job (a streaming query checkpointing to a local S3 server through them)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from planengine.runtime.connectors import extra_jars, maven_jars

PYSPARK_JARS = Path(importlib.util.find_spec("pyspark").origin).parent / "jars"


def s3a_versions() -> dict[str, str]:
    return {a.coordinate.rsplit(":", 1)[0]: a.coordinate.rsplit(":", 1)[1] for a in maven_jars.read_lock("s3a")}


def test_hadoop_aws_is_the_version_of_pysparks_own_hadoop() -> None:
    """hadoop-aws is compiled against one Hadoop release; a different one than hadoop-client-api's fails at run
    time (a missing method), not at start."""
    bundled = [j.name for j in PYSPARK_JARS.glob("hadoop-client-api-*.jar")]
    assert len(bundled) == 1, bundled
    hadoop = re.fullmatch(r"hadoop-client-api-([\d.]+)\.jar", bundled[0]).group(1)
    assert s3a_versions()["org.apache.hadoop:hadoop-aws"] == hadoop


def test_the_aws_sdk_modules_come_from_one_release_and_are_not_the_bundle() -> None:
    versions = s3a_versions()
    sdk = {name: version for name, version in versions.items() if name.startswith("software.amazon.awssdk:")}
    assert "software.amazon.awssdk:bundle" not in sdk, "the ~600 MB bundle: pin the individual modules instead"
    assert {"software.amazon.awssdk:s3", "software.amazon.awssdk:apache-client",
            "software.amazon.awssdk:s3-transfer-manager"} <= set(sdk)
    assert len(set(sdk.values())) == 1, f"mixed SDK versions: {sorted(set(sdk.values()))}"


def test_no_s3a_jar_duplicates_one_pyspark_ships() -> None:
    """Two versions of one library on a class path: whichever loads first wins, class by class."""
    def artifact_of(file_name: str) -> str:
        return re.sub(r"-\d[\w.]*(-[a-z]+)?\.jar$", "", file_name)

    shipped = {artifact_of(j.name) for j in PYSPARK_JARS.glob("*.jar")}
    names = [a.file_name for a in maven_jars.read_lock("s3a")]
    assert len(names) == len(set(names))
    assert sorted(n for n in names if artifact_of(n) in shipped) == []


def test_the_engine_loads_the_s3a_group_from_the_set_up_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(extra_jars.ENV, raising=False)
    monkeypatch.setattr(maven_jars, "CACHE", tmp_path)
    wanted = [tmp_path / "s3a" / a.file_name for a in maven_jars.read_lock("s3a")]
    wanted[0].parent.mkdir(parents=True)
    for jar in wanted:
        jar.write_bytes(b"")
    assert extra_jars.extra_jars() == wanted  # no Kafka connector fetched: the S3A group alone
    kafka = [tmp_path / "kafka-connector" / a.file_name for a in maven_jars.read_lock("kafka-connector")]
    kafka[0].parent.mkdir(parents=True)
    for jar in kafka:
        jar.write_bytes(b"")
    assert extra_jars.extra_jars() == kafka + wanted  # both, in DEFAULT_GROUPS order


# What the S3A jars refer to and may lack: optional features that nothing loads unless configured. The AWS CRT
# (native HTTP client, SigV4a; the prefix covers crt-core's ``crtcore`` too, which only the CRT client uses), S3
# client-side encryption and KMS (fs.s3a.encryption.algorithm=CSE-KMS), S3 Access Grants, the v1 SDK's credential
# providers (fs.s3a.aws.credentials.provider naming a com.amazonaws class), the shaded bundle's socket factory (only
# when the bundle is there), and Apache HttpClient 5 (the analytics accelerator's shaded Thrift HTTP transport, which
# S3 reads never use).
OPTIONAL_PACKAGES = ("software.amazon.awssdk.crt", "software.amazon.encryption.s3",
                     "software.amazon.awssdk.services.kms", "software.amazon.awssdk.s3accessgrants", "com.amazonaws",
                     "software.amazon.awssdk.thirdparty", "org.apache.hc.",
                     "software.amazon.s3.shaded.com.google.errorprone")


@pytest.mark.usefixtures("jvm_process")
def test_the_s3a_jars_link_against_pyspark_but_for_optional_features() -> None:
    """Every class hadoop-aws and the SDK modules refer to is in PySpark's jars plus the group, except the optional
    features above: dropping a module S3A needs fails here, not in a task on a cluster (without ``retries`` it names
    94 classes; without ``eventstream`` and ``utils-lite``, which the end-to-end test never loads, 4)."""
    jars = maven_jars.cached("s3a")
    assert jars is not None, "run `bash tests/setup/prepare.d/27-s3a.sh` (make test runs it)"
    jdeps = shutil.which("jdeps")
    assert jdeps is not None, "jdeps (JDK 17) is needed"
    result = subprocess.run([jdeps, "--multi-release", "17", "--missing-deps", "-cp",
                             f"{PYSPARK_JARS}/*:{':'.join(map(str, jars))}", *map(str, jars)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    missing = sorted({line.split("->")[1].split()[0] for line in result.stdout.splitlines()
                      if line.startswith(" ") and line.endswith("not found")})  # class lines, not jar lines
    assert missing, "jdeps reported nothing: the check would pass vacuously"
    unexpected = [name for name in missing if not name.startswith(OPTIONAL_PACKAGES)]
    assert unexpected == [], "\n".join(unexpected[:20])
