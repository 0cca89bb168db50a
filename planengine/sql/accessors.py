"""Read Flink-specific annotations off sqlglot trees without knowing how the parser stored them."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp


@dataclass(frozen=True)
class QueryHint:
    """One hint of ``/*+ NAME('k'='v', ...) */`` or ``/*+ NAME(a, b) */``.

    Key-value hints (STATE_TTL, LOOKUP, OPTIONS) fill ``options``; list hints (BROADCAST(t1, t2)) fill
    ``args``.
    """

    name: str
    options: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)


def _hint_items(hint: exp.Expression | None) -> list[QueryHint]:
    if hint is None:
        return []
    hints = []
    for item in hint.expressions:
        if isinstance(item, exp.Anonymous | exp.Func):
            name = item.name.upper() if isinstance(item, exp.Anonymous) else item.sql_name()
            options: dict[str, str] = {}
            args: list[str] = []
            for arg in item.expressions if isinstance(item, exp.Anonymous) else item.iter_expressions():
                if isinstance(arg, exp.EQ):
                    options[arg.this.name] = arg.expression.name
                else:
                    args.append(arg.name)
            hints.append(QueryHint(name, options, args))
        else:
            hints.append(QueryHint(item.name.upper()))
    return hints


def query_hints(select: exp.Expression) -> list[QueryHint]:
    """Hints written after SELECT (or INSERT), e.g. ``STATE_TTL`` and ``LOOKUP``.

    >>> from planengine.sql import parse_query
    >>> query_hints(parse_query("SELECT /*+ STATE_TTL('o' = '1d') */ * FROM o"))
    [QueryHint(name='STATE_TTL', options={'o': '1d'}, args=[])]
    """
    return _hint_items(select.args.get("hint"))


def table_options_hint(table: exp.Table) -> dict[str, str]:
    """Dynamic table options from ``t /*+ OPTIONS('k'='v') */``; later OPTIONS hints win.

    >>> from planengine.sql import parse_query
    >>> table = parse_query("SELECT * FROM t /*+ OPTIONS('a'='1') */ AS x").find(exp.Table)
    >>> table_options_hint(table)
    {'a': '1'}
    """
    options: dict[str, str] = {}
    for hint in table.args.get("hints") or []:
        for item in _hint_items(hint):
            if item.name == "OPTIONS":
                options.update(item.options)
    return options


def system_time_as_of(table: exp.Table) -> exp.Expression | None:
    """The time expression of ``t FOR SYSTEM_TIME AS OF expr`` (lookup / temporal join), else None.

    >>> from planengine.sql import parse_query
    >>> query = parse_query("SELECT * FROM o JOIN c FOR SYSTEM_TIME AS OF o.pt AS c ON o.k = c.k")
    >>> system_time_as_of(query.args["joins"][0].this).sql("flink")
    'o.pt'
    """
    version = table.args.get("version")
    if isinstance(version, exp.Version) and version.name == "TIMESTAMP" and version.text("kind") == "AS OF":
        return version.expression
    return None
