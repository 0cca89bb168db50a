"""Suite-wide pytest plugins: fixture modules every test may use without importing them, and the tiers
(derived marks, ``--tier``, the fast tier's JVM guard; docs/testing.md)."""

pytest_plugins = [
    "tests.fixtures.postgres",
    "tests.fixtures.cluster",
    "tests.fixtures.spark",
    "tests.fixtures.kafka",
    "tests.fixtures.object_store",
    "tests.tiers.plugin",
    "tests.tiers.guard",
    "pytester",  # tests/tiers run pytest on small suites of their own
]
