"""``planengine sql [FILE | -]``: run a script statement by statement, or open an interactive prompt.

With FILE (or ``-`` / piped standard input) every statement runs in order (DDL, SET, SHOW, SELECT previews,
COMPILE PLAN, INSERT …); jobs it starts then run until all available input is processed (``--until-idle``) or
until SIGTERM / Ctrl-C, which stops them at a batch boundary with a snapshot. Without FILE on a terminal it
is a prompt (``planengine.client.shell``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from planengine.client.prompt import statement_prompt
from planengine.client.shell import Shell
from planengine.client.state import history_file, session_jobs_dir, session_log_file, session_name
from planengine.commands._env import add_session_arguments, read_text, session
from planengine.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "sql", help="run a SQL script, or an interactive SQL prompt",
        description="Run a SQL script statement by statement (from FILE, or from standard input), or, on a "
                    "terminal without FILE, open a prompt: statements end with ';', a bare SELECT previews its "
                    "first rows, HELP; lists what you can type.")
    p.add_argument("file", nargs="?", metavar="FILE",
                   help="the script ('-' for standard input; none on a terminal: the interactive prompt)")
    p.add_argument("-f", "--file", dest="script_file", metavar="FILE",
                   help="the script, as Flink's SQL client takes it (the same as FILE)")
    p.add_argument("--job-root", metavar="DIR",
                   help="job storage for the jobs the session starts, one job root per plan below DIR (a job "
                        "already there goes on from its last snapshot); default: a directory of this session's "
                        "own, ~/.local/state/planengine/jobs/sql-<UTC start>-<pid>")
    p.add_argument("--until-idle", action="store_true", help="stop jobs once all available input is processed")
    p.add_argument("--drain", action="store_true", help="with --until-idle: fire all windows and timers first")
    add_session_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.script_file is not None:
        if args.file is not None and args.file != args.script_file:
            raise UserError(f"two scripts given: {args.file} and -f {args.script_file}", hint="give one of them")
        args.file = args.script_file
    env = session(args)
    name = session_name()
    # Jobs go where the user said (--job-root, -D or SET 'planengine.job-root', PLANENGINE_JOB_ROOT), else to a
    # directory of this session's own: never to a default another session shares.
    env.session_jobs_dir = str(session_jobs_dir(name))
    if args.job_root:
        env.config["planengine.job-root"] = args.job_root
    if args.until_idle:
        env.config["planengine.until-idle"] = "true"
        env.config["planengine.drain"] = "true" if args.drain else "false"
    shell = Shell(env)
    if args.file is None and sys.stdin.isatty():
        # Spark's log lines and Python-worker chatter would bury the prompt: they go to a file of this session's own,
        # in the user's state directory (planengine.client.state), unless PLANENGINE_SPARK_LOG names one.
        log = os.environ.get("PLANENGINE_SPARK_LOG") or str(session_log_file(name))
        os.environ["PLANENGINE_SPARK_LOG"] = log
        history = history_file()
        print(f"Spark's log: {log}; history: {history}", file=sys.stderr)
        return shell.interact(statement_prompt(env.catalog_manager, history))
    if args.file in (None, "-"):
        shell.run_script(sys.stdin.read(), "<stdin>")
    else:
        shell.run_script(read_text(args.file), args.file)
    if shell.jobs:
        _wait(shell.jobs)
    return 0


def _wait(jobs: list) -> None:  # type: ignore[type-arg]
    def stop_all(signum: int, frame: object) -> None:
        for job in jobs:
            threading.Thread(target=lambda j=job: j.stop(snapshot=True, reason="stop"), daemon=True).start()

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    for job in jobs:
        job.wait()
