"""What a tenant's SparkPlanJob may change in the pods the operator builds: podTemplate, image, sparkConf.

Whoever may create a SparkPlanJob gets pods run with the ``planengine-driver`` ServiceAccount (which creates
pods), on the cluster's nodes, from an image the operator chose. Merged without limits, ``spec.podTemplate``
made those pods privileged, root, on the host's network or filesystem, or run them as another ServiceAccount;
``spec.image`` and JVM options (``-javaagent:``) replaced the code they run. So the operator merges an
allow-list (docs/operator.md, "What a tenant reaches") and refuses the rest, unless its configuration
(``admission``, :class:`planengine_operator.config.Admission`) widens it:

* pod ``metadata``: ``labels`` and ``annotations`` (not the operator's own ``planengine.io/`` keys, its selectors,
  nor the AppArmor/seccomp annotations);
* pod ``spec``: scheduling (``nodeSelector``, ``tolerations``, ``affinity``, ``topologySpreadConstraints``,
  ``priorityClassName``), ``imagePullSecrets``, ``volumes`` of the types Pod Security ``restricted`` allows
  (plus ``hostPath`` below ``admission.allowedHostPathPrefixes``), and a ``securityContext`` that only keeps
  the pod unprivileged (non-root ids, groups, seccomp ``RuntimeDefault``/``Localhost``);
* the ``driver`` container: ``env``, ``envFrom``, ``volumeMounts``, ``resources`` and a ``securityContext``
  that only tightens (drop capabilities, read-only root, no privilege escalation, non-root ids).

Everything else is refused with its field path: privileged settings (``privileged``, added capabilities,
``allowPrivilegeEscalation: true``, ``runAsUser: 0``, ``runAsNonRoot: false``, host namespaces, ``hostPath``,
``serviceAccountName``, ``automountServiceAccountToken``, init or ephemeral containers, ``nodeName``,
``runtimeClassName`` ...) as ``PrivilegedPodTemplate``, fields the operator does not merge (``image``,
``command``, other containers, the operator's own volumes and variables ...) as ``PodTemplateFieldNotAllowed``.

The webhook and the state machine report these through :mod:`planengine_operator.validation`; the launchers
build pods from :func:`admitted_spec`, which keeps out whatever would be refused (a spec that got in anyway).
"""

from __future__ import annotations

import copy
import dataclasses
import posixpath
import re
from typing import Any

from planengine_operator.config import Admission

PRIVILEGED = "PrivilegedPodTemplate"
NOT_ALLOWED = "PodTemplateFieldNotAllowed"
IMAGE = "ImageOverrideNotAllowed"
JVM = "SparkConfNotAllowed"

# Pod Security "restricted": the volume types that give no access beyond the namespace's own objects.
RESTRICTED_VOLUME_TYPES = ("configMap", "secret", "emptyDir", "persistentVolumeClaim", "projected", "downwardAPI",
                           "csi", "ephemeral")
# The operator's own volumes (builders.py): a same-named user volume would replace the job root or the plan.
RESERVED_VOLUMES = ("job-root", "tmp", "plan", "spark", "input")
RESERVED_LABEL_PREFIX = "planengine.io/"
# Annotations the kubelet reads as security settings (AppArmor before the securityContext field; the old seccomp
# annotations): "unconfined" there turns the profile off.
SECURITY_ANNOTATION_PREFIXES = ("container.apparmor.security.beta.kubernetes.io/",
                                "seccomp.security.alpha.kubernetes.io/")
# A projected volume may combine these; a serviceAccountToken source would put an API token where the operator
# mounts none (tool pods) or for an audience of the tenant's choice.
PROJECTED_SOURCES = ("configMap", "secret", "downwardAPI", "clusterTrustBundle")
RESERVED_ENV_PREFIX = "PLANENGINE_"

_POD_SPEC = ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "priorityClassName",
             "imagePullSecrets", "volumes", "containers", "securityContext")
