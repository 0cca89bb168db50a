"""Restore-corpus tests use the suite's one SparkSession: the ``spark`` fixture of ``tests/fixtures/spark.py``."""
