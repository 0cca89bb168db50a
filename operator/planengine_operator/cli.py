"""Console entry point ``planengine-operator``."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("planengine-operator: not implemented yet", file=sys.stderr)
    return 1
