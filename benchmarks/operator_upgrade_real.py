"""Upgrade downtime with the real engine: real kopf, the real control plane, ``planengine`` drivers; either launcher.

One stateless job (filesystem json -> calc -> Spark's file sink, plus a 10 s tumbling-window count) fed one input
file per 0.5 s is upgraded back and forth between the two engine builds of the e2e tests (``0.1`` = ``.venv``,
PySpark 4.3; ``0.2`` = ``.venv-spark42``, PySpark 4.2), ``--upgrades`` times. Each upgrade: check on the target,
the target started as a warm standby (``run --standby``: JVM, session, plan, warm-up) while the old driver
still commits, ``POST /v1/stop`` with a snapshot on the old driver, ``POST /v1/start`` with the snapshot on
the standby, stability gate. Downtime is the old run's last ``commits/<id>`` file -> the new run's first one
after the snapshot, split into: stop (last commit -> snapshot manifest ``createdAt``), handover (snapshot ->
``run.json`` of the new run: old driver exit confirmed, status written, ``POST /v1/start``, snapshot
forked; on the cold path this includes the JVM start) and first batch (``run.json`` -> first commit:
translation, query start, the replayed batch). "standby lead" is how long before the snapshot the
target's process was started (the JVM start the standby hides). Every input row is checked to be in the
output exactly once at the end.

``--launcher local`` runs the drivers as processes of this machine (the local launcher). ``--launcher
kubernetes`` takes the path a cluster takes: the Kubernetes launcher's pods run by the test kubelet
(``tests/operator/kubelet``, needs root for its sandbox; executors in-process): the target is a standby *pod*
reached through its own Service, the old driver's pod is stopped through ``POST /v1/stop``, deleted and awaited
(Terminating until the kubelet confirmed it dead), the snapshot's manifest is read through a ``planengine
snapshots list`` tool pod, the standby is started and relabelled ``active``. Each launcher replaces its own
section of ``benchmarks/results/operator_reconcile.md`` (the rest of the file is left alone). One benchmark for
both, so the two paths' numbers are measured the same way.

    .venv/bin/python -m benchmarks.operator_upgrade_real [--launcher local|kubernetes] [--upgrades 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("PLANENGINE_OPERATOR_TICK", "0.3")  # fixed at handler import
REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(REPO), str(REPO / "operator")) if p not in sys.path]

from benchmarks.real_world import real_world  # noqa: E402
from tests.operator.e2e.harness import (  # noqa: E402
    REAL_TARGET,
    World,
    commit_times,
    handover_downtime,
    sink_uid,
    snapshot_last_batch,
    spark42_available,
    wait_for,
)
from tests.operator.kubelet import sandbox  # noqa: E402

CRD = REPO / "crds" / "sparkplanjobs.planengine.io.yaml"
RESULTS = REPO / "benchmarks" / "results" / "operator_reconcile.md"
# One section per launcher (the local one keeps its historical title, which earlier results are filed under).
SECTIONS = {"local": "## Upgrade downtime with the real engine",
            "kubernetes": "## Upgrade downtime with the real engine on the Kubernetes launcher"}


def section(launcher: str, executors: int) -> str:
    """The results file's heading for one launcher and executor count (0: the historical titles)."""
    if executors == 0:
        return SECTIONS[launcher]
    return f"{SECTIONS[launcher]}, {executors} executor pods"
SETUPS = {
    "local": "Real kopf + the real control plane + the local launcher + the real `planengine` CLI (through "
             "`tests/operator/e2e/engine_wrapper.py`, which records and `exec`s).",
    "kubernetes": "Real kopf + the real control plane + the **Kubernetes launcher**, its pods run by the test "
                  "kubelet (driver, standby and tool pods; executors in-process, `local[1]`) with the real "
                  "`planengine` CLI as the images' entrypoint (through `tests/operator/e2e/engine_wrapper.py`).",
}


def _iso_seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _load() -> float:
    return os.getloadavg()[0]


def executor_spec(executors: int) -> dict[str, Any]:
    """The job's ``spec`` fields for ``executors`` executor pods (none: Spark runs the tasks in the driver).

    A quarter core requested per executor, as ``tests/operator/e2e/test_executor_pods.py``: the scenario node
    declares a cluster worker's capacity, so the active driver, the warm standby and both drivers' executors fit
    at once (on this 2-core machine they share its cores, which the load figures show)."""
    if executors == 0:
        return {}
    return {"executor": {"instances": executors, "cores": 1, "memory": "1Gi"},
            "sparkConf": {"spark.kubernetes.executor.request.cores": "250m"}}


