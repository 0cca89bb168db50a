"""What flows between the runtime's rooms: ``Stream`` (a translated node's DataFrame with its typed facts) and plan
expressions rendered as Spark SQL.

Connectors, Python operators, JVM operators and translators all hand ``Stream``s to each other and render
expressions the same way, so these two modules sit below all of them (docs/architecture.md). Each module is
imported by its own path; this package re-exports nothing.
"""
