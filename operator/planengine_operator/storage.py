"""Where a job root lives, as the operator sees it: a directory on a claim, or an ``s3a://bucket/prefix``.

The rules here are the CRD's rules on ``spec.storage`` in Python (``tests/operator/test_storage.py`` evaluates
both on the same URIs): the API server refuses a bad spec first, and validation (webhook and state machine) says
the same about one that got in before a rule existed. What an ``s3a://`` job root gives its pods is here too:
the store's address as ``PLANENGINE_S3_*`` values, and the credentials as references to the job's Secret, so the
operator never reads a key, and none appears in a pod spec, the job's status, an event or a log line.
"""

from __future__ import annotations

import re
from typing import Any

S3A = "s3a://"
# What the engine reads (planengine/runtime/storage/object_store.py; the operator never imports the engine).
ENDPOINT_ENV = "PLANENGINE_S3_ENDPOINT"
REGION_ENV = "PLANENGINE_S3_REGION"
PATH_STYLE_ENV = "PLANENGINE_S3_PATH_STYLE"
# (environment variable, key in storage.s3.credentialsSecret, optional): S3A's and boto3's default provider chain
# reads these variables.
CREDENTIAL_KEYS = (("AWS_ACCESS_KEY_ID", "accessKeyId", False),
                   ("AWS_SECRET_ACCESS_KEY", "secretAccessKey", False),
                   ("AWS_SESSION_TOKEN", "sessionToken", True))

# The messages of the CRD's rules on spec.storage.uri, in their order there.
URI_SCHEME_MESSAGE = (
    "storage.uri must be an absolute path, a file:/// URI or s3a://<bucket>/<prefix>; other schemes (s3://, gs://, "
    "abfs://, hdfs://) and relative paths are not supported: use s3a:// for S3 and S3-compatible stores, "
    "storage.pvc, or a path on a volume the driver mounts"
)
URI_CREDENTIALS_MESSAGE = (
    "storage.uri must not carry credentials (s3a://KEY:SECRET@bucket/...): anyone who may read the SparkPlanJob "
    "would see them; put them in a Secret with the keys accessKeyId and secretAccessKey and name it in "
    "storage.s3.credentialsSecret"
)
URI_BUCKET_MESSAGE = (
    "the bucket of an s3a:// storage.uri must be an S3 bucket name: 3 to 63 lower-case letters, digits, '.' and "
    "'-', starting and ending with a letter or digit, without '..' and not an IP address (e.g. "
    "s3a://team-a-jobs/clicks)"
)
URI_PREFIX_MESSAGE = (
    "an s3a:// storage.uri needs a prefix inside the bucket: s3a://<bucket>/<prefix>, e.g. s3a://team-a-jobs/clicks "
    "(a job root never takes a whole bucket)"
)
URI_SEGMENTS_MESSAGE = (
    "the prefix of an s3a:// storage.uri must be plain key segments: no '.' or '..' segment and no empty one "
    "(a//b), e.g. s3a://team-a-jobs/team-a/clicks"
)
S3_WITHOUT_S3A_MESSAGE = (
    "storage.s3 (endpoint, region, pathStyle, credentialsSecret) is only for an s3a:// job root: set storage.uri "
    "to s3a://<bucket>/<prefix>, or remove storage.s3"
)
ENDPOINT_MESSAGE = (
    "storage.s3.endpoint must be the http:// or https:// URL of the store's S3 API, without credentials, query or "
    "fragment, e.g. https://minio.storage.svc:9000 (leave it out for AWS S3)"
)
REGION_MESSAGE = "storage.s3.region must be a region name such as eu-west-1 (lower-case letters, digits and '-')"
# The local launcher runs the engine on this machine and keeps its own records (driver.json, the writer lock, the
# control token) in the job root as a directory; the CRD cannot know which launcher runs the job.
LOCAL_S3A_MESSAGE = (
    "this operator runs jobs with the local launcher, which keeps the job root as a directory on its own machine; "
    "an s3a:// job root needs the Kubernetes launcher: use a path (or storage.pvc) here, or run the job on an "
    "operator with launcher: kubernetes"
)
SECRET_MESSAGE = ("storage.s3.credentialsSecret must be the name of a Secret in the job's namespace (a lower-case DNS "
                  "subdomain, e.g. clicks-s3)")

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
_ENDPOINT = re.compile(r"https?://[^/?#@ ]+(/[^?# ]*)?")
_REGION = re.compile(r"[a-z0-9][a-z0-9-]*")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_s3a(uri: str | None) -> bool:
    """Whether a job root (``storage.uri``, or a resolved root) is on an object store.

    >>> is_s3a("s3a://jobs/a"), is_s3a("/data/a"), is_s3a(None)
    (True, False, False)
    """
    return bool(uri) and str(uri).startswith(S3A)


