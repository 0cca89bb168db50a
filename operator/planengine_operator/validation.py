"""Semantic rules for a SparkPlanJob spec that the CRD's schema and CEL rules cannot express.

They need the operator's engine catalog or the job's status (what it runs now), which the API server does
not have. Two callers share them so they cannot disagree: the admission webhook (``webhook.py``) rejects
a create or update that breaks one, and the state machine reports the same problem on the job (status
``error``, the Degraded condition, a Warning event) when a spec got in anyway: webhook disabled,
``failurePolicy: Ignore``, a spec written before the webhook existed, or a catalog that lost a version.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from planengine_operator import builders, podpolicy, specdiff, storage
from planengine_operator.config import OperatorConfig
from planengine_operator.models import JobSpec, JobStatus
from planengine_operator.specdiff import Change

PLAN_CHANGE_MESSAGE = (
    "the program (plan, catalog or planOptions) changed; a running job keeps the plan it was compiled "
    "with because its state belongs to that topology. Create a new SparkPlanJob for the new query, or "
    "set upgradeMode: stateless to restart with the new plan and empty state"
)


SOURCE_CHANGE_MESSAGE = (
    "the content of a ConfigMap the program is read from ({refs}) changed since the plan was compiled (source "
    "hash {old}, now {new}); a running job keeps the plan it was compiled with because its state belongs to that "
    "topology. Put the previous content back, create a new SparkPlanJob for the new program, or set upgradeMode: "
    "stateless to restart with the new program and empty state"
)


COMPILED_PLAN_URI_MESSAGE = (
    "plan.compiledPlanRef.uri cannot be used with the Kubernetes launcher: the operator reads the compiled plan to "
    "record its planId and publish it, and it cannot read files on the cluster's volumes; put plan.json into a "
    "ConfigMap and use plan.compiledPlanRef.name (and .key)"
)


def storage_uri_supported(uri: str) -> bool:
    """A job root (``storage.uri``) the CRD's rules accept: a path, or a well-formed ``s3a://bucket/prefix``.

    >>> [storage_uri_supported(u) for u in ("/data/jobs/a", "file:///data/a", "s3a://bucket/a", "gs://b/a", "jobs/a")]
    [True, True, True, False, False]
    """
    return not storage.uri_problems(uri)


def is_directory_uri(uri: str) -> bool:
    """A snapshot directory the engine and the operator can both read as files (``initialSnapshot.uri``).

    >>> [is_directory_uri(u) for u in ("/data/s/s-1", "file:///data/s/s-1", "s3a://bucket/s/s-1", "s/s-1")]
    [True, True, False, False]
    """
    return uri.startswith("/") or uri.startswith("file:///")


def shown_uri(uri: str) -> str:
    """``uri`` as a message may quote it: credentials someone wrote into it (``s3a://KEY:SECRET@bucket``) are
    blanked, as the message goes to kubectl, the job's status and events.

    >>> shown_uri("s3a://AKIA:pa55@bucket/a"), shown_uri("s3a://bucket/a@b")
    ("'s3a://***@bucket/a'", "'s3a://bucket/a@b'")
    """
    scheme, sep, rest = uri.partition("://")
    authority, slash, path = rest.partition("/")
    if sep and "@" in authority:
        uri = f"{scheme}://***@{authority.rsplit('@', 1)[1]}{slash}{path}"
    return repr(uri)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One broken rule: where (a field path for the user), a machine reason, and what to do about it."""

    field: str
    reason: str
    message: str


def problems(spec: JobSpec, status: JobStatus | None, config: OperatorConfig,
             spec_job_root: str | None = None, source_hash: str | None = None) -> list[Problem]:
    """Every rule the spec breaks, most fundamental first; ``status`` is what the job runs now (None for a
    job not created yet), ``spec_job_root`` the job root the launcher derives from this spec and
    ``source_hash`` the hash of what the referenced ConfigMaps hold now (None: unknown, as in the webhook).

    >>> from planengine_operator.config import OperatorConfig
    >>> spec = JobSpec.model_validate({"engineVersion": "9.9", "plan": {"sql": "SELECT 1"}})
    >>> [p.reason for p in problems(spec, None, OperatorConfig())]
    ['UnknownEngineVersion']
    """
    status = status or JobStatus()
    found: list[Problem] = []
    target = specdiff.target_engine(spec, config.defaultEngineVersion)
    if config.engine(target) is None:
        known = ", ".join(sorted(config.engines))
        found.append(Problem(
            "spec.engineVersion", "UnknownEngineVersion",
            f"engine version {target} is not in the operator's engine catalog ({known}); use one of them",
        ))
    if spec.storage is not None:
        found += storage_problems(spec, config)
    found += field_problems(spec)
    if spec.storage is not None and spec.storage.pvc is not None:
        sub_path = builders.sub_path_problem(spec.storage.pvc.subPath)
        if sub_path:
            found.append(Problem("spec.storage.pvc.subPath", "InvalidSubPath", sub_path))
    found += [Problem(f.field, f.reason, f.message) for f in podpolicy.findings(_tenant_fields(spec), config.admission)]
    ref = spec.plan.compiledPlanRef
    if ref is not None and ref.uri and config.launcher == "kubernetes":
        found.append(Problem("spec.plan.compiledPlanRef.uri", "CompiledPlanUnreadable", COMPILED_PLAN_URI_MESSAGE))
    in_force = status.jobRoot
    # normalised: a job started when subPath ./clicks was kept as written must not read as moved now
    if in_force and spec_job_root and builders.normalized_root(spec_job_root) != builders.normalized_root(in_force):
        found.append(Problem(
            "spec.storage", "StorageImmutable",
            f"spec.storage now names job root {spec_job_root}, but the job's plan, checkpoints and snapshots are "
            f"in {in_force}; put spec.storage back, or create a new SparkPlanJob to move the job",
        ))
    if spec.initialSnapshot is not None and not is_directory_uri(spec.initialSnapshot.uri):
        found.append(Problem("spec.initialSnapshot.uri", "InitialSnapshotUnsupported",
                             f"initialSnapshot.uri must be an absolute path or a file:/// URI of a snapshot directory "
                             f"(got {spec.initialSnapshot.uri!r})"))
    if specdiff.classify(spec, status, config.defaultEngineVersion, source_hash) is Change.PLAN_CHANGED:
        if status.specHash and specdiff.program_hash(spec) != status.specHash:
            found.append(Problem("spec.plan", "PlanChangeRefused", PLAN_CHANGE_MESSAGE))
        else:
            found.append(Problem("spec.plan", "PlanChangeRefused", SOURCE_CHANGE_MESSAGE.format(
                refs=", ".join(_referenced_configmaps(spec)), old=status.sourceHash, new=source_hash)))
    return found


def storage_problems(spec: JobSpec, config: OperatorConfig) -> list[Problem]:
    """``spec.storage.uri`` and ``spec.storage.s3`` as the CRD's rules judge them, and an ``s3a://`` root on a
    launcher that cannot run one.

    >>> from planengine_operator.config import OperatorConfig
    >>> spec = JobSpec.model_validate({"plan": {"sql": "x"}, "storage": {"uri": "s3a://jobs/a"}})
    >>> [p.reason for p in storage_problems(spec, OperatorConfig(launcher="kubernetes"))]
    []
    >>> [p.reason for p in storage_problems(spec, OperatorConfig(launcher="local"))]
    ['StorageUnsupported']
    """
    assert spec.storage is not None
    found: list[Problem] = []
    uri = spec.storage.uri
    if uri is not None:
        found += [Problem("spec.storage.uri", "StorageUnsupported", f"{message} (got {shown_uri(uri)})")
                  for message in storage.uri_problems(uri)]
        if not found and storage.is_s3a(uri) and config.launcher != "kubernetes":
            found.append(Problem("spec.storage.uri", "StorageUnsupported",
                                 f"{storage.LOCAL_S3A_MESSAGE} (got {shown_uri(uri)})"))
    settings = spec.storage.model_dump(exclude_none=True)
    found += [Problem(field, "StorageUnsupported" if field == "spec.storage.s3" else "InvalidField", message)
              for field, message in storage.s3_problems(settings)]
    return found


def _referenced_configmaps(spec: JobSpec) -> list[str]:
    """The ConfigMap keys the program is read from, as ``field: name/key`` for a message."""
    refs = []
    if spec.plan.configMapRef is not None:
        refs.append(f"plan.configMapRef {spec.plan.configMapRef.name}/{spec.plan.configMapRef.key or 'script.sql'}")
    if spec.plan.compiledPlanRef is not None and spec.plan.compiledPlanRef.name:
        refs.append(f"plan.compiledPlanRef {spec.plan.compiledPlanRef.name}/{spec.plan.compiledPlanRef.key}")
    if spec.catalog is not None:
        refs.append(f"catalog.configMapRef {spec.catalog.configMapRef.name}/"
                    f"{spec.catalog.configMapRef.key or 'catalog.sql'}")
    return refs


def new_problems(new: list[Problem], old: list[Problem]) -> list[Problem]:
    """Problems a change introduces. An update that does not add one is admitted even if the object is
    already broken, so metadata writes (the operator's own annotations, finalizers) never get stuck."""
    before = {(p.field, p.reason) for p in old}
    return [p for p in new if (p.field, p.reason) not in before]


def _tenant_fields(spec: JobSpec) -> dict[str, Any]:
    """The fields :mod:`podpolicy` judges, as stored."""
    return {key: value for key, value in (("image", spec.image), ("sparkConf", spec.sparkConf),
                                          ("podTemplate", spec.podTemplate)) if value is not None}


# The CRD's patterns and bounds on the same fields (tests/operator/test_field_rules.py keeps them equal): the API
# server refuses such specs first; these catch one that got in before the rule existed or past a disabled webhook.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
CONFIGMAP_KEY = r"^[-._a-zA-Z0-9]+$"
SPARK_CONF_KEY = r"^spark\.[A-Za-z0-9_.-]+$"
PLAN_OPTION_KEY = r"^table\.plan\.[A-Za-z0-9_.-]+$"
NO_LINE_BREAK = r"^[^\r\n\x00]*$"
QUANTITY = r"^([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)(Ki|Mi|Gi|Ti|k|M|G|T)?$"
BOUNDS = {"executor.instances": (0, 1000), "executor.cores": (1, 256), "driver.cores": (1, 256)}


def field_problems(spec: JobSpec) -> list[Problem]:
    """Names, keys and numbers that Kubernetes or Spark would refuse later (or never act on).

    >>> spec = JobSpec.model_validate({"plan": {"sql": "x"}, "executor": {"instances": -1, "memory": "0"},
    ...                                "sparkConf": {"--master": "local"}})
    >>> [p.field for p in field_problems(spec)]
    ['spec.executor.instances', 'spec.executor.memory', 'spec.sparkConf[--master]']
    """
    found: list[Problem] = []

    def check(field: str, value: str | None, pattern: str, what: str, max_length: int = 253) -> None:
        if value is not None and (len(value) > max_length or not re.fullmatch(pattern, value)):
            found.append(Problem(field, "InvalidField", f"{field} {value[:80]!r} is not {what}"))

    for path, section in (("plan.configMapRef", spec.plan.configMapRef),
                          ("catalog.configMapRef", spec.catalog.configMapRef if spec.catalog else None)):
        if section is not None:
            check(f"spec.{path}.name", section.name, DNS_SUBDOMAIN, "a ConfigMap name (lower-case DNS subdomain)")
            check(f"spec.{path}.key", section.key, CONFIGMAP_KEY, "a ConfigMap key (letters, digits, '-', '_', '.')")
    compiled = spec.plan.compiledPlanRef
    if compiled is not None:
        check("spec.plan.compiledPlanRef.name", compiled.name, DNS_SUBDOMAIN, "a ConfigMap name (lower-case DNS "
                                                                              "subdomain)")
        check("spec.plan.compiledPlanRef.key", compiled.key, CONFIGMAP_KEY, "a ConfigMap key (letters, digits, "
                                                                            "'-', '_', '.')")
    if spec.storage is not None and spec.storage.pvc is not None:
        check("spec.storage.pvc.claimName", spec.storage.pvc.claimName, DNS_SUBDOMAIN,
              "a PersistentVolumeClaim name (lower-case DNS subdomain)")
    for path, (low, high) in BOUNDS.items():
        section, name = path.split(".")
        value = getattr(getattr(spec, section), name)
        if not low <= value <= high:
            found.append(Problem(f"spec.{path}", "InvalidField", f"spec.{path} must be between {low} and {high} "
                                                                 f"(got {value})"))
    for path in ("driver.memory", "executor.memory"):
        section, name = path.split(".")
        check(f"spec.{path}", getattr(getattr(spec, section), name), QUANTITY,
              "a memory size above zero (Kubernetes quantity, e.g. 2Gi)", 32)
    for key, value in spec.sparkConf.items():
        check(f"spec.sparkConf[{key}]", key, SPARK_CONF_KEY, "a Spark setting (spark. followed by letters, digits, "
                                                             "'.', '_' or '-')", 256)
        check(f"spec.sparkConf[{key}]", value, NO_LINE_BREAK, "a value on one line", 8192)
    for key in spec.planOptions:
        check(f"spec.planOptions[{key}]", key, PLAN_OPTION_KEY, "a plan option (table.plan. followed by letters, "
                                                                "digits, '.', '_' or '-')", 256)
    return found
