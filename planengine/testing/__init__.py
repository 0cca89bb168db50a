"""Reusable test support: conformance program loading, Flink row strings, changelog materialization.

* ``flink_rows``: Flink's ``Row.toString`` form (``+U[2, 2.0, Hello]``) from typed values, and parsing of it;
  Java's ``Double.toString`` / ``Float.toString`` and ``LocalDateTime.toString`` rules.
* ``changelog``: a changelog as ``ChangelogRow`` values; materialization as a multiset (retract) or an
  upsert table keyed by column positions; reading a ``changelog-json`` sink directory (honouring Spark's
  ``_spark_metadata`` log, so only committed files count).
* ``conformance_programs``: the conformance YAML (``/work/shared/conformance/flink-programs``) as
  ``ConformanceProgram`` objects,
  their DDL over a directory of ``filesystem`` tables, and source rows as JSON lines.

Nothing here needs Spark; the harness that runs programs lives in ``tests/conformance``.
"""
