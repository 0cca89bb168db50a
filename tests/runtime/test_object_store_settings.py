"""The S3A settings the engine derives from the environment (planengine/runtime/storage/object_store.py), and what the
tests' local S3 server does that the design in docs/object-store.md relies on."""

from __future__ import annotations

from typing import Any

import pytest

from planengine.runtime.storage import object_store
from planengine.runtime.storage.object_store import ObjectStoreConfigError, s3a_settings, use_object_store
from tests.fixtures.object_store import S3Store


def test_a_local_store_gets_endpoint_region_path_style_and_plain_http() -> None:
    assert s3a_settings({"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000"}) == {
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.connection.expect.continue": "false",
    }
    tls = s3a_settings({"PLANENGINE_S3_ENDPOINT": "https://s3.example.net", "AWS_REGION": "eu-west-3",
                        "PLANENGINE_S3_PATH_STYLE": "False"})
    assert (tls["fs.s3a.connection.ssl.enabled"], tls["fs.s3a.endpoint.region"], tls["fs.s3a.path.style.access"]) \
        == ("true", "eu-west-3", "false")


def test_aws_itself_needs_nothing_but_an_optional_region() -> None:
    assert s3a_settings({}) == {}
    assert s3a_settings({"PLANENGINE_S3_REGION": "eu-central-1", "AWS_REGION": "us-west-2"}) == {
        "fs.s3a.endpoint.region": "eu-central-1"}


def test_credentials_in_the_environment_never_become_settings() -> None:
    environ = {"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
               "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "AWS_SESSION_TOKEN": "FwoGZXIvYXdzE"}
    settings = s3a_settings(environ)
    text = repr(settings)
    assert not any(secret in text for secret in ("AKIDEXAMPLE", "wJalrXUtnFEMI", "FwoGZXIvYXdzE"))
    assert not [k for k in settings if any(word in k for word in ("key", "secret", "token", "credential"))]


@pytest.mark.parametrize(("variable", "value", "named"), [
    ("PLANENGINE_S3_ENDPOINT", "127.0.0.1:9000", "PLANENGINE_S3_ENDPOINT='127.0.0.1:9000' is not an http"),
    ("PLANENGINE_S3_PATH_STYLE", "yes", "PLANENGINE_S3_PATH_STYLE='yes': expected true or false"),
])
def test_a_malformed_variable_is_named(variable: str, value: str, named: str) -> None:
    environ = {"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000", variable: value}
    with pytest.raises(ObjectStoreConfigError, match=named):
        s3a_settings(environ)


class RecordingSession:
    """Stands in for a SparkSession: records ``spark.conf.set``."""

    def __init__(self) -> None:
        self.conf = self
        self.set_calls: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.set_calls[key] = value


def test_settings_are_applied_only_when_a_path_is_on_the_object_store() -> None:
    environ = {"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000"}
    local = RecordingSession()
    assert use_object_store(local, "/var/lib/planengine/jobs/a", "file:///tmp/x", environ=environ) == {}
    assert local.set_calls == {}
    remote = RecordingSession()
    applied = use_object_store(remote, "/tmp/in", "s3a://bucket/jobs/a", environ=environ)
    assert remote.set_calls == applied == s3a_settings(environ)
    assert not object_store.is_object_store("s3://bucket/a"), "s3:// is EMR's filesystem, not S3A"


def test_the_local_store_refuses_a_second_create_of_one_key(s3_store: S3Store) -> None:
    """``If-None-Match: *`` (S3's conditional create): the primitive the fencing design builds on
    (docs/object-store.md, "One writer without POSIX"). The second writer of a key gets 412, and the first
    writer's bytes stay."""
    from botocore.exceptions import ClientError

    client: Any = s3_store.client()
    key = f"{s3_store.prefix('fence')}/runs/r1/writer"
    client.put_object(Bucket=s3_store.bucket, Key=key, Body=b"driver-a", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=s3_store.bucket, Key=key, Body=b"driver-b", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert client.get_object(Bucket=s3_store.bucket, Key=key)["Body"].read() == b"driver-a"


def test_an_s3a_table_on_a_missing_bucket_or_a_dead_endpoint_is_one_line_naming_the_table(
        s3_store: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, Spark met the missing bucket inside the query and the user got a Java stack trace; now the source is
    checked with one LIST before its query is built (no Spark needed to show it: the session only records)."""
    from types import SimpleNamespace

    from planengine.connectors.filesystem import FileSystemTableFactory
    from planengine.runtime.connectors.filesystem import read_filesystem
    from planengine.runtime.storage.s3_job_store import ObjectStoreError
    from tests.connectors.builders import build_ctx

    def source(path: str) -> Any:
        return FileSystemTableFactory().create_dynamic_table_source(
            build_ctx(options={"connector": "filesystem", "path": path, "format": "json"}))

    with pytest.raises(ObjectStoreError) as err:
        read_filesystem(source("s3a://no-such-bucket-here/clicks"), SimpleNamespace(spark=RecordingSession()), None)
    text = err.value.render()
    assert "bucket 'no-such-bucket-here' does not exist" in text
    assert "the 'path' of table `cat`.`db`.`t`" in text and "fix the bucket name in the 'path' of table" in text
    monkeypatch.setenv("PLANENGINE_S3_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ObjectStoreError, match=r"cannot reach the object store at http://127\.0\.0\.1:9"):
        read_filesystem(source(s3_store.uri("clicks")), SimpleNamespace(spark=RecordingSession()), None)
