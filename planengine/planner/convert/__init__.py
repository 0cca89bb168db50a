"""SQL → logical plan: resolves names against catalogs and builds typed logical nodes.

This is the only place that walks sqlglot query trees. Views are inlined (a view is planned from its stored
query), ``IN``/``EXISTS`` sub-queries in WHERE are decorrelated into semi/anti joins, and aggregates, window
functions and legacy group windows are pulled out of SELECT into their own nodes, so every later phase sees
plain relational operators.
"""

from planengine.planner.convert.query import QueryConverter
from planengine.planner.convert.scope import CatalogAccess, PlannerContext, Relation
from planengine.planner.convert.support import and_all, cast_to, equals

__all__ = ["CatalogAccess", "PlannerContext", "QueryConverter", "Relation", "and_all", "cast_to", "equals"]
