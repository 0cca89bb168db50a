"""The intermediate representation every other layer speaks: types, schemas, expressions, aggregate calls,
window and sort specs, row kinds and changelog modes.

Plain, immutable values with a declarative JSON form and no dependencies above them (only
``planengine.errors``), so the exec nodes, the plan reader, the planner, the connectors and the runtime
can all share them without importing each other (docs/architecture.md).
"""
