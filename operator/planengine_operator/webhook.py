"""The validating admission webhook: kopf's webhook server, the chart's TLS Secret, the shared rules.

The chart (``webhook.enabled``) sets three variables on the operator container: the port, the URL path
the ValidatingWebhookConfiguration calls, and the directory where the TLS Secret (``tls.crt``,
``tls.key``) is mounted. kopf serves ``POST <root>/<handler id>``, so the last path segment is the
handler's id and the rest is the server's root path: the API server's URL and kopf's route are the same
string by construction. Without the port variable no handler is registered at all, because kopf refuses
to start with admission handlers but no server.

What a request is judged by lives in :mod:`planengine_operator.validation`, shared with the reconciler.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kopf
import pydantic

from planengine_operator import validation
from planengine_operator.config import OperatorConfig
from planengine_operator.models import JobSpec, JobStatus

PORT_ENV = "PLANENGINE_OPERATOR_WEBHOOK_PORT"
PATH_ENV = "PLANENGINE_OPERATOR_WEBHOOK_PATH"
CERT_DIR_ENV = "PLANENGINE_OPERATOR_WEBHOOK_CERT_DIR"
ADDR_ENV = "PLANENGINE_OPERATOR_WEBHOOK_ADDR"  # not set by the chart: all interfaces in a pod
DEFAULT_PATH = "/validate-sparkplanjob"

JobRootOf = Callable[[str, str, dict[str, Any]], str]


@dataclasses.dataclass(frozen=True)
class WebhookSettings:
    port: int
    path: str
    cert_dir: Path | None
    addr: str = "0.0.0.0"

    @property
    def handler_id(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def root(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[0]


def settings_from_env(env: Mapping[str, str] = os.environ) -> WebhookSettings | None:
    """The chart's webhook settings, or None when the webhook is disabled (no port).

    >>> settings_from_env({PORT_ENV: "9443", PATH_ENV: "/hooks/validate-spj"}).handler_id
    'validate-spj'
    >>> settings_from_env({}) is None
    True
    """
    port = env.get(PORT_ENV)
    if not port:
        return None
    path = "/" + (env.get(PATH_ENV) or DEFAULT_PATH).strip("/")
    cert_dir = env.get(CERT_DIR_ENV)
    return WebhookSettings(int(port), path, Path(cert_dir) if cert_dir else None, env.get(ADDR_ENV) or "0.0.0.0")


def server(settings: WebhookSettings) -> kopf.WebhookServer:
    """HTTPS with the mounted Secret; kopf re-reads the files when the Secret is renewed."""
    if settings.cert_dir is None:
        raise ValueError(f"{CERT_DIR_ENV} is not set: the API server only calls webhooks over HTTPS; mount a "
                         "kubernetes.io/tls Secret and point the variable at it")
    cert, key = settings.cert_dir / "tls.crt", settings.cert_dir / "tls.key"
    missing = [str(p) for p in (cert, key) if not p.is_file()]
    if missing:
        raise ValueError(f"webhook TLS files missing: {', '.join(missing)} (the chart mounts the Secret named by "
                         "webhook.certificate.secretName, or cert-manager's, there)")
    return kopf.WebhookServer(addr=settings.addr, port=settings.port, path=settings.root or None,
                              certfile=str(cert), pkeyfile=str(key))


def review(operation: str, namespace: str, name: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
           config: OperatorConfig, job_root_of: JobRootOf) -> list[validation.Problem]:
    """The problems that make the request inadmissible (empty: admit).

    A create is judged by its spec; an update by what it adds to the object's problems, against the status
    the job has now (what it runs). Status writes do not reach the webhook (its rules name the main
    resource only).
    """
    if new is None:
        return []
    spec_dict = dict(new.get("spec") or {})
    try:
        spec = JobSpec.model_validate(spec_dict)
    except pydantic.ValidationError as exc:
        return [validation.Problem("spec." + ".".join(str(part) for part in error["loc"]), "Invalid",
                                   f"{error['msg']} (got {str(error.get('input'))[:80]!r})")
                for error in exc.errors()]
    status = JobStatus.read((old or {}).get("status")) if operation == "UPDATE" else JobStatus()
    found = validation.problems(spec, status, config, job_root_of(namespace, name, spec_dict))
    if operation != "UPDATE" or not old:
        return found
    try:
        old_spec = JobSpec.model_validate(dict(old.get("spec") or {}))
    except pydantic.ValidationError:
        return found
    before = validation.problems(old_spec, status, config, job_root_of(namespace, name, dict(old.get("spec") or {})))
    return validation.new_problems(found, before)


def admit(operation: str, namespace: str, name: str, new: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
          config: OperatorConfig, job_root_of: JobRootOf) -> None:
    """Raise the admission error kopf turns into ``allowed: false`` with the message for kubectl."""
    found = review(operation, namespace, name, new, old, config, job_root_of)
    if found:
        raise kopf.AdmissionError("; ".join(f"{p.field}: {p.message} ({p.reason})" for p in found), code=422)
