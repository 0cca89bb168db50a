"""The grammar drift guard: Flink's own SQL parser and ours on the project's SQL (docs/testing.md)."""
