"""A stateful Kubernetes API emulator for tests: kmock 0.8 wrapped with the semantics kopf and kubectl need."""

from tests.operator.kapi.server import KubeApi, run_in_thread

__all__ = ["KubeApi", "run_in_thread"]
