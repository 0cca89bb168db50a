"""The SQL client, ``planengine sql``: the interactive prompt and the script runner (``shell``).

It sits above the Python API it drives (``planengine.api``: ``TableEnvironment``, and the ``TableResult`` it
prints) and below the CLI command that starts it (``planengine.commands.sql``)."""
