"""Shared fixtures for runtime tests: ONE SparkSession per test process (a JVM start costs seconds).

``spark`` is the session the engine itself uses (``planengine.runtime.session.get_spark``), so tests that
drive the executor in-process and tests that build DataFrames directly share it.
"""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from planengine.runtime.session import get_spark

    session = get_spark()
    yield session
    for q in session.streams.active:
        q.stop()
