"""A stateful Kubernetes API emulator for tests: kmock 0.8 wrapped with the semantics kopf and kubectl need
(see ``server.py``; ``python -m tests.operator.kapi.server`` runs it as a process)."""
