"""Suite-wide pytest plugins: fixture modules every test may use without importing them."""

pytest_plugins = ["tests.fixtures.postgres", "tests.fixtures.cluster"]
