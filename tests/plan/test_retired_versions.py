"""The retired node versions docs/jvm-operators.md lists: restorable, movable, and never written by a compile.

The table is a promise to users with plans on the Python operators (their job keeps running, and a migration
takes it to the JVM with its state), so it is checked against what the engine registers and compiles.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from planengine.exec import base as B
from planengine.plan.state_moves import registered_moves
from tests.golden.compile_programs import PLANS, program_names

DOC = Path(__file__).parents[2] / "docs" / "jvm-operators.md"
PREFIX = "stream-exec-"
_MOVES = registered_moves()


def _documented() -> dict[str, str]:
    """Each retired version of the doc's table (``deduplicate_1``) -> its row's last cell."""
    text = DOC.read_text()
    start = text.index("## Retired versions")
    table = text[start:text.index("\n## ", start + 1)]
    rows: dict[str, str] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([a-z-]+_\d+)`", cells[0]):
            rows[name] = cells[2]
    return rows


def _short(name: str, version: int) -> str:
    return f"{name.removeprefix(PREFIX)}_{version}"


def test_the_table_lists_exactly_the_versions_a_state_move_leaves() -> None:
    assert sorted(_documented()) == sorted(_short(n, v) for n, v in _MOVES)


def test_each_retired_version_restores_and_is_not_the_newest() -> None:
    for name, version in _MOVES:
        assert B.lookup(name, version) is not None, f"{name}_{version} no longer restores"
        newest = max(v for n, v in B.registered() if n == name)
        assert version < newest, f"{name}_{version} is the newest version: a compile still writes it"


def test_each_row_names_the_version_its_move_takes_it_to() -> None:
    documented = _documented()
    for (name, version), target in _MOVES.items():
        assert B.lookup(name, target) is not None
        cell = documented[_short(name, version)]
        assert f"_{target}" in cell, f"{_short(name, version)}: the doc says {cell!r}, the move goes to {target}"


def test_no_plan_a_compile_writes_today_holds_a_retired_version() -> None:
    """The golden plans of ``tests/golden/programs`` are what today's compile writes (``test_golden_plans``
    compares them); the older golden plans (no program) are frozen restores and may hold retired versions."""
    retired = {f"{n}_{v}" for n, v in _MOVES}
    found = sorted({(program, node["type"]) for program in program_names()
                    for node in json.loads((PLANS / f"{program}.json").read_text())["nodes"]
                    if node["type"] in retired})
    assert found == []
