"""Every registered exec node version has a Spark translator (STYLE: a coverage test walks the registry).

Nodes of the runtime core must be covered (a real assertion); nodes owned by the stateful and time-based
runtime work are reported as expected failures until their translators land.
"""

from __future__ import annotations

import pytest

from planengine.exec import base as B
from planengine.exec import nodes  # noqa: F401 - registers the node classes
from planengine.runtime.engine.translators import get_translator

CORE = {"stream-exec-table-source-scan", "stream-exec-calc", "stream-exec-values", "stream-exec-union",
        "stream-exec-exchange", "stream-exec-watermark-assigner", "stream-exec-sink", "stream-exec-correlate",
        "stream-exec-drop-update-before"}

REGISTERED = sorted(B.registered())


@pytest.mark.parametrize("name,version", REGISTERED, ids=[f"{n}_{v}" for n, v in REGISTERED])
def test_node_has_translator(name: str, version: int) -> None:
    if get_translator(name, version) is None:
        if name in CORE:
            pytest.fail(f"runtime core node {name} version {version} has no translator")
        pytest.xfail(f"{name} version {version}: translator not written yet (owned by another runtime area)")


def test_unsupported_nodes_lists_unknown_versions() -> None:
    from planengine.runtime.engine.executor import unsupported_nodes

    plan = {"nodes": [{"id": 1, "type": "stream-exec-calc_1"}, {"id": 2, "type": "stream-exec-calc_99"}]}
    assert unsupported_nodes(plan) == [{"node": 2, "type": "stream-exec-calc_99"}]


def test_every_translator_module_imports() -> None:
    """A translator module that fails to import must fail loudly, never leave its nodes silently unregistered
    (a renamed helper elsewhere would turn running plans into 'unsupported' ones): load_all has no guard."""
    from planengine.runtime.engine.translators import load_all

    load_all()  # raises the module's ImportError, if any
