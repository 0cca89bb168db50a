"""Spark on Kubernetes in the pod runner: the driver's ``k8s://`` settings are checked, then executors are pods
or run in-process.

A driver pod asks Spark for executor pods (``--conf spark.master=k8s://...``). On a node that runs executors as
pods (``Kubelet.executor_pods``, real API server only) the driver's Spark creates them through the API server, the
scheduler places them and the kubelet runs them like any pod (``planengine-spark-executor``). Each is another JVM
on a machine the tests already load, so by default a node runs the driver with ``spark.master=local[N]`` (N =
executors x cores, capped) in their place. Either way the settings are first checked against the pod and the
API, so a driver that would fail on a cluster fails here. Checked:

* ``spark.kubernetes.namespace`` is the pod's namespace, ``spark.kubernetes.driver.pod.name`` the pod's name
  (executors are owned by that pod) and ``spark.kubernetes.container.image`` the container's image;
* ``spark.driver.host`` is ``<service>.<namespace>.svc`` of a Service that exists and selects this pod, with
  the driver and block manager ports (executors connect there);
* ``spark.kubernetes.executor.podTemplateFile`` is a file of a volume of the container, holding a Pod that the
  Kubernetes schema accepts (kubernetes-validate, strict) with the container
  ``spark.kubernetes.executor.podTemplateContainerName``;
* executor counts, cores and memory parse as Spark reads them.

A failed check fails the container (exit 1, the reason in its log), as Spark would fail on a cluster.

With executor pods, ``spark.driver.bindAddress=0.0.0.0`` becomes the pod's own address: pods share this machine's
network (no network namespaces), so "every interface of the pod" would be every interface of the machine, and two
drivers (an upgrade's standby beside the active one) would take each other's fixed ports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

MASTER_KEY = "spark.master"
MAX_LOCAL_CORES = 2  # executors' cores are capped on this machine (2 cores shared by every test)


class SparkSettingsError(Exception):
    pass


def conf_pairs(args: list[str]) -> dict[str, str]:
    """``--conf k=v`` pairs of an argv (both ``--conf k=v`` and ``--conf=k=v``)."""
    found: dict[str, str] = {}
    for i, arg in enumerate(args):
        item = args[i + 1] if arg == "--conf" and i + 1 < len(args) else arg[7:] if arg.startswith("--conf=") else None
        if item is not None and "=" in item:
            key, _, value = item.partition("=")
            found[key] = value
    return found


def wants_kubernetes(args: list[str]) -> bool:
    return conf_pairs(args).get(MASTER_KEY, "").startswith("k8s://")


def check_and_localize(args: list[str], *, pod: dict[str, Any], container: dict[str, Any],
                       service: Callable[[str, str], dict[str, Any] | None],
                       container_file: Callable[[str], Path | None], executor_pods: str | None = None) -> list[str]:
    """The argv once the Kubernetes settings passed every check: with ``spark.master=local[N]``, or, when
    ``executor_pods`` is the pod's address, as it is (Spark creates the executor pods) but bound to that address."""
    conf = conf_pairs(args)
    md = pod["metadata"]
    problems = []

    def expect(key: str, wanted: str) -> None:
        if conf.get(key) != wanted:
            problems.append(f"{key}={conf.get(key)!r}, but the pod's is {wanted!r}")

    expect("spark.kubernetes.namespace", md["namespace"])
    expect("spark.kubernetes.driver.pod.name", md["name"])
    expect("spark.kubernetes.container.image", container["image"])
    problems += _driver_host_problems(conf, md, service)
    problems += _template_problems(conf, container_file)
    instances, cores = _int(conf, "spark.executor.instances", problems), _int(conf, "spark.executor.cores", problems)
    if not re.fullmatch(r"[0-9]+[kmgt]?", conf.get("spark.executor.memory", "1g")):
        problems.append(f"spark.executor.memory={conf.get('spark.executor.memory')!r} is not a Spark size (e.g. 4g)")
    if problems:
        raise SparkSettingsError("; ".join(problems))
    if executor_pods is not None:
        bind = "spark.driver.bindAddress="
        return [f"{bind}{executor_pods}" if arg == f"{bind}0.0.0.0" else arg for arg in args]
    local = f"local[{max(1, min(MAX_LOCAL_CORES, instances * cores))}]"
    out = []
    for arg in args:
        out.append(f"{MASTER_KEY}={local}" if arg.startswith(f"{MASTER_KEY}=k8s://") else arg)
    return out


def _int(conf: Mapping[str, str], key: str, problems: list[str]) -> int:
    try:
        return int(conf.get(key, "1"))
    except ValueError:
        problems.append(f"{key}={conf.get(key)!r} is not a whole number")
        return 1


def _driver_host_problems(conf: Mapping[str, str], md: dict[str, Any],
                          service: Callable[[str, str], dict[str, Any] | None]) -> list[str]:
    host = conf.get("spark.driver.host", "")
    match = re.fullmatch(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?", host)
    if not match:
        return [f"spark.driver.host={host!r} is not a Service name <service>.<namespace>.svc"]
    name, namespace = match.groups()
    svc = service(namespace, name)
    if svc is None:
        return [f"spark.driver.host names Service {namespace}/{name}, which does not exist"]
    selector = (svc.get("spec") or {}).get("selector") or {}
    labels = md.get("labels") or {}
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        return [f"Service {namespace}/{name} (spark.driver.host) does not select this pod (selector {selector})"]
    ports = {int(p.get("port")) for p in (svc.get("spec") or {}).get("ports") or []}
    wanted = {int(conf.get("spark.driver.port", "0") or 0), int(conf.get("spark.driver.blockManager.port", "0") or 0)}
    if 0 in wanted or not wanted <= ports:
        return [f"Service {namespace}/{name} serves ports {sorted(ports)}, executors need the driver's fixed "
                f"spark.driver.port and spark.driver.blockManager.port ({sorted(wanted)})"]
    return []


def _template_problems(conf: Mapping[str, str], container_file: Callable[[str], Path | None]) -> list[str]:
    path = conf.get("spark.kubernetes.executor.podTemplateFile")
    if not path:
        return []
    found = container_file(path)
    if found is None or not found.is_file():
        return [f"spark.kubernetes.executor.podTemplateFile {path} is not a file of any volume of the container"]
    try:
        template = yaml.safe_load(found.read_text())
    except yaml.YAMLError as error:
        return [f"the executor pod template {path} is not YAML: {error}"]
    try:
        import kubernetes_validate
    except ImportError:  # pragma: no cover - a dev dependency
        return []
    try:
        kubernetes_validate.validate(template, "1.30", strict=True)
    except Exception as error:  # kubernetes_validate raises several error types
        return [f"the executor pod template {path} is not a valid Pod: {str(error).splitlines()[0]}"]
    name = conf.get("spark.kubernetes.executor.podTemplateContainerName")
    names = [c.get("name") for c in (template.get("spec") or {}).get("containers") or []]
    if name and name not in names:
        return [f"the executor pod template has no container {name!r} (it has {names})"]
    return []
