"""Stateful changelog operators on Spark's ``transformWithStateInPandas`` (DESIGN §6).

Each operator is a ``StatefulProcessor`` whose state variables carry exactly the names the exec node
declares (``node.STATE_NAMES``: the contract with snapshots), run with ``timeMode="None"`` and output mode
``Append``: the operator's output rows are changelog records (``_rowkind``), so Spark sees an append-only
stream and further stateful operators can follow in the same query.

The room also holds what those operators keep in state: the aggregate library (``aggregates/``) and the
versioned state codec (``state_codec``), which the state moves above read as well.
"""
