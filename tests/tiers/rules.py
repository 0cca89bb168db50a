"""A test's tier, from the fixtures it uses and the folder it lives in: never from a hand-written mark.

A test's *needs* are the expensive things it cannot run without: ``spark`` (a JVM running Spark, in this
process or in one the test starts), ``postgres`` (the throwaway PostgreSQL server of ``tests/fixtures``) and
``e2e`` (real processes of the product: the engine CLI in a subprocess, the operator in its test worlds, the
test kubelet's pods). Each need is also the name of the pytest mark the test gets, so ``-m 'spark and not
postgres'`` selects as expected. The tier is the most expensive need: ``e2e``, else ``spark`` (Spark or
PostgreSQL), else ``fast``. Marks derived this way cannot drift from what the test does; the guard
(``tests/tiers/guard.py``) fails a fast test that starts a JVM or a CLI process anyway.

>>> sorted(needs(("runtime", "operators"), ["tmp_path", "feed", "spark"]))
['spark']
>>> tier_of(needs(("operator", "e2e"), ["kapi"]))
'e2e'
>>> tier_of(needs(("sql",), ["tmp_path"]))
'fast'
"""

from __future__ import annotations

from collections.abc import Iterable

FAST, SPARK, E2E = "fast", "spark", "e2e"
# The order ``make test`` runs the tiers in: the cheapest verdict first, each tier only if the one before passed.
TIERS = (FAST, SPARK, E2E)
NEEDS = ("spark", "postgres", "e2e")

# A fixture → the need it brings. ``item.fixturenames`` is the transitive closure of what a test requests, so a
# fixture built on one of these (``feed`` and ``runner`` on ``spark``, ``postgres_db`` on ``postgres``) counts.
FIXTURE_NEEDS = {
    "spark": "spark",  # the shared SparkSession (tests/fixtures/spark.py; tests/runtime/operators overrides it)
    "jvm_process": "spark",  # declared: the test runs a JVM of its own (javac, java), not through Spark
    "postgres": "postgres",  # the PostgreSQL server (tests/fixtures/postgres.py)
    "engine_process": "e2e",  # declared: the engine in a subprocess (the planengine CLI; `run` starts Spark)
    "world": "e2e",  # the operator with the contract engine double (tests/operator/e2e/conftest.py)
    "real_world": "e2e",  # the operator with the real engine
    "control_plane": "e2e",  # the real Kubernetes control plane (tests/fixtures/cluster.py)
}

# A folder under tests/ → the need of everything in it: folders whose tests drive real processes that no
# fixture names (the operator's scenarios, the kubelet's pods).
FOLDER_NEEDS = {
    ("operator", "e2e"): "e2e",
    ("operator", "kubelet"): "e2e",
    ("cluster",): "e2e",  # the control plane's own tests (processes of etcd, kube-apiserver, ...)
}


def needs(folder: tuple[str, ...], fixturenames: Iterable[str]) -> frozenset[str]:
    """The needs of a test in ``tests/<folder…>`` that uses ``fixturenames`` (transitively)."""
    found = {FIXTURE_NEEDS[name] for name in fixturenames if name in FIXTURE_NEEDS}
    found |= {need for prefix, need in FOLDER_NEEDS.items() if folder[: len(prefix)] == prefix}
    return frozenset(found)


def tier_of(test_needs: Iterable[str]) -> str:
    """The tier a test with ``test_needs`` runs in: its most expensive need."""
    test_needs = set(test_needs)
    if "e2e" in test_needs:
        return E2E
    if test_needs & {"spark", "postgres"}:
        return SPARK
    return FAST
