"""``S3JobStore``: a job root under an ``s3a://bucket/prefix`` on an S3-compatible object store, through boto3.

Why boto3 and not the JVM's S3A: the job root's own objects (the lock, markers, manifests) are read and written
by processes that run no JVM (``planengine snapshots``, ``check``, the operator's tool pods), and the storage room
never imports Spark. The store is the one the environment names for S3A too (``object_store.store_endpoint``), and
credentials come from boto3's default chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, web identity, the
instance role), the chain S3A uses: no key is ever an argument, a setting or a log line.

The guarantees of ``job_store`` map onto S3 one to one: every PUT is atomic; create-if-absent is
``If-None-Match: *`` (AWS S3 since August 2024); compare-and-swap is ``If-Match: <ETag>`` on PUT and DELETE.
A store that silently ignores those headers would make two writers both "win", so :meth:`S3JobStore.probe`
checks, once per job root, that the store refuses each conditional write it should, and the root is refused
on a store that does not (``docs/object-store.md``, "One writer without POSIX").
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from planengine.errors import UserError
from planengine.runtime.storage.job_store import AlreadyExists, Conflict, Versioned
from planengine.runtime.storage.object_store import ENDPOINT_ENV, SCHEMES, store_endpoint

#: Answers that mean "your condition did not hold": the precondition failed, the key is gone, or another
#: conditional write to the key is in flight (S3's 409 ConditionalRequestConflict: one of the two will lose).
_LOST = {"PreconditionFailed", "NoSuchKey", "ConditionalRequestConflict", "412", "404", "409"}
PROBE_PREFIX = ".planengine-probe/"


@dataclass(frozen=True)
class StoredObject:
    """One object under the root as a LIST reports it: its job-root key, ETag and size. A snapshot manifest
    records these, so a fork can tell that a file it names is still the one the snapshot saw."""

    key: str
    etag: str
    size: int


class ObjectStoreError(UserError):
    """The store refused or could not be reached; the message names the bucket/endpoint and what to fix."""


def parse_s3a_uri(uri: str) -> tuple[str, str]:
    """``s3a://bucket/a/b/`` -> ``("bucket", "a/b")``; a ``UserError`` for anything else.

    >>> parse_s3a_uri("s3a://jobs/team-a/clicks/")
    ('jobs', 'team-a/clicks')
    """
    parsed = urlparse(uri)
    if parsed.scheme.lower() not in SCHEMES or not parsed.netloc:
        raise UserError(f"{uri!r} is not an s3a://bucket/prefix URI", hint="write it as s3a://<bucket>/<prefix>")
    prefix = parsed.path.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise UserError(f"{uri!r} has an empty, '.' or '..' path segment",
                        hint="an object key has no relative segments: name the prefix plainly")
    return parsed.netloc, prefix


def object_at(uri: str, *, named_by: str) -> tuple[S3JobStore, str]:
    """The store holding the single object ``s3a://bucket/prefix/name`` and the object's key in it: how a command
    given a file's URI (``check --plan s3a://…/plan.json``, ``migrate -o s3a://…/runs/<id>/plan.json``) reads or
    writes it with the same client, settings and credentials as the job root's own objects."""
    parent, _, name = uri.rstrip("/").rpartition("/")
    if not name or parent.endswith(":/") or parent.endswith(":"):
        raise UserError(f"{uri!r} names no object", hint=f"{named_by} takes s3a://<bucket>/<prefix>/<file>")
    return S3JobStore(parent, named_by=named_by), name


