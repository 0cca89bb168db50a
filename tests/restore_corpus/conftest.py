"""Restore-corpus fixtures: the one session-scoped SparkSession of ``tests/runtime/conftest.py``."""

from tests.runtime.conftest import spark  # noqa: F401  (one JVM for the whole module)
