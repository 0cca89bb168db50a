"""Console entry point ``planengine`` (the CLI contract of DESIGN §6).

Each sub-command lives in ``planengine.commands`` and is a thin shell over the Python API; this module
only parses arguments and maps errors to exit codes (0 ok, 2 user error, 3 needs migration,
4 incompatible, 1 internal error).
"""

from __future__ import annotations

import argparse
import logging
import sys

from planengine.errors import PlanEngineError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="planengine", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log restore and planning decisions")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from planengine.commands import register

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
