#!/usr/bin/env python3
"""Contract test double of the engine CLI (DESIGN §6), for the operator's end-to-end tests.

NOT the engine. It implements the *contract* the operator relies on, faithfully and nothing more:

* ``compile FILE [-o plan.json]``: writes a plan envelope with a ``planId`` (sha256 of the canonical body), to
  stdout without ``-o``.
  The "program" is a copy from the first ``'path' = '...'`` in the script (a directory of input files) to
  the second (the sink directory).
* ``check --plan P [--snapshot S] --json``: exit 0 / 3 / 4 (compatible / needs migration / incompatible)
  chosen by ``--check-exit N`` in the engine's command prefix; the JSON says why. A snapshot without a
  ``manifest.json`` (missing or incomplete) is incompatible (exit 4), as the engine's state check says.
* ``migrate --plan OLD -o NEW``: rewrites the plan for this engine version.
* ``run --plan P --job-root R [--from-snapshot S] [--status-port N] [--until-idle]``: a new run directory
  ``runs/<run-id>/checkpoints/<uid>/`` (the run id comes from ``PLANENGINE_RUN_ID``), seeded by copying
  the snapshot's checkpoints; one input file per batch; the sink commits exactly once by batch id
  (``<sink>/batch-<uid>-<id>.txt`` written atomically, skipped when it already exists, like Spark's file
  sink manifest); the checkpoint commit follows. Before every commit it checks the writer lock file
  (``PLANENGINE_WRITER_LOCK``) and exits 5 when another run holds it (fencing).
  Status API: ``GET /healthz``, ``GET /v1/status``, ``POST /v1/stop`` (stop at a batch boundary, write
  ``snapshots/<id>/{plan.json,checkpoints/,manifest.json}`` with ``queries.<uid>.lastBatchId`` in the
  manifest, answer ``{"stopped": true, "snapshotId": id}`` like the engine's status server, exit 0),
  ``GET /metrics``. SIGTERM = stop with a snapshot. ``POST /v1/stop`` needs ``Authorization: Bearer <token>``
  with the token in the file ``PLANENGINE_CONTROL_TOKEN_FILE`` names (401 otherwise; without the variable it
  is open, as the engine on loopback), and a ``Content-Length`` from 0 to 64 KiB (400 otherwise). Each query of
  ``/v1/status`` reports ``dataAvailable`` (input files not yet committed), ``triggerActive`` (false),
  ``lastInputRows`` (rows of the run's last batch, 0 when it found nothing) and ``caughtUp`` (active, has looked
  at its source, and nothing pending), as the engine does.
* ``snapshot --job-root R``: forks the newest run's checkpoint into a snapshot, prints ``{"snapshot": id}``.

Every invocation appends one JSON line ``{"command", "engine", "runId", "snapshot", "at", "host", "conf"}`` to
``.contract-calls.jsonl`` in the job root it works on (``job_root_of``), so tests can count side effects:
checks, snapshots, driver starts. ``run`` and ``check`` accept ``--conf`` (recorded); ``snapshots list|delete``
answer like the engine's. The status API binds ``PLANENGINE_STATUS_HOST`` (default 127.0.0.1).

Knobs (put them before the command, in the operator's ``localCommand`` for an engine version):
``--engine-version V``, ``--check-exit N``, ``--check-snapshot-exit N`` (the exit code of ``check`` when it
is given ``--snapshot``: this engine cannot read that state), ``--crash-after-batches N`` (exit 1 after N
committed batches of a run that started from a snapshot: a target that commits output, then dies;
``--crash-without-snapshot`` applies it to runs started without one too, as a stateless upgrade's target),
``--files-per-batch all`` (a batch takes every pending input file, as Spark's file source plans it, instead
of one: re-planning a batch id later then sees other input, and the sink skips the id as committed),
``--batch-interval S``.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

UID = "1_contract-copy-1_copy"


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def plan_for(engine: str, source: str, sink: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {
        "formatVersion": 1, "engineVersion": engine, "sparkVersion": "4.3.0", "config": extra or {},
        "nodes": [{"id": 1, "type": "contract-copy_1", "configuration": {"source": source, "sink": sink}}],
        "edges": [],
    }
    return {**body, "planId": hashlib.sha256(canonical(body).encode()).hexdigest()}


def cmd_compile(args: argparse.Namespace, knobs: argparse.Namespace) -> int:
    script = Path(args.file).read_text()
    paths = re.findall(r"'path'\s*=\s*'([^']+)'", script)
    if len(paths) < 2:
        print(f"{args.file}: line 1, column 1: need a source and a sink table with 'path'", file=sys.stderr)
        return 2
    options = dict(re.findall(r"SET\s+'([^']+)'\s*=\s*'([^']*)'", script))
    plan = plan_for(knobs.engine_version, paths[0], paths[1], options)
    if not args.output:  # the CLI contract: without -o the plan goes to stdout
        sys.stdout.write(json.dumps(plan, indent=2, sort_keys=True))
        return 0
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(plan, indent=2, sort_keys=True))
    return 0


def cmd_check(args: argparse.Namespace, knobs: argparse.Namespace) -> int:
    plan = json.loads(Path(args.plan).read_text())
    if args.snapshot and not (Path(args.snapshot) / "manifest.json").is_file():  # as the engine's state check
        print(json.dumps({"compatible": False, "needsMigration": False, "planId": plan.get("planId"),
                          "engineVersion": knobs.engine_version,
                          "reasons": [f"snapshot {args.snapshot} is incomplete: it has no manifest.json"]}))
        return 4
    code = knobs.check_snapshot_exit if args.snapshot and knobs.check_snapshot_exit is not None else knobs.check_exit
    reasons = {0: [], 3: [f"node contract-copy_1 is below the minimum plan version of {knobs.engine_version}"],
               4: [f"engine {knobs.engine_version} cannot restore node contract-copy_1 (state layout changed)"
                   + (f" in snapshot {Path(args.snapshot).name}" if args.snapshot else "")]}
    print(json.dumps({"compatible": code == 0, "needsMigration": code == 3, "planId": plan.get("planId"),
                      "engineVersion": knobs.engine_version, "reasons": reasons.get(code, ["?"])}))
    return code


def cmd_migrate(args: argparse.Namespace, knobs: argparse.Namespace) -> int:
    old = json.loads(Path(args.plan).read_text())
    node = old["nodes"][0]["configuration"]
    new = plan_for(knobs.engine_version, node["source"], node["sink"], {**old["config"], "migratedFrom":
                                                                         old["engineVersion"]})
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(new, indent=2, sort_keys=True))
    return 0


def read_checkpoint(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / "commit.json").read_text())
    except (OSError, ValueError):
        return {"batchId": -1, "files": []}


def write_snapshot(job_root: Path, run_dir: Path, engine: str, plan_text: str, reason: str) -> str:
    snapshot_id = datetime.now(UTC).strftime("s%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    final = job_root / "snapshots" / snapshot_id
    tmp = job_root / "snapshots" / f".{snapshot_id}.tmp"
    shutil.copytree(run_dir / "checkpoints", tmp / "checkpoints")
    (tmp / "plan.json").write_text(plan_text)
    commit = read_checkpoint(tmp / "checkpoints" / UID)
    plan = json.loads(plan_text)
    (tmp / "manifest.json").write_text(json.dumps({
        "engineVersion": engine, "sparkVersion": "4.3.0", "planId": plan.get("planId"),
        "snapshotId": snapshot_id, "queries": {UID: {"lastBatchId": commit["batchId"]}}, "createdAt": now_iso(),
        "reason": reason,
        "runId": run_dir.name,
    }))
    tmp.rename(final)
    with open(job_root / ".contract-calls.jsonl", "a") as log:
        log.write(json.dumps({"command": "wrote-snapshot", "snapshot": snapshot_id, "engine": engine,
                              "reason": reason, "runId": run_dir.name, "at": time.time()}) + "\n")
    return snapshot_id


def cmd_snapshot(args: argparse.Namespace, knobs: argparse.Namespace) -> int:
    root = Path(args.job_root)
    runs = [r for r in (root / "runs").glob("*") if (r / "checkpoints" / UID / "commit.json").exists()]
    if not runs:
        print(json.dumps({"snapshot": None, "message": "no committed checkpoint yet"}))
        return 0
    newest = max(runs, key=lambda r: (r / "checkpoints" / UID / "commit.json").stat().st_mtime)
    plan_text = (root / "plan.json").read_text()
    print(json.dumps({"snapshot": write_snapshot(root, newest, knobs.engine_version, plan_text, "manual")}))
    return 0


def _migrates(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``new`` is this double's ``migrate`` of ``old`` (the same copy, ``migratedFrom`` the old engine)."""
    return (new.get("config", {}).get("migratedFrom") == old.get("engineVersion")
            and new["nodes"][0]["configuration"] == old["nodes"][0]["configuration"])


