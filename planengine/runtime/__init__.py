"""The Spark runtime: translation of compiled plans, plus the storage and control plane around it.

Its rooms, each importing only the rooms below it (docs/architecture.md, contract "Runtime rooms"):
``state_check`` > ``engine`` > ``state`` > ``jvm`` > ``operators`` > ``connectors`` > ``dataflow`` | ``storage``.
Job storage (``storage``) imports nothing from Spark, nor does the driver status API
(``engine/status_server.py``), so the CLI, the operator-facing status API and the tests can use them without a
JVM. Nothing is re-exported here on purpose: importing ``planengine.runtime`` must stay cheap.
"""
