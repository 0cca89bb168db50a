"""State that outlives a plan change: which query holds a node's state, and moving it between operators.

``lineage`` says which stateful nodes each query computes; ``move`` converts a moved node's Python
``transformWithState`` state into its JVM processor's (``conversion``) inside a run's checkpoint before the
queries start. This room sits below the engine, whose executor calls ``move``, and above the JVM and Python
operators whose state it reads and writes (docs/architecture.md). Each module is imported by its own path; this
package re-exports nothing.
"""
