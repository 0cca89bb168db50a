"""Drive the real operator (kopf + ``planengine_operator.main``) against a real Kubernetes control plane
(``tests/cluster``: kube-apiserver, etcd, controller-manager, scheduler) and local engines.

The operator runs in-process on a thread with its own event loop (kopf's embedding API), so a test can
stop it gracefully or *kill* it: cancelling its loop's tasks at an exact protocol step is the in-process
equivalent of ``kill -9`` (no cleanup handler runs, no further status write happens). The engine command
is chosen per world: the contract double (``contract_engine.py``, fast, knobs for refusing and crashing
targets) or the real ``planengine`` CLI of two engine builds (``<repo>/.venv`` and ``<repo>/.venv-spark42``)
behind ``engine_wrapper.py``, which records each invocation and injects the refusing / crashing targets.
``PLANENGINE_E2E_ENGINE=contract|real|both`` (default ``both``) selects which of the two test sets run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from planengine_operator.config import OperatorConfig
from tests.cluster.client import ApiClient, ApiError
from tests.cluster.controlplane import ControlPlane
from tests.cluster.waits import wait_for as _wait_for
from tests.cluster.watch import Recorder
from tests.fixtures.cluster import install_driver_rbac
from tests.operator.kubelet.kubelet import ImageSpec, Kubelet
from tests.operator.kubelet.node import create_bound_claim, start_node, stop_node

REPO = Path(__file__).resolve().parents[3]
CONTRACT_ENGINE = Path(__file__).with_name("contract_engine.py")
ENGINE_WRAPPER = Path(__file__).with_name("engine_wrapper.py")
KUBECTL = REPO / ".tools" / "bin" / "kubectl"
GROUP, PLURAL = "planengine.io", "sparkplanjobs"
ENGINE_KIND = os.environ.get("PLANENGINE_E2E_ENGINE", "both")

# Engine versions of the operator's catalog; knobs make the contract double refuse or crash.
ENGINE_KNOBS: dict[str, list[str]] = {
    "0.1": [],
    "0.2": [],
    "0.3": ["--check-exit", "4"],  # the plan check on this engine says "incompatible"
    "0.4": ["--crash-after-batches", "1"],  # the new run dies after its first batch
    "0.6": ["--check-exit", "3"],  # the plan needs migration to this engine (migrate, then run the migrated plan)
    "0.7": ["--check-exit", "3", "--crash-after-batches", "1"],  # migrates, commits a batch, dies
}


# The real engine: two builds of this checkout's planengine (Spark 4.3 in .venv, Spark 4.2 in .venv-spark42,
# made by tests/setup/prepare.d/30-second-engine.sh). Without .venv-spark42 both names run the .venv build.
REAL_ENGINE = REPO / ".venv" / "bin" / "planengine"
SPARK42_ENGINE = REPO / ".venv-spark42" / "bin" / "planengine"
REAL_TARGET = "0.2"
# version -> (executable, wrapper knobs)
# Version names follow the CRD (major.minor[.patch]; the emulated API server enforces its rule): 0.1 is the
# Spark 4.3 build, 0.2 the Spark 4.2 build, 0.3-0.5 the 4.2 build behind wrapper knobs.
REAL_ENGINE_KNOBS: dict[str, tuple[Path, list[str]]] = {
    "0.1": (REAL_ENGINE, []),
    REAL_TARGET: (SPARK42_ENGINE, []),
    "0.3": (SPARK42_ENGINE, ["--check-exit", "4"]),  # check says "incompatible" (exit 4)
    "0.4": (SPARK42_ENGINE, ["--crash-run", "3"]),  # the driver dies 3 s after its start
    "0.5": (SPARK42_ENGINE, ["--crash-after-commits", "1"]),  # dies after its first commit
}


# Which launcher a scenario runs on (the ``launcher`` fixture, both by default). A scenario whose logic does not
# depend on the launcher (admission, status-only rules, the fleet's gating, printer columns, sourceHash) runs
# once, on the local launcher (no pods, the cheapest); its docstring says why. Pod-specific ones run on
# Kubernetes only (``ON_KUBERNETES``). Everything else runs on both: the two launchers implement the protocol's
# side effects (processes vs pods, tool runs, standby, fork, retention, adoption after a restart) differently.
LAUNCHER_INDEPENDENT = pytest.mark.parametrize("launcher", ["local"], indirect=True)
ON_KUBERNETES = pytest.mark.parametrize("launcher", ["kubernetes"], indirect=True)


def spark42_available() -> bool:
    return SPARK42_ENGINE.exists()


def engine_command(version: str, kind: str = "contract") -> list[str]:
    if kind == "real":
        executable, knobs = REAL_ENGINE_KNOBS[version]
        if not executable.exists():
            executable = REAL_ENGINE  # no second build yet: the same engine under both version names
        return [sys.executable, str(ENGINE_WRAPPER), "--wrapped", str(executable), "--label", version, *knobs]
    return [sys.executable, str(CONTRACT_ENGINE), "--engine-version", version, "--batch-interval", "0.1",
            *ENGINE_KNOBS[version]]


# The Kubernetes launcher: engine versions are images, which the test kubelet runs from a venv of this checkout
# at the image's VIRTUAL_ENV; the test's engine command (the contract double, the wrapper around the real
# CLI) is that image's ENTRYPOINT, run by the image's Python.
IMAGE_PYTHON = "/opt/planengine/bin/python"
TEST_FILES = "/opt/planengine-test"  # where a test image has the engine doubles its ENTRYPOINT runs
SCENARIO_NODE = {"cpu": "64", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi"}
CLAIM = "jobs"  # the PersistentVolumeClaim every job root of the Kubernetes worlds lives on (one subPath each)
POD_DATA = Path("/data")  # where pods see the world's data directory (a hostPath volume of the podTemplate)


def engine_image(version: str, command: list[str]) -> tuple[str, ImageSpec]:
    """(image name, its local stand-in) for an engine version whose CLI is ``command`` (a localCommand)."""
    venv = REPO / ".venv"
    # The test's engine scripts are files of the test image (at TEST_FILES), not paths of this checkout: the
    # pod's emptyDir at /tmp would hide a checkout under /tmp, as a real image would not have it at all.
    scripts = {str(script): f"{TEST_FILES}/{script.name}" for script in (CONTRACT_ENGINE, ENGINE_WRAPPER)}
    entrypoint = [IMAGE_PYTHON if arg == sys.executable else scripts.get(arg, arg) for arg in command]
    if str(ENGINE_WRAPPER) in command:  # the real CLI: the image's own planengine, in that build's venv
        wrapped = Path(command[command.index("--wrapped") + 1])
        venv = wrapped.parent.parent
        entrypoint[entrypoint.index("--wrapped") + 1] = f"{Path(IMAGE_PYTHON).parent}/planengine"
    digest = hashlib.sha256(json.dumps([str(venv), entrypoint]).encode()).hexdigest()[:8]
    files = tuple((Path(host), image_path) for host, image_path in scripts.items() if host in command)
    return f"test.local/planengine/engine:{version}-{digest}", ImageSpec(venv, tuple(entrypoint), files)


def operator_config(job_root_base: Path, kind: str = "contract", launcher: str = "local",
                    **overrides: Any) -> OperatorConfig:
    versions = REAL_ENGINE_KNOBS if kind == "real" else ENGINE_KNOBS
    data: dict[str, Any] = {
        "defaultEngineVersion": "0.1",
        "engines": {v: {"localCommand": engine_command(v, kind)} for v in versions},
        "launcher": launcher,
        "jobRootBase": str(job_root_base),
        "metrics": {"port": 0},
        "stability": {"minBatches": 3, "window": "30s"},
        "timing": {"interval": 0.3, "restartBackoffBase": 0.5, "restartBackoffMax": 2, "toolTimeout": 60,
                   "stopTimeout": 30},
    }
    if kind == "real":  # a JVM start is 8-20 s on a quiet machine, minutes on a loaded one
        data["stability"] = {"minBatches": 2, "window": "600s"}
        data["timing"] = {"interval": 0.5, "restartBackoffBase": 2, "restartBackoffMax": 10, "toolTimeout": 300,
                          "stopTimeout": 300}
    admission = overrides.pop("admission", {})
    data.update(overrides)
    if launcher == "kubernetes":  # job_manifest()'s podTemplate mounts the world's data directory (a hostPath)
        data["admission"] = {"allowedHostPathPrefixes": [str(job_root_base.parent / "data")], **admission}
    elif admission:
        data["admission"] = admission
    if launcher == "kubernetes":
        data["engines"] = {v: {**entry, "image": engine_image(v, entry["localCommand"])[0]}
                           for v, entry in data["engines"].items()}
    return OperatorConfig.model_validate(data)


def job_sql(source: Path, sink: Path, kind: str = "contract") -> str:
    """The job's Flink SQL; the contract double copies the first 'path' to the second."""
    if kind == "real":  # one source, two queries: stateless calc -> json sink; native tumbling-window count
        # One input file per batch: watermarks are per record (Flink's rule) and Spark reads the files of one
        # batch in any order, so a row of an earlier file read after a later one would count as late for a
        # window the later rows' watermark closed and be dropped (correctly). These tests are about
        # checkpoints, handover and exactly-once, not lateness: every window must hold all its rows.
        return (
            f"CREATE TABLE clicks (id BIGINT, name STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' "
            f"SECOND) WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'json', "
            "'source.monitor-interval' = '1 s', 'source.max-files-per-trigger' = '1');\n"
            f"CREATE TABLE copied (id BIGINT, name STRING, twice BIGINT) WITH ('connector' = 'filesystem', "
            f"'path' = '{sink}', 'format' = 'json');\n"
            "CREATE TABLE per_window (window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT) WITH ("
            f"'connector' = 'filesystem', 'path' = '{windows_sink(sink)}', 'format' = 'json');\n"
            "EXECUTE STATEMENT SET BEGIN\n"
            "INSERT INTO copied SELECT id, name, id * 2 AS twice FROM clicks WHERE id >= 0;\n"
            "INSERT INTO per_window SELECT window_start, window_end, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE clicks, "
            f"DESCRIPTOR(ts), INTERVAL '{WINDOW_SECONDS}' SECOND)) GROUP BY window_start, window_end;\n"
            "END;\n"
        )
    return (
        f"CREATE TABLE clicks (line STRING) WITH ('connector' = 'filesystem', 'path' = '{source}', "
        "'format' = 'raw');\n"
        f"CREATE TABLE copied (line STRING) WITH ('connector' = 'filesystem', 'path' = '{sink}', "
        "'format' = 'raw');\n"
        "INSERT INTO copied SELECT line FROM clicks;\n"
    )