def upgrades(count: int, launcher: str = "local", executors: int = 0) -> list[dict[str, Any]]:
    measured: list[dict[str, Any]] = []
    extra = executor_spec(executors)
    # A killed driver may still be removing its RocksDB files when the directory goes: not the benchmark's failure.
    with (tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp,
          real_world(Path(tmp), launcher, executors=executors) as world):
        root = world.storage_root(Path(tmp) / "root")  # on Kubernetes: the subPath "root" of the jobs claim
        world.start_operator()
        name = "bench"
        world.add_input(name, 3)
        world.apply(world.job_manifest(name, "0.1", storage=root, **extra))
        world.wait_status(name, lambda s: s.get("phase") == "Running", "Running", timeout=120)
        world.assert_exactly_once(name, timeout=900)
        engines = ["0.1", REAL_TARGET]
        for index in range(count):
            before = world.status(name)
            target = engines[(index + 1) % 2]
            load = _load()
            # Caught up before the next upgrade, with no new input meanwhile: a driver reading one file per
            # batch may be slower than a file per 0.5 s (the 0.2 driver's pod was, 2026-11-27), so waiting
            # while feeding never ended.
            wait_for(lambda: len(world.output(name)) >= len(world.input_rows(name)), 600,
                     "the old engine is caught up")
            with world.feeding(name, every=0.5):
                world.apply(world.job_manifest(name, target, storage=root, **extra))
                status = world.wait_status(
                    name, lambda s, r=before["runId"]: ended(s, r), f"upgrade {index} ended", timeout=900)
            if status["upgrade"]["step"] != "Succeeded":  # a refusal or rollback is a result: record it, stop
                measured.append({"from": before["engineVersion"], "to": target, "load": load, "load_end": _load(),
                                 "outcome": status["upgrade"]["step"], "message": status["upgrade"].get("message"),
                                 "executors": executors})
                print(measured[-1], flush=True)
                break
            old, new, snap = before["runId"], status["runId"], status["upgrade"]["snapshot"]
            manifest = json.loads((root / "snapshots" / snap / "manifest.json").read_text())
            uid = sink_uid(root, world.sink(name))
            last = snapshot_last_batch(root, snap, uid)
            old_commit = commit_times(root, old, uid)[last]
            first_new = min(t for b, t in commit_times(root, new, uid).items() if b > last)
            call = next(c for c in world.calls(root, "run") if c["runId"] == new)
            session = _iso_seconds(json.loads((root / "runs" / new / "run.json").read_text())["createdAt"])
            snapshot_at = _iso_seconds(manifest["createdAt"])
            measured.append({
                "from": before["engineVersion"], "to": target, "load": load, "load_end": _load(),
                "path": "cold" if call.get("fromSnapshot") else "standby",
                "downtime": handover_downtime(root, world.sink(name), old, new, snap),
                "stop": snapshot_at - old_commit, "handover": session - snapshot_at,
                "first_batch": first_new - session, "lead": snapshot_at - call["at"],
                "executors": executors,
            })
            print(measured[-1], flush=True)
        rows, missing, duplicates = exactly_once(world, name)
    for m in measured:
        m.update(rows=rows, missing=missing, duplicates=duplicates)
    return measured


def ended(status: dict[str, Any], old_run: str) -> bool:
    """The upgrade away from ``old_run`` reached its outcome: Succeeded on a new run, or Refused, RolledBack or
    Failed (each a result the table shows, instead of waiting out the timeout)."""
    step = (status.get("upgrade") or {}).get("step")
    if status.get("operation") or (status.get("upgrade") or {}).get("fromRunId") != old_run:
        return False
    return step in ("Refused", "RolledBack", "Failed") or (step == "Succeeded" and status.get("runId") != old_run)


def exactly_once(world: World, name: str, settle: float = 300) -> tuple[int, int, int]:
    """(input rows, missing, duplicated) once the output stops growing (bounded): a loss is reported, not
    waited for."""
    wanted = world.input_rows(name)
    with contextlib.suppress(AssertionError):
        wait_for(lambda: len(world.output(name)) >= len(wanted), settle, "all input rows in the output")
    got = [row for row, _ in world.output(name)]
    return len(wanted), len(set(wanted) - set(got)), len(got) - len(set(got))


