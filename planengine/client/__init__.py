"""The SQL client, ``planengine sql``: the script runner and the statement executor (``shell``), the terminal prompt
(``prompt``, on prompt_toolkit) with its completion (``completion``), what counts as a typed statement (``reading``),
and where a user's history and logs go (``state``).

It sits above the Python API it drives (``planengine.api``: ``TableEnvironment``, and the ``TableResult`` it
prints) and below the CLI command that starts it (``planengine.commands.sql``)."""
