"""``planengine sql FILE``: run a script statement by statement (DDL, SET, COMPILE PLAN, EXECUTE …).

INSERTs, statement sets and ``EXECUTE PLAN`` start jobs; the command then either runs them until all
available input is processed (``--until-idle``) or keeps them running until SIGTERM/Ctrl-C, which stops
them at a batch boundary with a snapshot.
"""

from __future__ import annotations

import argparse
import signal
import threading

from planengine.commands._env import add_session_arguments, read_text, session


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("sql", help="run a SQL script")
    p.add_argument("file")
    p.add_argument("--job-root", help="job storage for the jobs the script starts (default: a temp directory)")
    p.add_argument("--until-idle", action="store_true", help="stop jobs once all available input is processed")
    p.add_argument("--drain", action="store_true", help="with --until-idle: fire all windows and timers first")
    add_session_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    env = session(args)
    if args.job_root:
        env.config["planengine.job-root"] = args.job_root
    if args.until_idle:
        env.config["planengine.until-idle"] = "true"
        env.config["planengine.drain"] = "true" if args.drain else "false"
    jobs = []
    for result in env.execute_sql(read_text(args.file), source=args.file):
        text = str(result)
        if text:
            print(text, flush=True)
        if result.job is not None and hasattr(result.job, "wait"):
            jobs.append(result.job)
    if jobs:
        _wait(jobs)
    return 0


def _wait(jobs: list) -> None:  # type: ignore[type-arg]
    def stop_all(signum: int, frame: object) -> None:
        for job in jobs:
            threading.Thread(target=lambda j=job: j.stop(snapshot=True, reason="stop"), daemon=True).start()

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    for job in jobs:
        job.wait()