_POD_SPEC_PRIVILEGED = {
    "hostNetwork": "shares the node's network", "hostPID": "sees the node's processes",
    "hostIPC": "shares the node's IPC namespace", "hostUsers": "runs without a user namespace",
    "shareProcessNamespace": "lets containers signal each other",
    "serviceAccountName": "runs the pod with another ServiceAccount's API rights",
    "serviceAccount": "runs the pod with another ServiceAccount's API rights",
    "automountServiceAccountToken": "changes which pods get an API token",
    "nodeName": "bypasses the scheduler (and its admission)", "runtimeClassName": "picks the container runtime",
    "initContainers": "runs containers the operator did not build",
    "ephemeralContainers": "runs containers the operator did not build",
}
_CONTAINER = ("name", "env", "envFrom", "volumeMounts", "resources", "securityContext")
_POD_SECURITY = ("runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "supplementalGroups", "fsGroupChangePolicy",
                 "seccompProfile")
_CONTAINER_SECURITY = ("runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                       "allowPrivilegeEscalation", "capabilities", "seccompProfile")

# sparkConf keys that load code into, or change the command line of, the JVM and Python processes.
_JVM_KEYS = re.compile(
    r"spark\.(driver|executor|yarn\.am)\.(extraJavaOptions|defaultJavaOptions|extraClassPath|extraLibraryPath"
    r"|userClassPathFirst|plugins)"
    r"|spark\.(jars|files|archives|submit\.pyFiles|plugins|repl\.class\.uri)"
    r"|spark\.(jars|executorEnv|kubernetes\.driverEnv|pyspark|python\.(daemon|worker))\..+"
    r"|spark\.sql\.hive\.metastore\.jars(\..+)?",
    re.IGNORECASE)
# sparkConf keys that the operator sets to build the pods (spark_conf() in builders.py): a tenant's value would
# pick another API server (with the driver's token), namespace, image, executor pod template or host volume.
_POD_SHAPING_KEYS = re.compile(
    r"spark\.(master|submit\.deployMode|driver\.(host|bindAddress|port|blockManager\.port))"
    r"|spark\.kubernetes\..+", re.IGNORECASE)
# Executor sizing under spark.kubernetes.*: no access beyond the pods' own resources.
_HARMLESS_KUBERNETES_KEYS = ("spark.kubernetes.executor.request.cores", "spark.kubernetes.executor.limit.cores",
                             "spark.kubernetes.memoryOverheadFactor", "spark.kubernetes.allocation.batch.size",
                             "spark.kubernetes.allocation.batch.delay", "spark.kubernetes.executor.deleteOnTermination")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing the configuration does not let a tenant ask for: where, why (a reason), what to do."""

    field: str
    reason: str
    message: str


def findings(spec: dict[str, Any], policy: Admission) -> list[Finding]:
    """Everything in ``spec`` (a SparkPlanJob's spec as stored) that ``policy`` refuses, in field order.

    >>> [f.field for f in findings({"podTemplate": {"spec": {"hostNetwork": True}}, "image": "x"}, Admission())]
    ['spec.image', 'spec.podTemplate.spec.hostNetwork']
    """
    found: list[Finding] = []
    if spec.get("image") is not None and not policy.allowImageOverride:
        found.append(Finding("spec.image", IMAGE,
                             "spec.image replaces the engine image of the operator's catalog, which this operator "
                             "does not allow (admission.allowImageOverride: false); remove spec.image, or ask the "
                             "administrator to add the image to the engine catalog as an engine version"))
    found += sparkconf_findings(spec.get("sparkConf"), policy)
    template = spec.get("podTemplate")
    if template is not None:
        found += template_findings(template, policy)
    return found


def sparkconf_findings(conf: Any, policy: Admission) -> list[Finding]:
    """sparkConf keys ``policy`` refuses: code loading (``allowJvmOptions``) and pod-shaping keys (only with
    ``allowPrivilegedPodTemplate``).

    >>> [f.reason for f in sparkconf_findings({"spark.driver.extraJavaOptions": "-javaagent:/x.jar",
    ...     "spark.sql.shuffle.partitions": "8", "spark.kubernetes.namespace": "kube-system"}, Admission())]
    ['SparkConfNotAllowed', 'PrivilegedPodTemplate']
    """
    if not isinstance(conf, dict):
        return []
    found = []
    for key in conf:
        text = str(key)
        field = f"spec.sparkConf[{text}]"
        if _JVM_KEYS.fullmatch(text) and not policy.allowJvmOptions:
            found.append(Finding(field, JVM, f"sparkConf key {text!r} loads code or changes the JVM or Python "
                                             "command line of the job's pods, which this operator does not allow "
                                             "(admission.allowJvmOptions: false); remove it"))
        elif _POD_SHAPING_KEYS.fullmatch(text) and text not in _HARMLESS_KUBERNETES_KEYS \
                and not policy.allowPrivilegedPodTemplate:
            found.append(Finding(field, PRIVILEGED, f"sparkConf key {text!r} is set by the operator to build the "
                                                    "driver and executor pods (master, namespace, image, pod "
                                                    "templates, volumes); remove it"))
    return found


def template_findings(template: Any, policy: Admission, field: str = "spec.podTemplate") -> list[Finding]:
    """What ``policy`` refuses in a podTemplate (nothing with ``allowPrivilegedPodTemplate``)."""
    if policy.allowPrivilegedPodTemplate:
        return []
    if not isinstance(template, dict):
        return [Finding(field, NOT_ALLOWED, f"{field} must be an object (a partial Pod manifest)")]
    found: list[Finding] = []
    for key, value in template.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            found += _metadata(value, f"{field}.metadata")
        elif key == "spec":
            found += _pod_spec(value, policy, f"{field}.spec")
        else:
            found.append(_not_allowed(f"{field}.{key}", "only metadata and spec of a podTemplate are merged"))
    return found


def _not_allowed(field: str, why: str) -> Finding:
    return Finding(field, NOT_ALLOWED, f"{field} is not merged into the job's pods: {why}; remove it (docs/operator.md"
                                       ", \"What a tenant reaches\", lists what a podTemplate may set)")


def _privileged(field: str, why: str) -> Finding:
    return Finding(field, PRIVILEGED, f"{field} {why}, which this operator does not allow for SparkPlanJobs "
                                      "(admission.allowPrivilegedPodTemplate: false); remove it")


def _metadata(metadata: Any, field: str) -> list[Finding]:
    if not isinstance(metadata, dict):
        return [_not_allowed(field, "it must be an object")]
    found = []
    for key, value in metadata.items():
        if key not in ("labels", "annotations"):
            found.append(_not_allowed(f"{field}.{key}", "only labels and annotations are merged"))
        elif not isinstance(value, dict):
            found.append(_not_allowed(f"{field}.{key}", "it must be a map of strings"))
        else:
            found += [_not_allowed(f"{field}.{key}[{name}]", f"keys under {RESERVED_LABEL_PREFIX} belong to the "
                                                             "operator (its selectors and bookkeeping)")
                      for name in value if str(name).startswith(RESERVED_LABEL_PREFIX)]
            found += [_privileged(f"{field}.{key}[{name}]", "sets a container's AppArmor or seccomp profile")
                      for name in value if str(name).startswith(SECURITY_ANNOTATION_PREFIXES)]
    return found


def _pod_spec(spec: Any, policy: Admission, field: str) -> list[Finding]:
    if not isinstance(spec, dict):
        return [_not_allowed(field, "it must be an object")]
    found: list[Finding] = []
    for key, value in spec.items():
        where = f"{field}.{key}"
        if key in _POD_SPEC_PRIVILEGED:
            found.append(_privileged(where, _POD_SPEC_PRIVILEGED[key]))
        elif key not in _POD_SPEC:
            found.append(_not_allowed(where, f"a podTemplate's spec may set {', '.join(_POD_SPEC)}"))
        elif key == "volumes":
            found += _volumes(value, policy, where)
        elif key == "containers":
            found += _containers(value, where)
        elif key == "securityContext":
            found += _security_context(value, _POD_SECURITY, where)
    return found


def _items(value: Any, field: str) -> tuple[list[tuple[str, dict[str, Any]]], list[Finding]]:
    """(field path, item) of a list of objects, or the finding that it is not one."""
    if not isinstance(value, list):
        return [], [_not_allowed(field, "it must be a list")]
    items, found = [], []
    for index, item in enumerate(value):
        if isinstance(item, dict):
            items.append((f"{field}[{index}]", item))
        else:
            found.append(_not_allowed(f"{field}[{index}]", "it must be an object"))
    return items, found


def _volumes(volumes: Any, policy: Admission, field: str) -> list[Finding]:
    items, found = _items(volumes, field)
    for where, volume in items:
        name = volume.get("name")
        if name in RESERVED_VOLUMES:
            found.append(_not_allowed(f"{where}.name", f"volume {name!r} is the operator's own (the job root, the "
                                                       "plan, the executor template, /tmp); pick another name"))
        for kind in [k for k in volume if k != "name"]:
            if kind == "hostPath":
                found += _host_path(volume[kind], policy, f"{where}.hostPath")
            elif kind == "projected":
                found += _projected(volume[kind], f"{where}.projected")
            elif kind not in RESTRICTED_VOLUME_TYPES:
                found.append(_privileged(f"{where}.{kind}", f"is a {kind} volume (a podTemplate may add "
                                                           f"{', '.join(RESTRICTED_VOLUME_TYPES)} volumes, and "
                                                           "hostPath volumes the operator's configuration allows)"))
    return found


def _host_path(source: Any, policy: Admission, field: str) -> list[Finding]:
    path = source.get("path") if isinstance(source, dict) else None
    if isinstance(path, str) and host_path_allowed(path, policy.allowedHostPathPrefixes):
        return []
    allowed = ", ".join(policy.allowedHostPathPrefixes) or "none"
    return [_privileged(field, f"mounts the node's directory {path!r} (allowed: {allowed}, "
                               "admission.allowedHostPathPrefixes)")]


def _projected(source: Any, field: str) -> list[Finding]:
    sources = source.get("sources") if isinstance(source, dict) else None
    if sources is None:
        return []
    items, found = _items(sources, f"{field}.sources")
    for where, item in items:
        found += [_privileged(f"{where}.{kind}", f"projects a {kind} (a projected volume may combine "
                                                 f"{', '.join(PROJECTED_SOURCES)})")
                  for kind in item if kind not in PROJECTED_SOURCES]
    return found


def host_path_allowed(path: str, prefixes: list[str]) -> bool:
    """True for an absolute path without ``..`` that is one of ``prefixes`` or below one.

    >>> [host_path_allowed(p, ["/data"]) for p in ("/data", "/data/x/", "/database", "/data/../etc", "data", "/")]
    [True, True, False, False, False, False]
    """
    if not path.startswith("/") or ".." in path.split("/"):
        return False
    normal = posixpath.normpath("/" + path.lstrip("/"))
    for prefix in prefixes:
        base = posixpath.normpath("/" + prefix.lstrip("/"))
        if normal == base or normal.startswith(base.rstrip("/") + "/"):
            return True
    return False


def _containers(containers: Any, field: str) -> list[Finding]:
    items, found = _items(containers, field)
    for where, container in items:
        if container.get("name") != "driver":
            found.append(_not_allowed(f"{where}.name", "only the container named driver merges (its settings go to "
                                                       "the driver, executor and tool containers); the pods run no "
                                                       "containers the operator did not build"))
            continue
        for key, value in container.items():
            inner = f"{where}.{key}"
            if key not in _CONTAINER:
                found.append(_not_allowed(inner, f"a container may set {', '.join(_CONTAINER[1:])} (the image and "
                                                 "command are the engine's)"))
            elif key == "env":
                env, bad = _items(value, inner)
                found += bad + [_not_allowed(f"{at}.name", f"variables named {RESERVED_ENV_PREFIX}* are the "
                                                           "operator's")
                                for at, var in env if str(var.get("name", "")).startswith(RESERVED_ENV_PREFIX)]
            elif key == "volumeMounts":
                mounts, bad = _items(value, inner)
                found += bad
                for at, mount in mounts:
                    if mount.get("name") in RESERVED_VOLUMES:
                        found.append(_not_allowed(f"{at}.name", f"volume {mount.get('name')!r} is the operator's "
                                                                "own and mounted by it"))
                    if mount.get("mountPropagation") not in (None, "None"):
                        found.append(_privileged(f"{at}.mountPropagation", "propagates mounts to or from the node"))
            elif key == "securityContext":
                found += _security_context(value, _CONTAINER_SECURITY, inner)
    return found


def _security_context(context: Any, allowed: tuple[str, ...], field: str) -> list[Finding]:
    if not isinstance(context, dict):
        return [_not_allowed(field, "it must be an object")]
    found = []
    for key, value in context.items():
        where = f"{field}.{key}"
        if key == "privileged" and value is not False:
            found.append(_privileged(where, "makes the container privileged"))
        elif key == "privileged":
            continue
        elif key not in allowed:
            found.append(_privileged(where, "is a security setting a podTemplate may not change"))
        elif key in ("runAsUser", "runAsGroup") and (type(value) is not int or value < 1):
            found.append(_privileged(where, "must be a user or group id of 1 or more (0 is root)"))
        elif key == "runAsNonRoot" and value is not True:
            found.append(_privileged(where, "lets the container run as root"))
        elif key == "allowPrivilegeEscalation" and value is not False:
            found.append(_privileged(where, "lets processes gain privileges (setuid)"))
        elif key == "readOnlyRootFilesystem" and not isinstance(value, bool):
            found.append(_not_allowed(where, "it must be true or false"))
        elif key == "seccompProfile" and not (isinstance(value, dict)
                                              and value.get("type") in ("RuntimeDefault", "Localhost")):
            found.append(_privileged(where, "must be RuntimeDefault or Localhost (Unconfined turns seccomp off)"))
        elif key == "capabilities":
            if not isinstance(value, dict) or set(value) - {"drop"} or not isinstance(value.get("drop", []), list):
                found.append(_privileged(where, "may only drop capabilities, not add them"))
        elif key in ("fsGroup", "supplementalGroups") and not _ids(value):
            found.append(_not_allowed(where, "it must be a group id or a list of them"))
    return found


def _ids(value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    return all(type(v) is int and v >= 0 for v in values)


def admitted_spec(spec: dict[str, Any], policy: Admission) -> dict[str, Any]:
    """``spec`` as the launchers build pods from it: without an image override, sparkConf keys or a podTemplate
    that ``policy`` refuses. Validation reports such a spec and the state machine does not run it; this keeps a
    pod built anyway (a spec written before this policy, a race with a configuration change) unprivileged.

    >>> admitted_spec({"image": "evil", "podTemplate": {"spec": {"hostPID": True}},
    ...                "sparkConf": {"spark.executor.extraJavaOptions": "-javaagent:/a.jar", "spark.a": "1"}},
    ...               Admission())
    {'sparkConf': {'spark.a': '1'}}
    """
    result = copy.deepcopy(spec)
    if not policy.allowImageOverride:
        result.pop("image", None)
    conf = result.get("sparkConf")
    if isinstance(conf, dict):
        refused = {f.field for f in sparkconf_findings(conf, policy)}
        result["sparkConf"] = {k: v for k, v in conf.items() if f"spec.sparkConf[{k}]" not in refused}
    if result.get("podTemplate") is not None and template_findings(result["podTemplate"], policy):
        result.pop("podTemplate")
    return result
