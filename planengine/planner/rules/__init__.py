"""Logical rewrite rules, one per module, each a function ``rule(node, ctx) -> node``.

A rule looks at one node (whose inputs are already rewritten) and returns it unchanged or a replacement
with the same output types. Recursion, fix-point iteration, change tracking, disabling rules by name and
the schema check belong to the driver in ``planengine.planner.programs``, never to a rule.
"""
