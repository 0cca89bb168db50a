"""``planengine job-root read|write KEY --job-root ROOT``: one file of a job root, through its ``JobStore``.

The operator on Kubernetes never mounts a job root and never imports the engine: it reads and writes the job
root's files (a migrated plan, a replaced plan in force) in a short-lived tool pod. On a volume that was ``cat`` and
``cp``; on an ``s3a://`` root there is no file to ``cat``, so the tool pod runs this command, which goes through the
same store the engine writes with (``S3JobStore`` for ``s3a://``, ``LocalJobStore`` for a directory) and reads the
store's address and credentials from the same variables (``PLANENGINE_S3_*``, ``AWS_*``).

``read`` prints the bytes; with ``--json``, one line ``{"key", "exists", "text"}`` that a machine can find in a
container log which also holds warnings (a missing key is ``"exists": false`` and exit 0, so a reader tells
"absent" from "the store failed", exit 2). ``write`` replaces the object whole (create if absent, else
compare-and-swap on the version it read), from ``--from FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planengine.errors import UserError
from planengine.runtime.storage.job_store import AlreadyExists, Conflict, JobStore, LocalJobStore
from planengine.runtime.storage.object_store import is_object_store


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "job-root", help="read or write one file of a job root (a directory or s3a://bucket/prefix)",
        description="read: print one file of the job root (a key such as plan.json or "
                    "snapshots/<id>/manifest.json). write: replace one file with the content of --from.")
    p.add_argument("action", choices=("read", "write"), help="read a key, or write it from --from")
    p.add_argument("key", help="the file's path inside the job root, e.g. plan.json")
    p.add_argument("--job-root", required=True, metavar="ROOT", help="the job's storage root (as given to run)")
    p.add_argument("--json", action="store_true", help='read: print one JSON line {"key", "exists", "text"}')
    p.add_argument("--from", dest="source", metavar="FILE", help="write: the file whose content is written")
    p.set_defaults(handler=run)


def open_store(root: str) -> JobStore:
    """The store of ``root``: an object-store prefix, or a directory."""
    if is_object_store(root):
        from planengine.runtime.storage.s3_job_store import S3JobStore  # noqa: PLC0415 — boto3 only when needed

        return S3JobStore(root, named_by="--job-root")
    return LocalJobStore(root.removeprefix("file://"))


def run(args: argparse.Namespace) -> int:
    store = open_store(args.job_root)
    try:
        current = store.read(args.key)
    except ValueError as exc:  # a key that leaves the root
        raise UserError(str(exc), hint="name a file inside the job root, e.g. plan.json") from None
    if args.action == "read":
        return _read(args, current)
    if not args.source:
        raise UserError("job-root write needs --from FILE", hint="planengine job-root write KEY --job-root R --from F")
    data = Path(args.source).read_bytes()
    try:
        if current is None:
            store.create(args.key, data)
        elif current.data != data:
            store.replace(args.key, data, expected=current.version)
    except (AlreadyExists, Conflict):
        raise UserError(f"{store.location(args.key)} changed while it was written",
                        hint="another writer is at work on this job root; try again once it is done") from None
    print(json.dumps({"key": args.key, "written": True}))
    return 0


def _read(args: argparse.Namespace, current) -> int:  # type: ignore[no-untyped-def]
    if args.json:
        answer = {"key": args.key, "exists": current is not None}
        if current is not None:
            answer["text"] = current.data.decode("utf-8", errors="replace")
        print(json.dumps(answer))
        return 0
    if current is None:
        raise UserError(f"{args.job_root} has no {args.key}", hint="planengine snapshots list shows what it holds")
    sys.stdout.buffer.write(current.data)
    sys.stdout.flush()
    return 0
