#!/usr/bin/env python3
"""The real ``planengine`` CLI behind a thin wrapper, for the operator's real-engine end-to-end tests.

NOT a double: every invocation ends in ``exec`` of the real CLI (same pid, so the operator's pid tracking,
process-group kill and the driver's own ``RUN_LOCK`` see the real driver), except where a fault knob says
otherwise. Before that it appends one JSON line ``{"command", "engine", "runId", "fromSnapshot", "at",
"pid", "host"}`` to ``.contract-calls.jsonl`` in the job root it works on (``job_root_of``): the same record the
contract double keeps, so tests count checks and driver starts the same way.

Knobs (before the engine command, in the operator's ``localCommand`` for an engine version):

* ``--wrapped PATH``: the real ``planengine`` executable (required).
* ``--label V``: the engine version name the operator's catalog uses for this entry (for the record).
* ``--check-exit 4``: ``check`` answers like the real CLI's ``--json`` report, "incompatible", exit 4,
  without running the engine (the way to get a refusing target out of one engine build: the real check is
  compatible for every plan this engine compiles).
* ``--crash-run S``: ``run`` dies with exit 1 after ``S`` seconds, before Spark starts (a target engine that
  crashes right after its start, e.g. a broken image); nothing is committed by it.
* ``--crash-after-commits N``: ``run`` starts the real driver as a child, watches its ``/v1/status`` and,
  once every query of the run committed ``N`` batches (``batchesTotal``), SIGKILLs its own process group (itself, the
  driver and the JVM): a target that dies after it has committed output.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def main(argv: list[str]) -> int:
    knobs = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    knobs.add_argument("--wrapped", required=True)
    knobs.add_argument("--label", default="?")
    knobs.add_argument("--check-exit", type=int, default=0)
    knobs.add_argument("--crash-run", type=float, default=None)
    knobs.add_argument("--crash-after-commits", type=int, default=None)
    opts, rest = knobs.parse_known_args(argv)
    command = rest[0] if rest else ""
    snapshot = rest[rest.index("--from-snapshot") + 1] if "--from-snapshot" in rest else None
    entry = {"command": command, "engine": opts.label, "at": time.time(), "pid": os.getpid(),
             "runId": os.environ.get("PLANENGINE_RUN_ID") if command == "run" else None, "fromSnapshot": snapshot,
             "host": socket.gethostname()}
    root = job_root_of(rest)
    root.mkdir(parents=True, exist_ok=True)  # compile is the first command of a new job root
    with open(root / ".contract-calls.jsonl", "a") as log:
        log.write(json.dumps(entry) + "\n")
    if command == "check" and opts.check_exit:
        plan = json.loads(Path(rest[rest.index("--plan") + 1]).read_text()) if "--plan" in rest else {}
        print(json.dumps({
            "status": "incompatible", "exitCode": opts.check_exit, "engineVersion": opts.label,
            "planId": plan.get("planId"),
            "reasons": [f"engine {opts.label} cannot restore this plan (test wrapper: check refuses)"],
        }, indent=2))
        return opts.check_exit
    if command == "run" and opts.crash_run is not None:
        print(f"engine {opts.label}: simulated crash {opts.crash_run:g}s after start (test wrapper)",
              file=sys.stderr, flush=True)
        time.sleep(opts.crash_run)
        return 1
    for leaked in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):  # the local launcher drops these too (each
        os.environ.pop(leaked, None)  # engine build must use its own interpreter); kept for direct use
    if command == "run" and opts.crash_after_commits is not None:
        return crash_after_commits([opts.wrapped, *rest], opts.crash_after_commits)
    os.execv(opts.wrapped, [opts.wrapped, *rest])
    return 127  # not reached


def job_root_of(args: list[str]) -> Path:
    """``--job-root``, else the directory of the job root's ``plan.json`` (``--plan`` or ``-o``), else the working
    directory (the job root under the local launcher; a pod's is the image's, read-only)."""
    if "--job-root" not in args and os.environ.get("PLANENGINE_JOB_ROOT"):  # a tool: the launcher says which job
        return Path(os.environ["PLANENGINE_JOB_ROOT"])
    for flag in ("--job-root", "--plan", "-o"):
        if flag in args and args.index(flag) + 1 < len(args):
            value = Path(args[args.index(flag) + 1])
            if flag == "--job-root":
                return value
            if value.name in ("plan.json", "plan.json.new"):
                return value.parent
    return Path.cwd()


def crash_after_commits(argv: list[str], commits: int) -> int:
    port = int(argv[argv.index("--status-port") + 1])
    host = os.environ.get("PLANENGINE_STATUS_HOST", "127.0.0.1")
    child = subprocess.Popen(argv)
    while child.poll() is None:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/v1/status", timeout=2) as answer:
                status = json.loads(answer.read())
        except (OSError, ValueError):
            status = {}
        # Every query must have committed: with a shared topology (plan format 2) the sinks' fan-out query and
        # a channel consumer commit independently, and a crash after the first commit of either would leave
        # the other with nothing past the upgrade snapshot.
        queries = status.get("queries") or []
        if queries and min(int(q.get("batchesTotal") or 0) for q in queries) >= commits:
            print(f"simulated crash after {commits} committed batches (test wrapper)", file=sys.stderr, flush=True)
            os.killpg(0, signal.SIGKILL)
        time.sleep(0.2)
    return child.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
