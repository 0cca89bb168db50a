"""``tests/conformance/baseline.json``: the program ids that passed when it was last updated on purpose.

The count may only go up: a baseline program that no longer passes fails the suite; others are xfail with
their failure category. ``python -m tests.conformance.update_baseline`` rewrites it.
"""

from __future__ import annotations

import json
from pathlib import Path

BASELINE_PATH = Path(__file__).with_name("baseline.json")


def load_baseline(path: Path = BASELINE_PATH, key: str = "passed") -> set[str]:
    if not path.is_file():
        return set()
    data = json.loads(path.read_text(encoding="utf-8"))
    return set(data.get(key, []))


def write_baseline(passed: set[str], exact: set[str], total: int, path: Path = BASELINE_PATH) -> None:
    data = {
        "comment": "Conformance programs that passed (materialized sink results equal to Flink's). Only grows; "
                   "rewrite on purpose with `python -m tests.conformance.update_baseline`.",
        "total_programs": total,
        "passed": sorted(passed),
        "exact_changelog": sorted(exact & passed),
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
