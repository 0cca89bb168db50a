"""The engine: a compiled plan becomes running Spark streaming queries, and the driver that keeps them running.

The executor restores the plan, the topology cuts its DAG into queries (channels between them), the translators
turn each exec node into a ``Stream`` on the one SparkSession, and the status server, standby and progress
listener serve the driver around them. It sits on every other runtime room (state moves, JVM and Python
operators, connectors, dataflow, storage) and only the state check sits on it (docs/architecture.md). Each module
is imported by its own path; this package re-exports nothing.
"""