def render(measured: list[dict[str, Any]], command: str, launcher: str = "local", executors: int = 0) -> str:
    refused = [m for m in measured if "outcome" in m]
    measured = [m for m in measured if "outcome" not in m]
    downtimes = [m["downtime"] for m in measured] or [float("nan")]
    where = (f" Each driver runs {executors} executor pods (a quarter core requested each), which the drivers' "
             "Spark creates through the API server and the kubelet runs through `planengine-spark-executor`; "
             "the standby's executors start with it." if executors else "")
    setup = SETUPS[launcher].replace("executors in-process, `local[1]`", "executors as below") if executors \
        else SETUPS[launcher]
    lines = [
        section(launcher, executors),
        "",
        f"- Command: `{command}`; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores; engine builds: "
        f"`.venv` (PySpark 4.3) and `.venv-spark42` ({'PySpark 4.2' if spark42_available() else 'missing: .venv'})",
        f"- {setup}{where} The harness job (json -> calc -> "
        "file sink, plus a 10 s tumbling-window count), one input file per "
        f"0.5 s; {measured[0]['rows'] if measured else 0} input rows; at the end "
        f"{measured[0]['missing'] if measured else 0} missing and {measured[0]['duplicates'] if measured else 0} "
        "duplicated in the committed output (exactly once: 0 and 0).",
        "",
        "| # | upgrade | path | load avg (start / end) | downtime s | stop | handover | first batch | "
        "standby lead |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for index, m in enumerate(measured, 1):
        lines.append(f"| {index} | {m['from']} -> {m['to']} | {m['path']} | {m['load']:.1f} / {m['load_end']:.1f} | "
                     f"{m['downtime']:.1f} | {m['stop']:.1f} | {m['handover']:.1f} | {m['first_batch']:.1f} | "
                     f"{m['lead']:.1f} |")
    for m in refused:
        lines.append(f"| {len(measured) + 1} | {m['from']} -> {m['to']} | **{m['outcome']}** | {m['load']:.1f} / "
                     f"{m['load_end']:.1f} | {str(m['message'] or '')[:160]} | | | | |")
    lines += [
        "",
        f"- **Median downtime {statistics.median(downtimes):.1f} s** (min {min(downtimes):.1f}, max "
        f"{max(downtimes):.1f}) over {len(downtimes)} upgrades; target <= 15 s.",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str, path: Path = RESULTS) -> None:
    """Replace (or append) the section whose heading is ``text``'s first line, keeping everything else in the
    results file (headings are matched as whole lines: one launcher's title is a prefix of the other's)."""
    heading = text.splitlines()[0]
    old = path.read_text() if path.exists() else ""
    found = re.search(rf"^{re.escape(heading)}$", old, flags=re.MULTILINE)
    if found:
        head, tail = old[:found.start()], old[found.end():]
        rest = tail.split("\n## ", 1)
        old = head.rstrip("\n") + "\n\n" + ("## " + rest[1] if len(rest) > 1 else "")
    path.write_text(old.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upgrades", type=int, default=5)
    parser.add_argument("--launcher", choices=sorted(SECTIONS), default="local",
                        help="local: driver processes on this machine; kubernetes: pods run by the test kubelet")
    parser.add_argument("--executors", type=int, default=0,
                        help="executor pods per driver (Kubernetes launcher only; 0: tasks run in the driver)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.executors and args.launcher != "kubernetes":
        parser.error("--executors needs --launcher kubernetes (the local launcher has no pods)")
    started = time.monotonic()
    if args.launcher == "kubernetes" and (why := sandbox.available()) is not None:
        print(f"operator_upgrade_real --launcher kubernetes: {why}", file=sys.stderr)
        return 2
    measured = upgrades(args.upgrades, args.launcher, args.executors)
    command = "python -m benchmarks.operator_upgrade_real" + (f" {' '.join(argv)}" if argv else "")
    text = render(measured, command, args.launcher, args.executors)
    text += f"- Wall time {time.monotonic() - started:.0f} s.\n"
    write_section(text, Path(args.out))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
