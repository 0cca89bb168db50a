"""A test-only exec node with two versions, and the plan surgery that puts it into a real plan.

``stream-exec-test-tag`` version 1 tags rows as they are; version 2 adds the field ``tagCase`` (default
``UPPER``) and upper-cases tags by default. A version-1 node must keep version-1 semantics when restored.
The node replaces the Calc of a compiled ``generated -> printed`` program, so the plan is otherwise real.
``install``/``uninstall`` register and clean up, so other tests see the built-in registry only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from planengine.exec import base as B
from planengine.exec.base import STR, ExecNode, ExecNodeMetadata, json_field
from planengine.plan import node_migrations
from planengine.plan.serde import compute_plan_id

NAME = "stream-exec-test-tag"
META = {
    1: ExecNodeMetadata(NAME, 1, (), ("tagger",), "0.1", "0.1"),
    2: ExecNodeMetadata(NAME, 2, (), ("tagger",), "0.1", "0.1"),
}
DDL = ("CREATE TABLE generated (id BIGINT, score INT, label STRING) WITH ('connector' = 'datagen');"
       "CREATE TABLE printed (k STRING, v BIGINT) WITH ('connector' = 'print')")
PROGRAM = "INSERT INTO printed SELECT label, id FROM generated WHERE score > 0"


@dataclass(frozen=True, eq=False, kw_only=True)
class TagNode(ExecNode):
    METADATA = ()
    STATE_NAMES = ("seen",)
    tag: str = json_field("tag", STR)
    tag_case: str = json_field("tagCase", STR, "UPPER")  # added in version 2

    def apply(self, value: str) -> str:
        """Version 1 semantics: tags as they are. Version 2: per ``tagCase``."""
        if self.metadata.version == 1:
            return f"{self.tag}:{value}"
        return f"{self.tag.upper() if self.tag_case == 'UPPER' else self.tag}:{value}"


def to_version_2(node: dict[str, Any]) -> dict[str, Any]:
    node["tagCase"] = "AS_IS"  # keep version-1 behaviour for plans written before version 2
    return node


def _translate(node: Any, inputs: list[Any], ctx: Any) -> Any:
    """The test node is a pass-through at run time; it only needs to *have* a Spark translation."""
    return inputs[0]


def install(versions: tuple[int, ...] = (1, 2), dropped: tuple[int, ...] = (), with_migration: bool = False) -> None:
    from planengine.runtime.engine import translators

    for v in versions:
        B.restore_registration(TagNode, META[v])
        translators.load_all()
        translators._TRANSLATORS[(NAME, v)] = _translate
    for v in dropped:
        B.unregister(NAME, v)
    if with_migration:
        node_migrations.migration(NAME, 1, 2)(to_version_2)


def uninstall() -> None:
    from planengine.runtime.engine import translators

    for v in META:
        translators._TRANSLATORS.pop((NAME, v), None)
        B._REGISTRY.pop((NAME, v), None)
        B._DROPPED.pop((NAME, v), None)
    TagNode.METADATA = ()
    node_migrations.unregister_migration(NAME, 1)


def plan_with_tag_node(version: int = 1) -> dict[str, Any]:
    """A compiled plan whose Calc (node 2) is replaced by the test node at ``version``."""
    from planengine.api import TableEnvironment

    env = TableEnvironment()
    env.execute_sql(DDL)
    plan = json.loads(env.compile_plan_sql(PROGRAM).as_json())
    calc = plan["nodes"][1]
    assert calc["id"] == 2 and calc["type"] == "stream-exec-calc_1", calc
    node: dict[str, Any] = {"id": 2, "type": f"{NAME}_{version}", "outputType": calc["outputType"],
                            "changelogMode": "I", "state": [{"name": "seen", "ttl": "0 ms"}],
                            "uids": [f"2_{NAME}-1_tagger"], "tag": "web"}
    if version >= 2:
        node["tagCase"] = "UPPER"
    node["description"] = "TestTag(web)"
    plan["nodes"][1] = node
    plan["planId"] = compute_plan_id(plan)
    return plan