WINDOW_SECONDS = 10  # input file i has two rows at event time EPOCH + i s (+0.5 s): 2 * WINDOW_SECONDS per window
EPOCH = datetime(2026, 1, 1)


def windows_sink(sink: Path) -> Path:
    return sink.with_name("windows")


def spark_sink_files(sink: Path) -> list[Path]:
    """Files Spark's file sink committed (its ``_spark_metadata`` log: the newest ``N.compact`` plus the
    batches after it); part files of an interrupted batch are in the directory but not in the log."""
    log = sink / "_spark_metadata"
    if not log.is_dir():
        return []
    batches: dict[int, Path] = {}
    compact = -1
    for entry in log.iterdir():
        stem = entry.name.removesuffix(".compact")
        if not stem.isdigit():
            continue
        batches[int(stem)] = entry
        if entry.name.endswith(".compact"):
            compact = max(compact, int(stem))
    files: list[Path] = []
    for batch_id in sorted(b for b in batches if b >= compact):
        lines = batches[batch_id].read_text().splitlines()[1:]  # first line: the log version "v1"
        for line in lines:
            if line.strip():
                item = json.loads(line)
                if item.get("action", "add") == "add":  # a pod's path is the same file in this sink directory
                    files.append(sink / Path(item["path"].removeprefix("file://")).name)
    return files