class S3JobStore:
    """Whole objects under ``s3a://bucket/prefix`` with S3's conditional writes (module doc)."""

    def __init__(self, uri: str, *, environ: Mapping[str, str] | None = None, client: Any = None,
                 named_by: str = "--job-root / storage.uri"):
        self.uri = uri.rstrip("/")
        self.named_by = named_by  # the option a user fixes when the bucket is wrong, for messages
        self.bucket, self.prefix = parse_s3a_uri(uri)
        self._endpoint = store_endpoint(os.environ if environ is None else environ)
        self._client = client if client is not None else self._new_client()

    def __repr__(self) -> str:
        return f"S3JobStore({self.uri!r})"

    def _new_client(self) -> Any:
        try:
            import boto3  # noqa: PLC0415 — boto3 is an optional extra (planengine[s3])
            from botocore.config import Config  # noqa: PLC0415 — boto3 is an optional extra
        except ImportError:
            raise UserError(f"{self.uri} ({self.named_by}) is on an object store, and boto3 is not installed",
                            hint="install planengine with its s3 extra: pip install 'planengine[s3]'") from None
        config = Config(s3={"addressing_style": "path" if self._endpoint.path_style else "auto"},
                        retries={"mode": "standard", "max_attempts": 5}, connect_timeout=10, read_timeout=30)
        return boto3.client("s3", endpoint_url=self._endpoint.endpoint, region_name=self._endpoint.region,
                            config=config)

    def key(self, key: str) -> str:
        """The object key of a job-root key; job-root keys are relative and never leave the prefix."""
        parts = key.split("/")
        if not key or key.startswith("/") or any(p in (".", "..") for p in parts) or "" in parts[:-1]:
            raise ValueError(f"job store key {key!r} must be a relative path inside the root")
        return f"{self.prefix}/{key}" if self.prefix else key

    def describe(self) -> str:
        return self.uri

    def location(self, key: str) -> str:
        return f"{self.uri}/{key}"

    # -- the JobStore interface --------------------------------------------------------------------------
    def read(self, key: str) -> Versioned | None:
        try:
            answer = self._call("get_object", key, Bucket=self.bucket, Key=self.key(key))
        except _Lost:
            return None
        return Versioned(answer["Body"].read(), answer["ETag"])

    def create(self, key: str, data: bytes) -> Versioned:
        try:
            answer = self._call("put_object", key, Bucket=self.bucket, Key=self.key(key), Body=data, IfNoneMatch="*")
        except _Lost:
            raise AlreadyExists(self.location(key)) from None
        return Versioned(data, answer["ETag"])

    def replace(self, key: str, data: bytes, *, expected: str) -> Versioned:
        try:
            answer = self._call("put_object", key, Bucket=self.bucket, Key=self.key(key), Body=data, IfMatch=expected)
        except _Lost:
            raise Conflict(f"{self.location(key)} changed or is gone") from None
        return Versioned(data, answer["ETag"])

    def delete(self, key: str, *, expected: str) -> None:
        try:
            self._call("delete_object", key, Bucket=self.bucket, Key=self.key(key), IfMatch=expected)
        except _Lost:
            raise Conflict(f"{self.location(key)} changed or is gone") from None

    def list(self, prefix: str) -> list[str]:
        base = self.key(prefix.rstrip("/")) + "/" if prefix.strip("/") else (f"{self.prefix}/" if self.prefix else "")
        cut = len(self.prefix) + 1 if self.prefix else 0
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base)
            return sorted(obj["Key"][cut:] for page in pages for obj in page.get("Contents", []))
        except Exception as exc:
            raise self._explain(exc, prefix) from None

    # -- whole-tree operations (snapshots and forks; unconditional: their keys belong to one run) ------------
    def object_uri(self, key: str) -> str:
        """What Spark is given for ``key``: ``s3a://bucket/prefix/key``."""
        return f"s3a://{self.bucket}/{self.key(key)}"

    def list_objects(self, prefix: str) -> list[StoredObject]:
        """Every object under ``prefix`` with its ETag and size, sorted by key: one LIST per 1,000 keys."""
        base = self.key(prefix.rstrip("/")) + "/"
        cut = len(self.prefix) + 1 if self.prefix else 0
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base)
            found = [StoredObject(obj["Key"][cut:], obj["ETag"], int(obj["Size"]))
                     for page in pages for obj in page.get("Contents", [])]
        except Exception as exc:
            raise self._explain(exc, prefix) from None
        return sorted(found, key=lambda o: o.key)

    def list_children(self, prefix: str) -> list[str]:
        """The names one level below ``prefix`` (``runs/`` -> run ids), with a delimiter: the run and snapshot
        listings never page through every checkpoint file."""
        base = self.key(prefix.rstrip("/")) + "/"
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base,
                                                                            Delimiter="/")
            names = {p["Prefix"][len(base):].rstrip("/") for page in pages for p in page.get("CommonPrefixes", [])}
        except Exception as exc:
            raise self._explain(exc, prefix) from None
        return sorted(n for n in names if n)

    def put(self, key: str, data: bytes) -> Versioned:
        """An unconditional whole-object write, for objects only their own run writes (a fork's rewritten logs,
        ``driver.json``)."""
        answer = self._call("put_object", key, Bucket=self.bucket, Key=self.key(key), Body=data)
        return Versioned(data, answer["ETag"])

    def copy(self, source: str, target: str, *, source_etag: str) -> str:
        """Server-side copy (no byte passes through this process); ``Conflict`` when ``source`` is gone or no
        longer ``source_etag`` (``CopySourceIfMatch``: AWS S3 checks it in the copy itself). The new ETag."""
        try:
            answer = self._call("copy_object", source, Bucket=self.bucket, Key=self.key(target),
                                CopySource={"Bucket": self.bucket, "Key": self.key(source)},
                                CopySourceIfMatch=source_etag)
        except _Lost:
            raise Conflict(f"{self.location(source)} changed or is gone") from None
        return str(answer["CopyObjectResult"]["ETag"])

    def delete_keys(self, keys: Iterable[str]) -> int:
        """Delete ``keys`` (1,000 per request), unconditionally; how many were asked for."""
        batch = [{"Key": self.key(k)} for k in keys]
        for start in range(0, len(batch), 1000):
            chunk = batch[start:start + 1000]
            try:
                self._client.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True})
            except Exception as exc:
                raise self._explain(exc, chunk[0]["Key"]) from None
        return len(batch)

    # -- checks ------------------------------------------------------------------------------------------
    def check_reachable(self) -> None:
        """One LIST of at most one key: a missing bucket, refused credentials or an unreachable endpoint become one
        line naming what to fix, before Spark meets them as a stack trace inside a query (an empty prefix is fine:
        a source may not have files yet)."""
        try:
            self._client.list_objects_v2(Bucket=self.bucket, Prefix=f"{self.prefix}/" if self.prefix else "",
                                         MaxKeys=1)
        except Exception as exc:
            raise self._explain(exc, "") from None

    def probe(self) -> None:
        """Refuse a store that ignores conditional writes: each of the three must be refused on a fresh key.

        Costs five requests on a key under ``.planengine-probe/``, deleted again whatever happens."""
        key = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
        self.create(key, b"probe")
        attempts = (("If-None-Match: * on PUT", AlreadyExists, lambda: self.create(key, b"second")),
                    ("If-Match on PUT", Conflict, lambda: self.replace(key, b"third", expected='"0"')),
                    ("If-Match on DELETE", Conflict, lambda: self.delete(key, expected='"0"')))
        ignored = []
        try:
            for name, refusal, attempt in attempts:
                try:
                    attempt()
                    ignored.append(name)
                except refusal:
                    pass
        finally:
            self._call("delete_object", key, Bucket=self.bucket, Key=self.key(key))
        if ignored:
            raise ObjectStoreError(
                f"the object store of {self.uri} ignores conditional writes ({', '.join(ignored)}): planengine "
                "cannot keep one writer per job root on it",
                hint="use a store that supports S3 conditional writes (AWS S3, or a compatible store that honours "
                     "If-None-Match and If-Match), or a job root on a ReadWriteMany volume")

    # -- helpers -----------------------------------------------------------------------------------------
    def _call(self, operation: str, key: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, operation)(**kwargs)
        except Exception as exc:
            code = _error_code(exc)
            if code in _LOST:
                raise _Lost(code) from None
            raise self._explain(exc, key) from None

    def _explain(self, exc: Exception, key: str) -> ObjectStoreError:
        """One line for a refusal or an unreachable store, naming what to fix (never a botocore traceback)."""
        code = _error_code(exc)
        where = self._endpoint.endpoint or "AWS S3"
        what = self.location(key) if key else self.uri
        if code == "NoSuchBucket":
            return ObjectStoreError(f"bucket {self.bucket!r} does not exist at {where} ({self.uri}, from "
                                    f"{self.named_by})",
                                    hint=f"create the bucket, or fix the bucket name in {self.named_by}")
        if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "ExpiredToken"):
            return ObjectStoreError(f"{where} refused access to {what} ({code})",
                                    hint="check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or the "
                                         "pod's role) and that they may read and write the bucket")
        if code is None and type(exc).__name__ in ("EndpointConnectionError", "ConnectTimeoutError",
                                                   "ReadTimeoutError", "ConnectionClosedError"):
            return ObjectStoreError(f"cannot reach the object store at {where} for {self.uri}: {exc}",
                                    hint=f"check {ENDPOINT_ENV} (or storage.s3.endpoint) and that the store is up")
        if type(exc).__name__ == "NoCredentialsError":
            return ObjectStoreError(f"no credentials for the object store of {self.uri}",
                                    hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the operator maps "
                                         "storage.s3.credentialsSecret to them), or give the pod a role")
        return ObjectStoreError(f"object store request for {what} failed: {code or exc}",
                                hint=f"check the store at {where} and {self.uri} ({self.named_by})")


class _Lost(Exception):
    """A condition did not hold (the key exists, changed or is gone); the public methods say which."""


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return str(code) if code else (str(status) if status else None)
