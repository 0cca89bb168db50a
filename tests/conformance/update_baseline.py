"""Rewrite ``tests/conformance/baseline.json`` on purpose: ``python -m tests.conformance.update_baseline [args]``.

Runs the conformance programs (extra arguments go to pytest, e.g. ``-k join`` to re-run some; programs not
run keep their baseline entry) and records every program that passes now. A program that fails now is
dropped from the baseline, so review the diff before committing it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def main(argv: list[str] | None = None) -> int:
    os.environ["CONFORMANCE_WRITE_BASELINE"] = "1"
    here = Path(__file__).resolve().parent
    args = [str(here / "test_conformance.py"), "-q", "-p", "no:cacheprovider", *(argv if argv is not None else
                                                                                 sys.argv[1:])]
    code = pytest.main(args)
    print(f"baseline written to {here / 'baseline.json'}")
    # xfails are expected here; only a crash of pytest itself is an error
    return 0 if code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) else int(code)


if __name__ == "__main__":
    raise SystemExit(main())