def uri_problems(uri: str) -> list[str]:
    """What is wrong with ``storage.uri``, one message per broken CRD rule (empty: fine).

    >>> uri_problems("/data/jobs/a"), uri_problems("s3a://team-a-jobs/clicks")
    ([], [])
    >>> [m.split(":")[0] for m in uri_problems("gs://b/a")]
    ['storage.uri must be an absolute path, a file']
    >>> len(uri_problems("s3a://KEY:SECRET@bucket/a"))
    1
    """
    if not (uri.startswith("/") or uri.startswith("file:///") or is_s3a(uri)):
        return [URI_SCHEME_MESSAGE]
    if not is_s3a(uri):
        return []
    authority, _, prefix = uri[len(S3A):].partition("/")
    found = []
    if "@" in authority:  # the bucket rule stays quiet: the credentials are the problem
        found.append(URI_CREDENTIALS_MESSAGE)
    elif not _BUCKET.fullmatch(authority) or ".." in authority or _IP.fullmatch(authority):
        found.append(URI_BUCKET_MESSAGE)
    if not prefix.strip("/"):
        found.append(URI_PREFIX_MESSAGE)
    elif "@" not in authority and authority:  # judged once there is a bucket and a prefix
        segments = prefix.split("/")
        if segments[-1] == "":
            segments = segments[:-1]  # one trailing slash is fine
        if any(segment in ("", ".", "..") for segment in segments):
            found.append(URI_SEGMENTS_MESSAGE)
    return found


def s3_problems(storage: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for ``storage.s3``: only with an ``s3a://`` uri, and each setting well formed.

    >>> s3_problems({"uri": "/data/a", "s3": {"region": "eu-west-1"}})[0][0]
    'spec.storage.s3'
    >>> s3_problems({"uri": "s3a://b-1/a", "s3": {"endpoint": "http://minio:9000", "credentialsSecret": "s3"}})
    []
    """
    s3 = storage.get("s3")
    if s3 is None:
        return []
    found = []
    if not is_s3a(storage.get("uri")):
        found.append(("spec.storage.s3", S3_WITHOUT_S3A_MESSAGE))
    endpoint, region, secret = s3.get("endpoint"), s3.get("region"), s3.get("credentialsSecret")
    if endpoint is not None and (len(str(endpoint)) > 2048 or not _ENDPOINT.fullmatch(str(endpoint))):
        found.append(("spec.storage.s3.endpoint", ENDPOINT_MESSAGE))
    if region is not None and (len(str(region)) > 64 or not _REGION.fullmatch(str(region))):
        found.append(("spec.storage.s3.region", REGION_MESSAGE))
    if secret is not None and (len(str(secret)) > 253 or not _DNS_SUBDOMAIN.fullmatch(str(secret))):
        found.append(("spec.storage.s3.credentialsSecret", SECRET_MESSAGE))
    return found


def s3a_root(spec: dict[str, Any]) -> str | None:
    """The ``s3a://`` job root the spec names, or None (a claim, a path, or no storage)."""
    uri = (spec.get("storage") or {}).get("uri")
    return str(uri) if is_s3a(uri) else None


def store_env(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Environment variables that point a pod's engine (and Spark's S3A) at the job's store.

    The address and region are plain values; the credentials are ``secretKeyRef`` entries, so the kubelet reads
    the Secret and the pod spec holds only its name (the session token is optional: long-lived keys have none).
    Without ``credentialsSecret``, no credential variable at all: the pod's service account supplies them (IRSA
    or another web identity). Nothing for a job root that is not on a store.

    >>> [e["name"] for e in store_env({"storage": {"uri": "s3a://b/a", "s3": {"region": "eu-west-1"}}})]
    ['PLANENGINE_S3_REGION']
    >>> store_env({"storage": {"pvc": {"claimName": "data"}}})
    []
    """
    if s3a_root(spec) is None:
        return []
    s3 = (spec.get("storage") or {}).get("s3") or {}
    env: list[dict[str, Any]] = []
    if s3.get("endpoint"):
        env.append({"name": ENDPOINT_ENV, "value": str(s3["endpoint"])})
    if s3.get("region"):
        env.append({"name": REGION_ENV, "value": str(s3["region"])})
    if s3.get("pathStyle") is not None:
        env.append({"name": PATH_STYLE_ENV, "value": "true" if s3["pathStyle"] else "false"})
    secret = s3.get("credentialsSecret")
    if secret:
        for variable, key, optional in CREDENTIAL_KEYS:
            ref: dict[str, Any] = {"name": str(secret), "key": key}
            if optional:
                ref["optional"] = True
            env.append({"name": variable, "valueFrom": {"secretKeyRef": ref}})
    return env
