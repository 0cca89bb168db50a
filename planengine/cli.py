"""Console entry point ``planengine`` (the CLI contract of DESIGN §6).

Each sub-command lives in ``planengine.commands`` and is a thin shell over the Python API; this module
only parses arguments and maps errors to exit codes (0 ok, 2 user error, 3 needs migration,
4 incompatible, 1 internal error).
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib import metadata

from planengine.commands import register
from planengine.errors import PlanEngineError
from planengine.version import ENGINE_VERSION, PLAN_FORMAT_VERSION

DESCRIPTION = ("Streaming SQL that survives engine upgrades: plan a Flink SQL job once into a versioned plan "
               "file, run it on Spark with checkpoints, stop it with a snapshot, and restore the same plan on a "
               "later engine without re-planning.")
EPILOG = ("Run 'planengine COMMAND --help' for the options of a command. Exit codes: 0 ok, 2 bad input (the "
          "message says what and where), 3 the plan needs migration, 4 incompatible, 1 internal error.")


def version_text() -> str:
    """``planengine --version``: the engine, the plan format it writes and the Spark it runs on."""
    try:
        spark = f"Spark {metadata.version('pyspark')}"
    except metadata.PackageNotFoundError:
        spark = "no Spark runtime installed"
    return f"planengine {ENGINE_VERSION} (plan format {PLAN_FORMAT_VERSION}, {spark})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="planengine", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=version_text(),
                        help="print the engine version, its plan format and Spark version, and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log restore and planning decisions")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # e.g. `planengine explain ... | head`
        return 0
    except PlanEngineError as error:
        print(f"planengine: error: {error.render()}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
