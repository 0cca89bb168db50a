"""The Spark runtime: translation of compiled plans, plus the storage and control plane around it.

Storage and control modules (``storage``, ``snapshots``, ``fencing``, ``status_server``) import nothing
from Spark, so the CLI, the operator-facing status API and the tests can use them without a JVM. Nothing
is re-exported here on purpose: importing ``planengine.runtime`` must stay cheap.
"""
