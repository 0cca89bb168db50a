"""Console entry point ``planengine-operator``: read the configuration, choose a launcher, run kopf."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from planengine_operator.config import OperatorConfig, load_config
from planengine_operator.launchers.base import Launcher


def build_launcher(config: OperatorConfig) -> Launcher:
    if config.launcher == "local":
        from planengine_operator.launchers.local import LocalLauncher  # noqa: PLC0415 — kopf/aiohttp load only for the subcommand that needs them

        return LocalLauncher(config)
    from planengine_operator.launchers.kubernetes import KubernetesLauncher  # noqa: PLC0415 — kopf/aiohttp load only for the subcommand that needs them

    return KubernetesLauncher(config)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="planengine-operator", description=__doc__)
    parser.add_argument("--config", help="operator config YAML (default: $PLANENGINE_OPERATOR_CONFIG)")
    parser.add_argument("--local", action="store_true",
                        help="run drivers as local processes (no cluster needed for the engine)")
    parser.add_argument("--namespace", "-n", action="append", default=[],
                        help="watch this namespace (repeatable; default: watchNamespaces or cluster-wide)")
    parser.add_argument("--liveness", default="http://0.0.0.0:8081/healthz",
                        help="kopf liveness endpoint URL ('' to disable)")
    parser.add_argument("--standalone", action="store_true", default=True, help=argparse.SUPPRESS)
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(args.config, local=args.local)
    except (OSError, ValueError) as exc:
        print(f"planengine-operator: bad configuration: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    os.environ["PLANENGINE_OPERATOR_TICK"] = str(config.timing.interval)
    import kopf  # noqa: PLC0415 — kopf loads only where the operator runs

    import planengine_operator.main  # noqa: F401, PLC0415 — importing it registers the handlers with kopf

    namespaces = args.namespace or config.watchNamespaces
    try:
        asyncio.run(kopf.operator(
            memo=kopf.Memo(config=config),  # the startup handler adds the launcher, fleet and reconciler
            standalone=True,
            clusterwide=not namespaces,
            namespaces=namespaces,  # a list; kopf iterates it (None crashed its namespace observer)
            liveness_endpoint=args.liveness or None,
        ))
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