def plan_to_run(root: Path, plan_text: str, from_snapshot: str | None) -> str:
    """The engine's plan-in-force rule (``planengine/runtime/storage/plan_in_force.py``), so the operator's tests fail
    when it launches a plan the engine would refuse: ``run --plan P`` installs P into a root without a plan;
    another plan than the one in force runs only from a snapshot whose plan it is or migrates from (and is in
    force from then on), or, without a snapshot, when the plan in force is its migration (that one runs)."""
    installed = root / "plan.json"
    if not installed.exists():
        installed.write_text(plan_text)
        return plan_text
    in_force, given = json.loads(installed.read_text()), json.loads(plan_text)
    if in_force.get("planId") == given.get("planId"):
        return plan_text
    if from_snapshot:
        of_snapshot = json.loads((Path(from_snapshot) / "plan.json").read_text())
        if given.get("planId") == of_snapshot.get("planId") or _migrates(of_snapshot, given):
            installed.write_text(plan_text)
            return plan_text
    elif _migrates(given, in_force):
        return installed.read_text()
    print(f"planengine: error: job root {root} already runs plan {in_force.get('planId')}; the given plan is "
          f"{given.get('planId')} (from snapshot {from_snapshot})", file=sys.stderr)
    sys.exit(2)


class Driver:
    def __init__(self, args: argparse.Namespace, knobs: argparse.Namespace) -> None:
        self.args, self.knobs = args, knobs
        self.root = Path(args.job_root)
        self.run_id = os.environ.get("PLANENGINE_RUN_ID") or "run-" + uuid.uuid4().hex[:8]
        self.run_dir = self.root / "runs" / self.run_id
        self.lock = os.environ.get("PLANENGINE_WRITER_LOCK")
        self.plan_text = Path(args.plan).read_text()
        config = json.loads(self.plan_text)["nodes"][0]["configuration"]
        self.source, self.sink = Path(config["source"]), Path(config["sink"])
        self.stop_request: dict[str, Any] | None = None
        self.stopped = threading.Event()
        self.snapshot_id: str | None = None
        self.last_commit_at: str | None = None
        self.batches_this_run = 0
        self.state = "ACTIVE"
        self.polled = False  # looked at the source at least once (the engine: reported progress)
        self.last_input_rows: int | None = None
        token_file = os.environ.get("PLANENGINE_CONTROL_TOKEN_FILE")
        self.token = Path(token_file).read_text().strip() if token_file else None

    def checkpoint_dir(self) -> Path:
        return self.run_dir / "checkpoints" / UID

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.plan_text = plan_to_run(self.root, self.plan_text, self.args.from_snapshot)
        if self.args.from_snapshot:
            shutil.copytree(Path(self.args.from_snapshot) / "checkpoints", self.run_dir / "checkpoints",
                            dirs_exist_ok=True)
        self.checkpoint_dir().mkdir(parents=True, exist_ok=True)
        self.sink.mkdir(parents=True, exist_ok=True)

    def fenced(self) -> bool:
        if not self.lock:
            return False
        try:
            return json.loads(Path(self.lock).read_text()).get("runId") != self.run_id
        except (OSError, ValueError):
            return False

    def one_batch(self) -> bool:
        commit = read_checkpoint(self.checkpoint_dir())
        done = set(commit["files"])
        pending = sorted(p.name for p in self.source.glob("*.txt") if p.name not in done)
        self.polled = True
        if not pending:
            self.last_input_rows = 0
            return False
        if self.fenced():
            print(f"fenced: writer lock is held by another run, {self.run_id} stops", file=sys.stderr)
            os._exit(5)
        batch_id = commit["batchId"] + 1
        planned = pending if self.knobs.files_per_batch == "all" else pending[:1]
        rows = [row for name in planned for row in (self.source / name).read_text().splitlines()]
        target = self.sink / f"batch-{UID}-{batch_id:06d}.txt"
        if not target.exists():  # exactly once: a replayed batch id is already committed
            tmp = target.with_suffix(".tmp")
            tmp.write_text("".join(f"{row}\t{self.knobs.engine_version}\n" for row in rows))
            tmp.rename(target)
        new_commit = {"batchId": batch_id, "files": [*commit["files"], *planned]}
        tmp = self.checkpoint_dir() / "commit.json.tmp"
        tmp.write_text(json.dumps(new_commit))
        tmp.rename(self.checkpoint_dir() / "commit.json")
        self.last_commit_at = now_iso()
        self.batches_this_run += 1
        self.last_input_rows = len(rows)
        return True

    def pending_input(self) -> bool:
        done = set(read_checkpoint(self.checkpoint_dir())["files"])
        return any(p.name not in done for p in self.source.glob("*.txt"))

    def status(self) -> dict[str, Any]:
        commit = read_checkpoint(self.checkpoint_dir())
        available = self.pending_input()
        return {
            "engineVersion": self.knobs.engine_version, "sparkVersion": "4.3.0",
            "planId": json.loads(self.plan_text).get("planId"), "runId": self.run_id,
            "queries": [{"uid": UID, "state": self.state, "lastBatchId": commit["batchId"],
                         "lastCommitAt": self.last_commit_at, "inputRowsPerSecond": 0.0,
                         "processedRowsPerSecond": 0.0, "watermark": None, "exception": None,
                         "dataAvailable": available, "triggerActive": False, "lastInputRows": self.last_input_rows,
                         "caughtUp": self.state == "ACTIVE" and self.polled and not available}],
        }

    def serve(self) -> None:
        driver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def reply(self, code: int, body: Any, ctype: str = "application/json") -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/healthz":
                    self.reply(200, {"ok": True})
                elif self.path == "/v1/status":
                    self.reply(200, driver.status())
                elif self.path == "/metrics":
                    batch = read_checkpoint(driver.checkpoint_dir())["batchId"]
                    self.reply(200, f'planengine_last_batch_id{{uid="{UID}"}} {batch}\n', "text/plain")
                else:
                    self.reply(404, {"error": "not found"})

            def do_POST(self) -> None:
                if self.path != "/v1/stop":
                    self.reply(404, {"error": "not found"})
                    return
                given = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
                if driver.token is not None and not hmac.compare_digest(given.encode(), driver.token.encode()):
                    self.close_connection = True
                    self.reply(401, {"error": "missing or wrong control token"})
                    return
                text = (self.headers.get("Content-Length") or "0").strip()
                if not text.isdigit() or int(text) > 64 * 1024:
                    self.close_connection = True
                    self.reply(400, {"error": f"bad Content-Length {text!r}"})
                    return
                request = json.loads(self.rfile.read(int(text)) or b"{}")
                driver.stop_request = {"snapshot": bool(request.get("snapshot", True))}
                driver.stopped.wait(60)
                answer: dict[str, Any] = {"stopped": True, "snapshotId": driver.snapshot_id}
                if driver.snapshot_id:  # like the engine: the manifest of the snapshot it wrote
                    answer["manifest"] = json.loads(
                        (driver.root / "snapshots" / driver.snapshot_id / "manifest.json").read_text())
                self.reply(200, answer)

        host = os.environ.get("PLANENGINE_STATUS_HOST", "127.0.0.1")  # a pod binds its pod IP, as the engine
        server = ThreadingHTTPServer((host, self.args.status_port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def run(self) -> int:
        self.prepare()
        if self.args.status_port:
            self.serve()
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop_request", {"snapshot": True}))
        crash_after = self.knobs.crash_after_batches
        while True:
            if self.stop_request is not None:  # at a batch boundary
                if self.stop_request["snapshot"]:
                    self.snapshot_id = write_snapshot(self.root, self.run_dir, self.knobs.engine_version,
                                                      self.plan_text, "upgrade")
                self.state = "STOPPED"
                self.stopped.set()
                time.sleep(0.3)  # let the HTTP answer leave before the process exits
                return 0
            progressed = self.one_batch()
            from_state = self.args.from_snapshot or self.knobs.crash_without_snapshot
            if crash_after and from_state and self.batches_this_run >= crash_after:
                print("crash-after-batches: simulated crash", file=sys.stderr)
                os._exit(1)
            if not progressed and self.args.until_idle:
                return 0
            time.sleep(self.knobs.batch_interval)


def job_root_of(args: argparse.Namespace) -> Path:
    """The job root a command works on: ``--job-root``, else ``PLANENGINE_JOB_ROOT`` (the launchers set it
    for tools; a Kubernetes ``--plan`` is the mounted ConfigMap), else the directory of ``--plan`` / ``-o``,
    else the working directory."""
    if getattr(args, "job_root", None):
        return Path(args.job_root)
    if os.environ.get("PLANENGINE_JOB_ROOT"):  # the launchers say which job a tool works for
        return Path(os.environ["PLANENGINE_JOB_ROOT"])
    for given in (getattr(args, "plan", None), getattr(args, "output", None)):
        if given and Path(given).name in ("plan.json", "plan.json.new"):
            return Path(given).parent
    return Path.cwd()


def record_call(root: Path, command: str, knobs: argparse.Namespace, **fields: Any) -> None:
    entry = {"command": command, "engine": knobs.engine_version, "at": time.time(), "pid": os.getpid(), **fields}
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".contract-calls.jsonl", "a") as log:
        log.write(json.dumps(entry) + "\n")


def cmd_snapshots(args: argparse.Namespace, knobs: argparse.Namespace) -> int:
    """``snapshots list`` (JSON lines) and ``snapshots delete ID`` (exit 2 when there is no such snapshot)."""
    root = Path(args.job_root) / "snapshots"
    if args.action == "delete":
        target = root / (args.snapshot_id or "")
        if not args.snapshot_id or not (target / "manifest.json").is_file():
            print(f"job root {args.job_root} has no snapshot {args.snapshot_id}", file=sys.stderr)
            return 2
        shutil.rmtree(target)
        print(json.dumps({"deleted": args.snapshot_id}))
        return 0
    for manifest in sorted(root.glob("*/manifest.json")):
        data = json.loads(manifest.read_text())
        print(json.dumps({"snapshot": manifest.parent.name, "complete": True, "createdAt": data.get("createdAt"),
                          "reason": data.get("reason"), "runId": data.get("runId"),
                          "lastBatchIds": {uid: q["lastBatchId"] for uid, q in data.get("queries", {}).items()}}))
    return 0


def main(argv: list[str] | None = None) -> int:
    knobs_parser = argparse.ArgumentParser(add_help=False)
    knobs_parser.add_argument("--engine-version", default="0.1")
    knobs_parser.add_argument("--check-exit", type=int, default=0)
    knobs_parser.add_argument("--check-snapshot-exit", type=int, default=None)
    knobs_parser.add_argument("--crash-after-batches", type=int, default=0)
    knobs_parser.add_argument("--crash-without-snapshot", action="store_true")
    knobs_parser.add_argument("--files-per-batch", choices=("one", "all"), default="one")
    knobs_parser.add_argument("--batch-interval", type=float, default=0.2)
    knobs, rest = knobs_parser.parse_known_args(argv)

    parser = argparse.ArgumentParser(prog="planengine (contract double)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("compile")
    p.add_argument("file")
    p.add_argument("-o", "--output")
    p = sub.add_parser("check")
    p.add_argument("--plan", required=True)
    p.add_argument("--snapshot")
    p.add_argument("--json", action="store_true")
    p.add_argument("--conf", action="append", default=[])
    p = sub.add_parser("migrate")
    p.add_argument("--plan", required=True)
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("run")
    p.add_argument("--plan", required=True)
    p.add_argument("--job-root", required=True)
    p.add_argument("--from-snapshot")
    p.add_argument("--until-idle", action="store_true")
    p.add_argument("--drain", action="store_true")
    p.add_argument("--status-port", type=int, default=0)
    p.add_argument("--conf", action="append", default=[])
    p = sub.add_parser("snapshot")
    p.add_argument("--job-root", required=True)
    p = sub.add_parser("snapshots")
    p.add_argument("action", choices=("list", "delete"))
    p.add_argument("snapshot_id", nargs="?")
    p.add_argument("--job-root", required=True)
    args = parser.parse_args(rest)
    record_call(job_root_of(args), args.command, knobs,
                runId=os.environ.get("PLANENGINE_RUN_ID") if args.command == "run" else None,
                fromSnapshot=getattr(args, "from_snapshot", None), conf=getattr(args, "conf", None) or None,
                host=socket.gethostname())
    if args.command == "run":
        return Driver(args, knobs).run()
    return {"compile": cmd_compile, "check": cmd_check, "migrate": cmd_migrate, "snapshot": cmd_snapshot,
            "snapshots": cmd_snapshots}[args.command](args, knobs)


if __name__ == "__main__":
    raise SystemExit(main())