def sink_uid(root: Path, sink: Path) -> str:
    """The query uid (checkpoint directory name) of the query that writes to ``sink`` (matched by the last two
    path components: a pod names the same directory under its own mount point). A plan with recorded queries
    (format 2, sinks sharing a node) may write the sink from a fan-out query: the one whose ``sinks`` list it."""
    plan = json.loads((root / "plan.json").read_text())
    for node in plan["nodes"]:
        options = ((node.get("table") or {}).get("resolvedTable") or {}).get("options") or {}
        if str(node.get("type", "")).startswith("stream-exec-sink") and \
                Path(str(options.get("path"))).parts[-2:] == sink.parts[-2:]:
            recorded = [q["uid"] for q in plan.get("queries") or [] if node["id"] in q.get("sinks", [])]
            if recorded:
                return recorded[0]
            for query in (root / "runs").glob(f"*/checkpoints/{node['id']}_*"):
                return query.name
    raise AssertionError(f"no query of {root} writes {sink}")


def commit_times(root: Path, run_id: str, uid: str) -> dict[int, float]:
    """Batch id -> mtime of Spark's ``commits/<id>`` file of one query of the run."""
    found: dict[int, float] = {}
    for commit in (root / "runs" / run_id / "checkpoints" / uid / "commits").glob("*"):
        if commit.name.isdigit():
            found[int(commit.name)] = commit.stat().st_mtime
    return found


def snapshot_last_batch(root: Path, snapshot: str, uid: str) -> int:
    manifest = json.loads((root / "snapshots" / snapshot / "manifest.json").read_text())
    return int(manifest["queries"][uid]["lastBatchId"])


