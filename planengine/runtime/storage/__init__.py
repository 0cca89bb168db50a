"""Job storage: job roots, runs, snapshots, fencing, the plan in force and Spark checkpoints' state layouts.

The bottom room of the runtime (docs/architecture.md): plain files under a job root, read and written without
Spark, so ``planengine snapshots list``, the fencing of a second driver and the operator-facing layout never
load pyspark. Every module is imported by its own path; this package re-exports nothing.
"""
