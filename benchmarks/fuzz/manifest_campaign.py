"""A long manifest-fuzzing campaign: seeded SparkPlanJob mutations through the CRD schema (with CEL), the admission
webhook and the builders, the same judge as tests/fuzz/test_manifest_fuzz.py (tests/fuzz/manifests.py) with a
budget of thousands of manifests instead of hundreds.

Reports counts (refused by the CRD, by the webhook, admitted), refusal reasons, exceptions outside the validation
errors and admitted manifests whose pods carry a privileged setting (both must be 0), with the command, seed and
the machine's load, as Markdown for benchmarks/results/fuzz_manifests.md. Exit 1 when a property broke, printing
the first offending manifests.

    .venv/bin/python -m benchmarks.fuzz.manifest_campaign [--count 2000] [--seed 20261128]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [p for p in (str(REPO), str(REPO / "operator")) if p not in sys.path]

from tests.fuzz import manifests  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="manifests to generate (default 2000)")
    parser.add_argument("--seed", type=int, default=20261128, help="random seed (default 20261128)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.monotonic()
    outcome = manifests.campaign(args.seed, args.count)
    seconds = time.monotonic() - started
    load_after = os.getloadavg()
    print(f"# Manifest fuzzing campaign ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)\n")
    print(f"Command: `.venv/bin/python -m benchmarks.fuzz.manifest_campaign --count {args.count} --seed {args.seed}`"
          f"  \nMachine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (1 min)  \nTime: {seconds:.1f} s "
          f"({1000 * seconds / max(1, outcome.manifests):.1f} ms per manifest)\n")
    print("| outcome | manifests |\n|---|---:|")
    for label, value in (("generated", outcome.manifests), ("refused by the CRD schema / CEL", outcome.crd_refused),
                         ("refused by the webhook", outcome.webhook_refused), ("admitted", outcome.admitted),
                         ("exceptions outside validation errors", len(outcome.exceptions)),
                         ("admitted with a privileged pod", len(outcome.privileged))):
        print(f"| {label} | {value} |")
    print("\nWebhook refusal reasons (a manifest may have several; counted also for CRD-refused manifests):\n")
    print("| reason | problems |\n|---|---:|")
    for reason, count in outcome.reasons.most_common():
        print(f"| {reason} | {count} |")
    for body, what in (outcome.exceptions + outcome.privileged)[:5]:
        print(f"\n```\n{what}\n{body}\n```")
    return 1 if outcome.exceptions or outcome.privileged else 0


if __name__ == "__main__":
    sys.exit(main())
