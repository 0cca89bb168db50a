"""Playing the kubelet for the operator's tool pods on the API emulator: what a tool's container reports when it
exits, so launcher tests drive a tool step without a node."""

from __future__ import annotations

from typing import Any


def finish_pod(api: Any, name: str, exit_code: int, log: str, namespace: str = "default") -> None:
    """What a kubelet reports when the container exits: phase, exit code, log."""
    def write(a: Any) -> None:
        key = ("", "pods", namespace, name)
        pod = a.objects[key]
        status = {"phase": "Succeeded" if exit_code == 0 else "Failed", "containerStatuses": [{
            "name": "tool", "ready": False, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"],
            "imageID": "", "state": {"terminated": {"exitCode": exit_code, "reason": "Completed"}}}]}
        a._write(a.resources[("", "pods")], key, {**pod, "status": status}, "status")
        a.pod_logs[(namespace, name)] = log

    api.call(write)
