"""The one place that says how Spark reaches an S3-compatible object store (``s3a://`` paths): Hadoop's S3A settings.

Why settings at all: S3A's defaults talk to AWS with virtual-host addressing over TLS. A store elsewhere (a test's
local server, an on-premises S3-compatible store) needs its endpoint, path-style addressing and a region named,
and every writer of a job's files must use the same ones, so they are derived here from the environment and
nowhere else:

* ``PLANENGINE_S3_ENDPOINT``: the store's URL (``http://127.0.0.1:9000``); unset means AWS's own endpoints;
* ``PLANENGINE_S3_REGION`` (else ``AWS_REGION``, else ``us-east-1``): S3A signs requests for a region and needs
  one named whenever the endpoint is not AWS's;
* ``PLANENGINE_S3_PATH_STYLE``: ``true`` (default with an endpoint) or ``false``.

Credentials are never settings: S3A's default provider chain reads ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) from the driver's environment (the operator maps a Secret
there, docs/object-store.md) or the instance's role, so no key ever enters Spark's configuration, a plan, the
event log or a log line: :func:`s3a_settings` has no key that could hold one.

The settings are applied only when a path is ``s3a://`` (:func:`use_object_store`), as session settings: Spark
copies a session's settings into the Hadoop configuration of every query it starts (checkpoints, state stores,
file sources and sinks), so a session that started before the store was known (the tests' shared session) gets
them too. This module imports no Spark: ``spark`` is whatever session object the caller holds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

log = logging.getLogger("planengine.runtime.object_store")

ENDPOINT_ENV = "PLANENGINE_S3_ENDPOINT"
REGION_ENV = "PLANENGINE_S3_REGION"
PATH_STYLE_ENV = "PLANENGINE_S3_PATH_STYLE"
#: The region S3A signs for when neither variable names one (any value works for a store that ignores it).
DEFAULT_REGION = "us-east-1"
#: URI schemes served by S3A. ``s3://`` and ``s3n://`` are other filesystems (EMR's, Hadoop 2's) and stay errors.
SCHEMES = frozenset({"s3a"})


class ObjectStoreConfigError(ValueError):
    """An object-store setting in the environment is malformed (the message names the variable)."""


def is_object_store(uri: str) -> bool:
    """Whether ``uri`` lives on an object store that S3A serves.

    >>> is_object_store("s3a://bucket/jobs/clicks"), is_object_store("/var/lib/planengine"), is_object_store("x")
    (True, False, False)
    """
    return urlparse(str(uri)).scheme.lower() in SCHEMES


@dataclass(frozen=True)
class StoreEndpoint:
    """Which store the environment names (module doc): read once here for S3A (the JVM) and boto3 (Python's own
    reads and conditional writes, ``s3_job_store``), so the two sides can never point at different stores."""

    endpoint: str | None  # None: AWS's own endpoints
    region: str | None
    path_style: bool


def store_endpoint(environ: Mapping[str, str]) -> StoreEndpoint:
    """The store ``environ`` names; ``ObjectStoreConfigError`` naming the variable when one is malformed.

    >>> store_endpoint({"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000"})
    StoreEndpoint(endpoint='http://127.0.0.1:9000', region='us-east-1', path_style=True)
    """
    region = environ.get(REGION_ENV) or environ.get("AWS_REGION") or None
    endpoint = environ.get(ENDPOINT_ENV, "").strip()
    if not endpoint:
        return StoreEndpoint(None, region, False)
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ObjectStoreConfigError(f"{ENDPOINT_ENV}={endpoint!r} is not an http:// or https:// URL; set it to "
                                     "the store's URL, e.g. http://127.0.0.1:9000, or unset it for AWS S3")
    path_style = environ.get(PATH_STYLE_ENV, "true").strip().lower()
    if path_style not in ("true", "false"):
        raise ObjectStoreConfigError(f"{PATH_STYLE_ENV}={path_style!r}: expected true or false")
    return StoreEndpoint(endpoint, region or DEFAULT_REGION, path_style == "true")


def s3a_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """Hadoop S3A settings for the store ``environ`` names (module doc); never a credential.

    >>> s3a_settings({"PLANENGINE_S3_ENDPOINT": "http://127.0.0.1:9000"})["fs.s3a.path.style.access"]
    'true'
    >>> s3a_settings({})
    {}
    """
    store = store_endpoint(environ)
    if store.endpoint is None:
        return {"fs.s3a.endpoint.region": store.region} if store.region else {}
    return {
        "fs.s3a.endpoint": store.endpoint,
        "fs.s3a.endpoint.region": store.region or DEFAULT_REGION,
        # Most S3-compatible stores serve only path-style URLs (bucket in the path, not the host name).
        "fs.s3a.path.style.access": str(store.path_style).lower(),
        "fs.s3a.connection.ssl.enabled": str(urlparse(store.endpoint).scheme == "https").lower(),
        # The SDK asks for "100 Continue" before each upload's body; stores and proxies that answer it
        # loosely fail uploads with "Status Code: 100" (seen with werkzeug-based servers). Skipping the
        # handshake costs nothing on a store that accepts the body anyway.
        "fs.s3a.connection.expect.continue": "false",
    }


def use_object_store(spark: Any, *uris: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Apply :func:`s3a_settings` to ``spark``'s session when any of ``uris`` is ``s3a://``; returns what was
    applied (empty when no URI is on an object store, so local jobs keep Spark's configuration untouched).

    Call it before the query that reads or writes those URIs starts: a running query keeps the settings it
    started with."""
    if not any(is_object_store(uri) for uri in uris):
        return {}
    settings = s3a_settings(os.environ if environ is None else environ)  # read now: set after import, in tests
    for key, value in settings.items():
        spark.conf.set(key, value)
    if settings:
        log.info("object store for %s: %s", ", ".join(u for u in uris if is_object_store(u)),
                 ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))  # no secrets: s3a_settings has none
    return settings