def handover_downtime(root: Path, sink: Path, old_run: str, new_run: str, snapshot: str) -> float:
    """Seconds from the old run's last commit to the new run's first commit after the snapshot (the query
    writing ``sink``)."""
    uid = sink_uid(root, sink)
    last = snapshot_last_batch(root, snapshot, uid)
    old = commit_times(root, old_run, uid)
    new = {b: t for b, t in commit_times(root, new_run, uid).items() if b > last}
    assert old and new, (old, new)
    assert max(old) == last, f"the old run committed past its snapshot: {sorted(old)[-3:]} vs {last}"
    return new[min(new)] - old[max(old)]


def sink_batches_ahead(root: Path, sink: Path, snapshot: str, run_id: str) -> dict[str, list[int]]:
    """Per sink directory: batch ids that Spark's file-sink log already held, past the snapshot's last batch
    of the query writing it, when run ``run_id`` started from that snapshot.

    Non-empty means the run re-used batch ids the sink already has: Spark's file sink skips such a batch as
    "already committed", so whatever the re-planned batch read beyond the earlier batch of that id is lost
    (an engine problem: docs/operator.md, "Known engine problems")."""
    marker = json.loads((root / "runs" / run_id / "run.json").read_text())
    started = datetime.fromisoformat(marker["createdAt"].replace("Z", "+00:00")).timestamp()
    found: dict[str, list[int]] = {}
    for directory in (sink, windows_sink(sink)):
        log = directory / "_spark_metadata"
        if not log.is_dir():
            continue
        last = snapshot_last_batch(root, snapshot, sink_uid(root, directory))
        ahead = sorted(int(e.name.removesuffix(".compact")) for e in log.iterdir()
                       if e.name.removesuffix(".compact").isdigit() and int(e.name.removesuffix(".compact")) > last
                       and e.stat().st_mtime < started)
        if ahead:
            found[directory.name] = ahead
    return found


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, describe: Callable[[], Any] = lambda: None,
             interval: float = 0.1) -> Any:
    """Poll until ``predicate()`` is truthy (``tests.cluster.waits.wait_for``, polling faster for the scenarios)."""
    return _wait_for(predicate, timeout, what, describe, interval)


# ------------------------------------------------------------------------------------------ operator
_DEAD_LOOPS: list[asyncio.AbstractEventLoop] = []

class OperatorThread:
    """kopf.operator(...) with the operator's own handlers on a thread; ``kill`` at any moment."""

    def __init__(self, config: OperatorConfig, namespace: str,
                 execute_hook: Callable[..., Any] | None = None) -> None:
        self.config = config
        self.namespace = namespace  # the test's own namespace: other tests' jobs are not this operator's
        self.execute_hook = execute_hook
        self.ready = threading.Event()
        self.stop_flag = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.killed = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="operator", daemon=True)

    def _main(self) -> None:
        loop = self.loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._run())
        except RuntimeError as exc:
            if self.killed:  # stopped under the operator's feet: leave it as a dead process would, and
                _DEAD_LOOPS.append(loop)  # keep it referenced so its abandoned tasks are never finalized
                return
            self.error = exc
        except BaseException as exc:
            self.error = exc
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    async def _run(self) -> None:
        import kopf

        from planengine_operator import main
        from planengine_operator.reconciler import Reconciler

        memo = kopf.Memo(config=self.config)
        main.fill_memo(memo)  # as the startup handler would; then the hook can wrap the reconciler
        if self.execute_hook is not None:
            original = Reconciler._execute
            hook = self.execute_hook

            async def execute(reconciler: Reconciler, job: Any, view: Any, action: Any) -> Any:
                return await hook(original, reconciler, job, view, action)

            memo.reconciler._execute = execute.__get__(memo.reconciler)
        await kopf.operator(standalone=True, namespaces=[self.namespace], ready_flag=self.ready,
                            stop_flag=self.stop_flag, liveness_endpoint=None, memo=memo)

    def start(self) -> OperatorThread:
        self.thread.start()
        if not self.ready.wait(30):
            raise RuntimeError(f"the operator did not become ready: {self.error!r}")
        return self

    def stop(self) -> None:
        """Graceful stop (kopf's cleanup handlers run)."""
        self.stop_flag.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the operator did not stop within 30s"

    def kill(self) -> None:
        """Like kill -9: the operator's loop stops wherever its tasks are; nothing of it runs again (no
        cleanup handler, no status write). Its drivers, like a dead operator's pods, keep running."""
        assert self.loop is not None
        self.killed = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        assert not self.thread.is_alive(), "the operator's loop did not stop within 30s"
        self.stop_flag.set()  # kopf waits for a threading.Event flag in an executor thread: release it


