"""What each e2e test costs (its wall seconds: setup + call + teardown), recorded from a run, and the two shares
of the e2e tier balanced by it.

The e2e tier runs as two pytest processes side by side (``tests/tiers/run.py``). Split by kind (the contract
scenarios, mostly waiting, beside every JVM-heavy test) the contract half took 15 minutes and the other had not
finished after 60 (2026-11-29): the step lasted as long as the heavy one. Balanced by recorded cost the two take
about as long as each other. The
partition is greedy (longest first, each test to the share with less so far; ties by node id), computed the same
way in both processes from the same collection and the same file, so every test is in exactly one share. A test
the file does not know costs the median of those it does. Refresh the file from a run's durations:

    python -m tests.tiers.costs LOG [LOG ...]     # logs of pytest runs with --durations=0 (the e2e shares')
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

COSTS = Path(__file__).with_name("e2e_costs.json")
SHARES = ("a", "b")
_DURATION = re.compile(r"^\s*([0-9.]+)s (?:setup|call|teardown)\s+(\S+)\s*$")


def parse_durations(text: str) -> dict[str, float]:
    """Seconds per node id from pytest's ``--durations`` lines (its phases summed).

    >>> parse_durations("12.50s call     t.py::a[x]\\n0.50s setup    t.py::a[x]\\n3.00s call t.py::b\\n")
    {'t.py::a[x]': 13.0, 't.py::b': 3.0}
    """
    costs: dict[str, float] = {}
    for line in text.splitlines():
        match = _DURATION.match(line)
        if match:
            costs[match.group(2)] = round(costs.get(match.group(2), 0.0) + float(match.group(1)), 2)
    return costs


def load(path: Path | None = None) -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads((path or COSTS).read_text()).items()}
    except (OSError, ValueError):
        return {}


def partition(node_ids: Iterable[str], costs: dict[str, float]) -> dict[str, str]:
    """Each node id's share, ``a`` or ``b``: longest first, each to the share with the smaller total so far.

    >>> partition(["t::x", "t::y", "t::z", "t::new"], {"t::x": 30, "t::y": 20, "t::z": 15})
    {'t::x': 'a', 't::new': 'b', 't::y': 'b', 't::z': 'a'}
    """
    ids = sorted(set(node_ids))
    default = statistics.median(costs.values()) if costs else 30.0
    totals = dict.fromkeys(SHARES, 0.0)
    shares: dict[str, str] = {}
    for node_id in sorted(ids, key=lambda n: (-costs.get(n, default), n)):
        share = min(SHARES, key=lambda s: (totals[s], s))
        shares[node_id] = share
        totals[share] += costs.get(node_id, default)
    return shares


def main(argv: Sequence[str] | None = None) -> int:
    logs = list(sys.argv[1:] if argv is None else argv)
    if not logs:
        print(__doc__, file=sys.stderr)
        return 2
    costs: dict[str, float] = {}
    for log in logs:
        costs.update(parse_durations(Path(log).read_text(errors="replace")))
    COSTS.write_text(json.dumps(dict(sorted(costs.items())), indent=1) + "\n")
    shares = partition(costs, costs)
    for share in SHARES:
        total = sum(c for n, c in costs.items() if shares[n] == share)
        print(f"share {share}: {sum(1 for s in shares.values() if s == share)} tests, {total / 60:.1f} min recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
