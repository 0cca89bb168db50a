"""Every privileged setting of a built pod: what the tenant-isolation tests and the manifest fuzzer look for.

More than Pod Security ``baseline`` refuses (host namespaces, privileged containers, added capabilities, hostPath)
and what ``restricted`` adds (root, privilege escalation, seccomp off, volume types), plus what gives a pod more
than its job needs: another ServiceAccount, an API token where the operator mounts none, containers or images the
operator did not build.
"""

from __future__ import annotations

from typing import Any

from planengine_operator import builders, podpolicy


def privileged_settings(pod: dict[str, Any], allowed_host_paths: list[str], image: str | None = None) -> list[str]:
    """What is privileged in ``pod`` (empty: nothing); ``image``: the only image its containers may run."""
    spec = pod["spec"]
    found = [key for key in ("hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "nodeName",
                             "runtimeClassName", "initContainers", "ephemeralContainers") if spec.get(key)]
    if spec.get("serviceAccountName") not in (None, builders.DRIVER_SERVICE_ACCOUNT):
        found.append(f"serviceAccountName={spec['serviceAccountName']}")
    if "automountServiceAccountToken" in spec and spec["automountServiceAccountToken"] is not False:
        found.append("automountServiceAccountToken")
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    found += [f"annotation {key}" for key in annotations if str(key).startswith(podpolicy.SECURITY_ANNOTATION_PREFIXES)]
    for volume in spec.get("volumes") or []:
        for source in ((volume.get("projected") or {}).get("sources") or []) if isinstance(
                volume.get("projected"), dict) else []:
            if isinstance(source, dict) and "serviceAccountToken" in source:
                found.append("projected serviceAccountToken")
        kinds = set(volume) - {"name"}
        if "hostPath" in kinds and not podpolicy.host_path_allowed(str(volume["hostPath"].get("path")),
                                                                    allowed_host_paths):
            found.append(f"hostPath {volume['hostPath'].get('path')}")
        if kinds - set(podpolicy.RESTRICTED_VOLUME_TYPES) - {"hostPath"}:
            found.append(f"volume {sorted(kinds)}")
    pod_security = spec.get("securityContext") or {}
    if pod_security.get("runAsUser") == 0 or pod_security.get("runAsNonRoot") is False:
        found.append("pod runs as root")
    if (pod_security.get("seccompProfile") or {}).get("type") not in ("RuntimeDefault", "Localhost"):
        found.append("seccomp off")
    for container in spec.get("containers") or []:
        if container["name"] not in ("driver", "executor", "tool"):
            found.append(f"container {container['name']}")
        if image is not None and container.get("image") not in (None, image):
            found.append(f"image {container.get('image')}")
        security = container.get("securityContext") or {}
        if security.get("privileged") or security.get("allowPrivilegeEscalation") is not False:
            found.append("privileged container")
        if (security.get("capabilities") or {}).get("add"):
            found.append("added capabilities")
        if security.get("runAsUser") == 0 or security.get("runAsNonRoot") is False:
            found.append("container runs as root")
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPropagation") not in (None, "None"):
                found.append("mount propagation")
    return found