# ------------------------------------------------------------------------------------------ world
class World:
    """One namespace of the real control plane, one operator watching it, job roots and input/output directories
    under ``tmp``; on the Kubernetes launcher a node of its own (the test kubelet) runs the pods."""

    def __init__(self, tmp: Path, plane: ControlPlane, namespace: str, kind: str = "contract",
                 launcher: str = "local", *, operator_identity: ApiClient | None = None) -> None:
        self.tmp = tmp
        self.plane = plane
        self.api: ApiClient = plane.admin
        self.ns = namespace
        self.kind = kind
        self.launcher = launcher
        self.kubeconfig = plane.admin.write_kubeconfig(tmp / "kubeconfig", namespace=namespace)  # kubectl
        # The operator under test logs in as the chart's ServiceAccount (admin only where no identity is given).
        self.operator_kubeconfig = (operator_identity or plane.admin).write_kubeconfig(
            tmp / "operator.kubeconfig", namespace=namespace)
        install_driver_rbac(plane, namespace, tmp)  # the chart's driver ServiceAccount and Role in this namespace
        self.jobs_root = tmp / "jobs"
        self.operator: OperatorThread | None = None
        self._feeders: list[threading.Event] = []
        self.kubelet: Kubelet | None = None
        self.history = Recorder(plane.admin, GROUP, PLURAL, namespace).start()
        if launcher == "kubernetes":  # a node of its own runs the pods; the scheduler places them there
            # A node the size of a cluster's worker, so the scenarios' pods fit at once (two drivers, a standby
            # and a tool pod at 1 CPU each would not fit this 2-core machine's own size); the scheduler still
            # places by requests (tests/cluster/test_node.py runs a small node).
            self.kubelet = start_node(plane, tmp / "node", {}, capacity=SCENARIO_NODE)
            create_bound_claim(plane.admin, namespace, CLAIM, self.kubelet.root / "pvc" / namespace / CLAIM)

    # -------------------------------------------------------------------- operator
    def start_operator(self, execute_hook: Callable[..., Any] | None = None, **config: Any) -> OperatorThread:
        settings = operator_config(self.jobs_root, self.kind, self.launcher, **config)
        if self.kubelet is not None:
            for version, entry in settings.engines.items():
                name, image = engine_image(version, entry.localCommand)
                self.kubelet.images[name] = image
        self.operator = OperatorThread(settings, self.ns, execute_hook).start()
        return self.operator

    def close(self) -> None:
        for stop in self._feeders:
            stop.set()
        if self.operator is not None and self.operator.thread.is_alive():
            self.operator.stop()
        if self.kubelet is not None:  # kills every container it runs, and its Node goes
            stop_node(self.plane, self.kubelet)
        self.history.stop()
        self._release_namespace()
        # Drivers and warm standbys outlive the operator (any job root): a test that failed mid-upgrade must not
        # leave a standby JVM behind.
        for pattern in ("**/.operator/driver.json", "**/.operator/standby.json"):
            for record in self.tmp.glob(pattern):
                with contextlib.suppress(OSError, ValueError, KeyError, ProcessLookupError):
                    os.killpg(int(json.loads(record.read_text())["pid"]), 9)

    def _release_namespace(self) -> None:
        """What no operator is left to do: release the jobs' finalizers and end the pods of the gone node, so
        the namespace controller can empty the namespace (the ``cluster_namespace`` fixture deletes it). The
        node's claim volume is cluster-scoped: it goes here too."""
        with contextlib.suppress(ApiError, OSError):
            for job in self.api.list(GROUP, PLURAL, self.ns):
                if job["metadata"].get("finalizers"):
                    self.api.patch(GROUP, PLURAL, self.ns, job["metadata"]["name"],
                                   {"metadata": {"finalizers": None}})
            for pod in self.api.list("", "pods", self.ns):
                self.api.delete("", "pods", self.ns, pod["metadata"]["name"], grace=0)
            if self.kubelet is not None:
                self.api.delete("", "persistentvolumes", None, f"{self.ns}-{CLAIM}")

    def writes(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every version of the namespace's SparkPlanJobs (or of one) the API server stored, oldest first."""
        return self.history.objects(name)

    # -------------------------------------------------------------------- kubectl
    def kubectl(self, *args: str) -> str:
        run = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir",
                              str(self.tmp / "kube-cache"), *args], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"kubectl {' '.join(args)} exited {run.returncode}: {run.stderr}"
        return run.stdout

    def apply(self, manifest: dict[str, Any]) -> str:
        path = self.tmp / f"{manifest['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(manifest))
        return self.kubectl("apply", "--validate=false", "-f", str(path))

    def job_manifest(self, name: str, engine: str | None = "0.1", *, storage: Path | None = None,
                     **spec: Any) -> dict[str, Any]:
        """A SparkPlanJob over this world's data. Under the Kubernetes launcher its job root is the subPath
        ``storage.name`` (default: the job's name) of the claim ``jobs``, and its podTemplate mounts the
        world's data directory at ``/data`` (a hostPath volume), where the job's SQL names its tables."""
        sql = job_sql(self.pod_path(self.source(name)), self.pod_path(self.sink(name)), self.kind)
        body: dict[str, Any] = {"plan": {"sql": sql}, **spec}
        if engine is not None:
            body["engineVersion"] = engine
        if self.launcher == "kubernetes":
            data = self._data_dir(name)
            body["storage"] = {"pvc": {"claimName": CLAIM, "subPath": storage.name if storage else name}}
            body.setdefault("podTemplate", {"spec": {
                "volumes": [{"name": "data", "hostPath": {"path": str(data.parent), "type": "Directory"}}],
                "containers": [{"name": "driver", "volumeMounts": [{"name": "data", "mountPath": str(POD_DATA)}]}],
            }})
        elif storage is not None:
            body["storage"] = {"uri": f"file://{storage}"}
        return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SparkPlanJob",
                "metadata": {"name": name, "namespace": self.ns}, "spec": body}

    def sql(self, source: Path, sink: Path) -> str:
        """The job's SQL over ``source`` and ``sink`` as its engine processes (or pods) see them."""
        return job_sql(self.pod_path(source), self.pod_path(sink), self.kind)

    def _data_dir(self, name: str) -> Path:
        """The job's data directory, writable by the engine image's user (pods do not run as root)."""
        for path in (self.tmp / "data", self.tmp / "data" / name, self.source(name)):
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
        return self.tmp / "data" / name

    def pod_path(self, path: Path) -> Path:
        """Where a job's pods (or, locally, its processes) see a path of this world's data directory or of a
        job root on the claim."""
        if self.launcher != "kubernetes":
            return path
        assert self.kubelet is not None
        claim = self.kubelet.root / "pvc" / self.ns / CLAIM
        if path.is_relative_to(claim):
            return Path(f"/var/lib/planengine/jobs/{CLAIM}") / path.relative_to(claim)
        return POD_DATA / path.relative_to(self.tmp / "data")

    def driver_pods(self, name: str) -> list[tuple[str, str, str]]:
        """(run id, role, phase) of the job's driver pods that are not terminating, oldest first."""
        pods = [p for p in self.api.list("", "pods", self.ns)
                if (p["metadata"].get("labels") or {}).get("planengine.io/job") == name
                and (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "driver"
                and not p["metadata"].get("deletionTimestamp")]
        pods.sort(key=lambda p: p["metadata"]["creationTimestamp"])
        return [((p["metadata"].get("annotations") or {}).get("planengine.io/run-id", ""),
                 p["metadata"]["labels"].get("planengine.io/role", ""), (p.get("status") or {}).get("phase", ""))
                for p in pods]

    def job_root_in_pods(self, storage: Path) -> str:
        """``status.jobRoot`` of a job with ``storage``: the path its engine processes (or pods) use."""
        if self.launcher != "kubernetes":
            return str(storage)
        return f"/var/lib/planengine/jobs/{CLAIM}/{storage.name}"

    def storage_root(self, storage: Path) -> Path:
        """The job root of ``job_manifest(..., storage=storage)`` on this machine."""
        if self.launcher != "kubernetes":
            return storage
        assert self.kubelet is not None
        return self.kubelet.root / "pvc" / self.ns / CLAIM / storage.name

    # -------------------------------------------------------------------- reading the cluster
    def job(self, name: str) -> dict[str, Any]:
        found = self.api.get(GROUP, PLURAL, self.ns, name)
        assert found is not None, f"SparkPlanJob {name} does not exist"
        return found

    def status(self, name: str) -> dict[str, Any]:
        return self.job(name).get("status") or {}

    def condition(self, name: str, type_: str) -> dict[str, Any]:
        return next((c for c in self.status(name).get("conditions") or [] if c["type"] == type_), {})

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.api.list("", "events", self.ns) if (e.get("involvedObject") or {}).get("name") == name]

    def event_reasons(self, name: str) -> list[str]:
        return [e.get("reason") for e in self.events(name)]

    def wait_events(self, name: str, *reasons: str, timeout: float = 30) -> list[str]:
        """Wait until every one of ``reasons`` has an Event; returns all reasons seen.

        kopf posts Events from a queue after the status patch it belongs to, so a test that has just seen a
        status must wait for its Event rather than read the list once (a CI run lost a race that way).
        """
        _wait_for(lambda: set(reasons) <= set(self.event_reasons(name)), timeout, f"events {', '.join(reasons)}",
                  lambda: self.event_reasons(name))
        return self.event_reasons(name)

    def wait_status(self, name: str, predicate: Callable[[dict[str, Any]], Any], what: str,
                    timeout: float = 30) -> dict[str, Any]:
        def check() -> Any:
            status = self.status(name)
            return status if predicate(status) else None

        def describe() -> Any:
            status = self.status(name)
            brief = {k: status.get(k) for k in ("phase", "operation", "upgrade", "error", "runId", "engineVersion",
                                                "sourceHash")}
            events = sorted(self.events(name), key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
            return {**brief, "events": [f"{e.get('reason')}: {e.get('message')}" for e in events[-8:]]}

        return wait_for(check, timeout, f"{name}: {what}", describe)

    # -------------------------------------------------------------------- job data
    def job_root(self, name: str) -> Path:
        if self.launcher == "kubernetes":
            return self.storage_root(Path(name))
        return self.jobs_root / self.ns / name

    def source(self, name: str) -> Path:
        return self.tmp / "data" / name / "in"

    def sink(self, name: str) -> Path:
        return self.tmp / "data" / name / "out"

    def calls(self, root: Path, command: str | None = None) -> list[dict[str, Any]]:
        """The contract double's record of its own invocations under a job root."""
        try:
            lines = (root / ".contract-calls.jsonl").read_text().splitlines()
        except OSError:
            return []
        entries = [json.loads(line) for line in lines if line.strip()]
        return [e for e in entries if command is None or e["command"] == command]

    def add_input(self, name: str, count: int = 1) -> list[str]:
        """``count`` new input files of two rows each, each written aside and renamed into place."""
        source = self.source(name)
        source.mkdir(parents=True, exist_ok=True)
        rows = []
        suffix = ".json" if self.kind == "real" else ".txt"
        start = len(list(source.glob(f"*{suffix}")))
        for index in range(start, start + count):
            batch = [f"{name}-{index:05d}-{j}" for j in range(2)]
            tmp = source / f".{index:05d}.tmp"
            if self.kind == "real":
                at = EPOCH + timedelta(seconds=index)
                tmp.write_text("".join(json.dumps({
                    "id": index * 2 + j, "name": row,
                    "ts": (at + timedelta(milliseconds=500 * j)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                }) + "\n" for j, row in enumerate(batch)))
            else:
                tmp.write_text("".join(f"{row}\n" for row in batch))
            tmp.rename(source / f"{index:05d}{suffix}")
            rows += batch
        return rows

    @contextlib.contextmanager
    def feeding(self, name: str, every: float = 0.15, max_behind: int = 40) -> Iterator[None]:
        """New input keeps arriving (one file per ``every`` seconds) while the block runs, paused while the real
        engine's output is ``max_behind`` rows or more behind its input.

        The real engine reads one file per batch (see ``job_sql``), so on a loaded machine, where a handover's
        JVM starts take minutes, an unpaced feeder piles up hundreds of files that the rolled-back or upgraded
        run then drains one batch at a time, past any timeout (CI, 2026-11-27: 114 of 320 rows after 600 s, the
        driver committing all along). A producer that waits for a slow consumer still feeds every handover."""
        stop = threading.Event()
        self._feeders.append(stop)

        def behind() -> int:
            if self.kind != "real":
                return 0
            try:
                return len(self.input_rows(name)) - len(self.output(name))
            except (OSError, ValueError):  # a file replaced while read: feed, ask again next time
                return 0

        def feed() -> None:
            while not stop.wait(every):
                if behind() < max_behind:
                    self.add_input(name)

        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)

    def input_rows(self, name: str) -> list[str]:
        if self.kind == "real":
            return sorted(json.loads(line)["name"] for f in self.source(name).glob("*.json")
                          for line in f.read_text().splitlines() if line.strip())
        return sorted(line for f in self.source(name).glob("*.txt") for line in f.read_text().splitlines())

    def output(self, name: str) -> list[tuple[str, str]]:
        """(row, engine version that wrote it) for every committed output row, duplicates included (the
        real engine's rows carry no engine tag: "")."""
        rows = []
        if self.kind == "real":
            for path in spark_sink_files(self.sink(name)):
                for line in path.read_text().splitlines():
                    if line.strip():
                        row = json.loads(line)
                        assert row["twice"] == 2 * row["id"], row  # the calc ran
                        rows.append((row["name"], ""))
            return rows
        for path in sorted(self.sink(name).glob("*")):
            if path.is_file() and not path.name.startswith((".", "_")) and not path.name.endswith(".tmp"):
                for line in path.read_text().splitlines():
                    row, _, engine = line.partition("\t")
                    rows.append((row, engine))
        return rows

    def windows(self, name: str) -> list[tuple[int, int]]:
        """(window start as seconds since EPOCH, count) of every committed tumbling-window row (real engine)."""
        rows = []
        for path in spark_sink_files(windows_sink(self.sink(name))):
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    start = datetime.fromisoformat(row["window_start"]) - EPOCH
                    rows.append((int(start.total_seconds()), int(row["cnt"])))
        return sorted(rows)

    def assert_windows_exactly_once(self, name: str, timeout: float = 120) -> list[tuple[int, int]]:
        """Every window the watermark closed is emitted once with all its rows: state survived handovers."""
        files = len(list(self.source(name).glob("*.json")))
        closed = max(0, files - 1 - 1) // WINDOW_SECONDS  # watermark = newest event time - 1 s
        wait_for(lambda: len(self.windows(name)) >= closed, timeout, f"{name}: {closed} closed windows emitted",
                 lambda: self.windows(name)[-3:])
        got = self.windows(name)
        starts = [start for start, _ in got]
        assert starts == [WINDOW_SECONDS * k for k in range(len(got))], f"windows missing or repeated: {starts}"
        wrong = [(start, count) for start, count in got if count != 2 * WINDOW_SECONDS]
        assert not wrong, f"windows with a wrong count (state lost or doubled): {wrong}"
        return got

    def batch_files(self, name: str) -> list[Path]:
        return sorted(p for p in self.sink(name).glob("batch-*.txt"))

    def diagnosis(self, name: str, lines: int = 40) -> str:
        """What a timed-out wait prints so a CI failure can be explained without the machine: the job's status
        and the tails of its current run's logs (a local driver's ``.operator`` log, a pod's container log)."""
        status = self.status(name)
        brief = {k: status.get(k) for k in ("phase", "operation", "upgrade", "error", "runId", "engineVersion")}
        run = status.get("runId") or ""
        parts = [f"status: {json.dumps(brief, default=str)}"]
        events = sorted(self.events(name), key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        parts += [f"event {e.get('lastTimestamp')} {e.get('reason')}: {e.get('message')}" for e in events[-15:]]
        if self.kubelet is not None:  # a node that stopped heartbeating is tainted: no new pod is scheduled
            node = self.api.get("", "nodes", None, self.kubelet.node) or {}
            ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
            taints = [t.get("key") for t in (node.get("spec") or {}).get("taints") or []]
            parts.append(f"node {self.kubelet.node}: Ready={ready[0].get('status') if ready else None} "
                         f"taints={taints} kubelet errors (last 5): {self.kubelet.errors[-5:]}")
        # Known places only: a pod's overlay root under the kubelet's directory is the machine's whole root.
        places = [*self.tmp.glob("*/.operator/*.log"), *self.tmp.glob("jobs/*/*/.operator/*.log")]
        if self.kubelet is not None:
            places += [*(self.kubelet.root / "pods").glob("*/logs/*.log"),
                       *(self.kubelet.root / "pvc").glob("*/*/*/.operator/*.log")]
        logs = sorted(places, key=lambda p: p.stat().st_mtime)
        for log in [p for p in logs if run and run in str(p)][-3:] or logs[-2:]:
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts)

    def assert_exactly_once(self, name: str, timeout: float = 30) -> list[tuple[str, str]]:
        """Wait until every input row is in the output, then check none is missing or duplicated."""
        wanted = self.input_rows(name)
        wait_for(lambda: sorted(r for r, _ in self.output(name)) == wanted or len(self.output(name)) > len(wanted),
                 timeout, f"{name}: all {len(wanted)} input rows in the output",
                 lambda: f"{len(self.output(name))} output rows\n{self.diagnosis(name)}")
        got = sorted(r for r, _ in self.output(name))
        duplicates = sorted({r for r in got if got.count(r) > 1})
        missing = sorted(set(wanted) - set(got))
        assert not duplicates and not missing, f"duplicates {duplicates[:5]}, missing {missing[:5]}"
        return self.output(name)
