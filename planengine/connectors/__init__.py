"""Connector framework (FLIP-95, planner side) and the built-in connectors.

How the planner uses it:

1. ``discovery.create_table_source(FactoryContext(identifier, catalog_table, session_config))`` (or
   ``create_table_sink``) picks the factory from the table's ``'connector'`` option, validates every
   option at once and returns a source/sink object holding typed options.
2. It reads ``source.changelog_mode()`` / ``sink.changelog_mode(requested)`` (``changelog.ChangelogMode``,
   written into plans as ``"I,UB,UA,D"``) and ``source.requires_normalization``.
3. It applies abilities (``abilities.Supports…``) to a ``copy()`` and records what it applied as
   ``specs.…Spec`` objects; ``specs.specs_to_json`` goes into the scan/sink node of the plan.
4. Restore: ``restore.restore_table_source(ctx, specs_json)`` creates the source again and replays the
   specs exactly.
5. The runtime asks ``scan_runtime_provider`` / ``sink_runtime_provider`` for providers that carry the
   typed source/sink (``provider.connector`` says which translation to use).
"""
