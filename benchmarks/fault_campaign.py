"""A randomized fault campaign for the operator's upgrade/rollback protocol, with the real engine on Kubernetes.

Why: the e2e tests kill the operator or a pod at a few chosen points; a protocol with write-ahead steps, a
warm standby, tool pods and a rollback has many more interleavings than a test list covers. Here every upgrade
(the job flips between the two engine builds, ``0.1`` and ``0.2``, as ``benchmarks/operator_upgrade_real.py``)
gets one fault drawn at random, at a random protocol step, while input keeps arriving:

* ``kill-old-driver`` / ``kill-standby`` / ``kill-tool``: ``kill -9`` of the main process of the old driver's
  pod, of the warm standby's (the target's) pod, or of a tool pod (``check``, ``snapshots list``...);
* ``kill-operator``: the operator's loop stopped where it is (the harness' in-process ``kill -9``), a fresh
  operator started a moment later;
* ``source-mid-batch``: input files renamed into the source directory while a micro-batch is in flight
  (``offsets/N`` written, ``commits/N`` not);
* ``disk-full``: the job claim is a tmpfs of ``--claim-mb`` MiB; it is filled to ENOSPC for a few seconds;
* ``corrupt-checkpoint``: the newest file of the running run's checkpoints overwritten with garbage, in place
  (a hard link into a snapshot is corrupted with it, as a bad disk block would be).

After each upgrade the invariants are checked: every input row is in the copied sink exactly once and every
closed window once with all its rows; the upgrade ended (no stuck job) as ``Running`` or ``RolledBack`` /
``Failed`` with a message; no batch of a checkpoint was committed by two drivers and no two runs committed at the
same time (derived from the ``commits/`` files of every run: ``RUN_LOCK`` holds only the current writer, no log).
Rows are fed while the upgrade runs and the feeder is stopped before the checks.

Every round's fault comes from ``random.Random(f"{seed}/{round}")``, so ``--seed N --only-round K`` replays round
K's fault (kind, step, delay) on a fresh job (its engine history differs from the full run's: the job then
upgrades 0.1 -> 0.2). Results go to ``benchmarks/results/faults.md``, rewritten after every round, so an
interrupted campaign still leaves what it measured.

    .venv/bin/python -m benchmarks.fault_campaign --upgrades 50 --seed 1 [--only-round K] [--stop-after-minutes M]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.real_world import real_world
from tests.operator.e2e.harness import CLAIM, REAL_TARGET, WINDOW_SECONDS, World, sink_uid, wait_for
from tests.operator.kubelet import sandbox

RESULTS = Path(__file__).resolve().parent / "results" / "faults.md"
ENGINES = ("0.1", REAL_TARGET)
UPGRADE_STEPS = ("Check", "Standby", "Stop", "Activate", "Stabilize")
# Where each fault can land: the old driver is gone after Stop; the standby exists from Standby on (and is the
# driver after Activate); an upgrade on the snapshot path runs one tool pod, the Check's `planengine check` (the
# fork and the rollback's check run only after a failure; smoke run, seed 7, round 2: no tool pod after Standby).
FAULT_STEPS: dict[str, tuple[str, ...]] = {
    "kill-old-driver": ("Check", "Standby", "Stop"),
    "kill-standby": ("Standby", "Stop", "Activate", "Stabilize"),
    "kill-tool": ("Check",),
    "kill-operator": UPGRADE_STEPS,
    "source-mid-batch": UPGRADE_STEPS,
    "disk-full": UPGRADE_STEPS,
    "corrupt-checkpoint": ("Check", "Standby", "Stop", "Stabilize"),
}
TERMINAL = ("Succeeded", "RolledBack", "Failed", "Refused")
ROUND_TIMEOUT = 1200.0  # an upgrade not finished by then is a stuck job (JVM starts take minutes when loaded)
RUNNING = "running (partial until the campaign ends)"
# The output counts as settled once it stopped growing this long with input left (no input is fed then): a
# rolled-back or restarted driver's JVM start takes minutes on a loaded machine (the first campaign counted a
# rollback's 40 rows as lost after 90 s, before the old engine's driver committed again). Rows missing at one
# round's check and present later are moved to "late" there, so only rows never written count as lost.
SETTLE = 300.0
# A message "says what to do" when it names a spec field to change or gives an instruction.
ADVICE = re.compile(r"spec\.\w+|\b(set|change|delete|fix|retry|free|make sure|choose|migrate)\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Fault:
    """One round's fault: what, at which upgrade step, how long after the step was seen, and (disk-full) for
    how long the disk stays full."""

    kind: str
    step: str
    delay: float
    hold: float

    def describe(self) -> str:
        hold = f", held {self.hold:.0f} s" if self.kind == "disk-full" else ""
        return f"{self.kind} at {self.step} +{self.delay:.1f} s{hold}"


def draw(seed: int, round_no: int) -> Fault:
    """The fault of ``round_no``: a function of the seed and the round only, so any round replays alone."""
    rng = random.Random(f"{seed}/{round_no}")
    kind = rng.choice(sorted(FAULT_STEPS))
    return Fault(kind, rng.choice(FAULT_STEPS[kind]), round(rng.uniform(0, 3), 1), round(rng.uniform(5, 30)))


# ------------------------------------------------------------------------------------------------ the cluster
def job_pods(world: World, name: str, component: str) -> list[dict[str, Any]]:
    """The job's pods of one component (``driver``, ``tool``) that are not terminating, oldest first."""
    pods = [p for p in world.api.list("", "pods", world.ns)
            if (p["metadata"].get("labels") or {}).get("planengine.io/job") == name
            and (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component
            and not p["metadata"].get("deletionTimestamp")]
    return sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"])


def kill_pod(world: World, pod: str) -> str | None:
    """``kill -9`` of a pod's main process (the kubelet then kills what it left running); None if not running."""
    assert world.kubelet is not None
    pid = world.kubelet.process(world.ns, pod)
    if pid is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return f"kill -9 pod {pod} (pid {pid})"


def operation(world: World, name: str) -> dict[str, Any]:
    return world.status(name).get("operation") or {}


def driver_of_run(world: World, name: str, run_id: str | None) -> str | None:
    """The pod name of the driver (or standby) of ``run_id``."""
    for pod in job_pods(world, name, "driver"):
        if run_id and (pod["metadata"].get("annotations") or {}).get("planengine.io/run-id") == run_id:
            return str(pod["metadata"]["name"])
    return None


# ------------------------------------------------------------------------------------------------ injectors
class Injection:
    """Runs one fault on a thread: waits for the upgrade to reach the fault's step, then injects it. ``done``
    tells the round the operation ended, so a fault whose step never came is reported as not injected."""

    def __init__(self, world: World, name: str, root: Path, claim: Path, fault: Fault, old_run: str) -> None:
        self.world, self.name, self.root, self.claim = world, name, root, claim
        self.fault, self.old_run = fault, old_run
        self.done = threading.Event()
        self.outcome = "not injected: the upgrade never reached the step"
        self.thread = threading.Thread(target=self._run, name="fault", daemon=True)

    def start(self) -> Injection:
        self.thread.start()
        return self

    def finish(self) -> str:
        self.done.set()
        self.thread.join(120)
        return self.outcome

    def _until(self, predicate: Callable[[], Any], timeout: float = 600) -> Any:
        """Poll ``predicate`` until truthy, the operation ends, or ``timeout``: None when it never was."""
        deadline = time.monotonic() + timeout
        while not self.done.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # the API or a file read mid-write: ask again
                found = predicate()
                if found:
                    return found
            time.sleep(0.1)
        return None

    def _run(self) -> None:
        try:
            op = self._until(lambda: (o := operation(self.world, self.name)).get("type") == "Upgrade"
                             and o.get("step") == self.fault.step and o, ROUND_TIMEOUT)
            if not op:
                return
            time.sleep(self.fault.delay)
            injectors: dict[str, Callable[[dict[str, Any]], str | None]] = {
                "kill-old-driver": self._kill_old_driver, "kill-standby": self._kill_standby,
                "kill-tool": self._kill_tool, "kill-operator": self._kill_operator,
                "source-mid-batch": self._source_mid_batch, "disk-full": self._disk_full,
                "corrupt-checkpoint": self._corrupt_checkpoint}
            self.outcome = (injectors[self.fault.kind](op)
                            or f"not injected: nothing to {self.fault.kind} at {self.fault.step}")
        except Exception as exc:  # the campaign reports a broken injector instead of dying
            self.outcome = f"injector error: {exc!r}"

    def _kill_old_driver(self, op: dict[str, Any]) -> str | None:
        pod = driver_of_run(self.world, self.name, self.old_run)
        return kill_pod(self.world, pod) if pod else None

    def _kill_standby(self, op: dict[str, Any]) -> str | None:
        """The target's pod (the standby, the driver after Activate), once it runs."""
        target = op.get("runId")
        pod = self._until(lambda: (p := driver_of_run(self.world, self.name, target)) and
                          self.world.kubelet.process(self.world.ns, p) and p, 300)
        return kill_pod(self.world, pod) if pod else None

    def _kill_tool(self, op: dict[str, Any]) -> str | None:
        """The next tool pod of the job that runs (from this step on)."""
        def running_tool() -> str | None:
            for pod in job_pods(self.world, self.name, "tool"):
                if self.world.kubelet.process(self.world.ns, pod["metadata"]["name"]):
                    return str(pod["metadata"]["name"])
            return None

        pod = self._until(running_tool, 300)
        return kill_pod(self.world, pod) if pod else None

    def _kill_operator(self, op: dict[str, Any]) -> str:
        assert self.world.operator is not None
        self.world.operator.kill()
        pause = random.Random(self.fault.describe()).uniform(0, 5)
        time.sleep(pause)
        self.world.start_operator()
        return f"operator killed in step {op.get('step')}, a new one started {pause:.1f} s later"

    def _source_mid_batch(self, op: dict[str, Any]) -> str | None:
        run = self.world.status(self.name).get("runId")
        checkpoint = self.root / "runs" / str(run) / "checkpoints" / sink_uid(self.root, self.world.sink(self.name))
        if not self._until(lambda: in_flight(checkpoint), 120):
            return None
        burst = 1 + int(self.fault.delay) % 4
        self.world.add_input(self.name, burst)
        return f"{burst} input file(s) renamed into place with batch {batch_ids(checkpoint / 'offsets')[-1]} of " \
               f"run {run} in flight"

    def _disk_full(self, op: dict[str, Any]) -> str:
        filler = self.claim / ".fault-filler"
        written = fill(filler)
        try:
            time.sleep(self.fault.hold)
        finally:
            filler.unlink(missing_ok=True)
        return f"claim tmpfs filled ({written // 2**20} MiB more, ENOSPC) for {self.fault.hold:.0f} s"

    def _corrupt_checkpoint(self, op: dict[str, Any]) -> str | None:
        status = self.world.status(self.name)
        run = op.get("runId") if op.get("step") == "Stabilize" else status.get("runId")
        for _ in range(10):  # Spark deletes old log and state files as it goes: one may vanish after the listing
            files = [p for p in (self.root / "runs" / str(run) / "checkpoints").rglob("*")
                     if p.is_file() and not p.name.startswith(".")]
            if not files:
                return None
            try:
                newest = max(files, key=lambda p: p.stat().st_mtime)
                size = newest.stat().st_size
                with open(newest, "r+b") as handle:  # in place: a hard link of it (a snapshot's) is corrupted too
                    handle.write(b"\x00corrupt\xff" * (size // 9 + 1))
            except FileNotFoundError:
                continue
            return f"corrupted {newest.relative_to(self.root)} ({size} bytes) in place"
        return None


def batch_ids(directory: Path) -> list[int]:
    return sorted(int(p.name) for p in directory.glob("*") if p.name.isdigit()) if directory.is_dir() else []


def in_flight(checkpoint: Path) -> bool:
    """A micro-batch is planned (``offsets/N``) and not committed (``commits/N`` missing)."""
    offsets, commits = batch_ids(checkpoint / "offsets"), batch_ids(checkpoint / "commits")
    return bool(offsets) and (not commits or offsets[-1] > commits[-1])


def fill(path: Path) -> int:
    """Write zeros to ``path`` until the filesystem says ENOSPC; the bytes written."""
    written, chunk = 0, b"\0" * 2**20
    with open(path, "wb") as handle:
        while True:
            try:
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return written


# ------------------------------------------------------------------------------------------------ invariants
def settled_output(world: World, name: str, settle: float = SETTLE, bound: float = 900) -> None:
    """Wait until the copied sink holds every input row, or stopped growing for ``settle`` s (bounded): a loss is
    then measured, not waited for."""
    seen = {"count": -1, "since": time.monotonic()}

    def done() -> bool:
        count = len(world.output(name))
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return count >= len(world.input_rows(name)) or time.monotonic() - seen["since"] > settle

    with contextlib.suppress(AssertionError):
        wait_for(done, bound, f"{name}: output settled", interval=1)


def row_problems(world: World, name: str) -> tuple[set[str], set[str]]:
    """(missing, duplicated) rows of the copied sink against every input row so far."""
    wanted = world.input_rows(name)
    got = [row for row, _ in world.output(name)]
    seen: set[str] = set()
    duplicated = {row for row in got if row in seen or seen.add(row)}
    return set(wanted) - set(got), duplicated


def window_problems(world: World, name: str) -> list[str]:
    """Windows emitted twice or with a count other than all their rows (state lost or doubled)."""
    got = world.windows(name)
    starts = [start for start, _ in got]
    problems = [f"window {s} emitted {starts.count(s)} times" for s in sorted(set(starts)) if starts.count(s) > 1]
    problems += [f"window {s} counted {c} rows, not {2 * WINDOW_SECONDS}" for s, c in got if c != 2 * WINDOW_SECONDS]
    return problems


def writer_problems(root: Path, uids: list[str]) -> list[str]:
    """Batches of a query committed by two drivers, and runs that committed at the same time.

    ``RUN_LOCK`` names only the current writer, so the history comes from the checkpoints: a fork carries the
    commits of its snapshot as copies that keep the written file's modification time (to the nanosecond; state
    files are hard links, which share it), so two modification times for one ``commits/<batch>`` mean two drivers
    wrote that batch. (Not the inode: since run 7 forks copy the logs, so a carried commit has an inode of its
    own.) Each commit belongs to the oldest run holding it (run ids sort by time); two runs whose own commits
    overlap in time were writers at once."""
    problems: list[str] = []
    for uid in uids:
        owners: dict[tuple[int, int], tuple[str, int, float]] = {}  # (batch, mtime ns) -> (run, batch, mtime)
        by_batch: dict[int, set[tuple[int, int]]] = {}
        for run in sorted((root / "runs").iterdir()):
            for commit in (run / "checkpoints" / uid / "commits").glob("*"):
                if commit.name.isdigit():
                    try:
                        st = commit.stat()
                    except FileNotFoundError:  # retention deleted the run meanwhile
                        continue
                    written = (int(commit.name), st.st_mtime_ns)
                    owners.setdefault(written, (run.name, int(commit.name), st.st_mtime))
                    by_batch.setdefault(int(commit.name), set()).add(written)
        for batch, writes in sorted(by_batch.items()):
            if len(writes) > 1:
                problems.append(f"{uid} batch {batch} committed by runs {sorted(owners[w][0] for w in writes)}")
        spans: dict[str, tuple[float, float]] = {}
        for run, _, mtime in owners.values():
            low, high = spans.get(run, (mtime, mtime))
            spans[run] = (min(low, mtime), max(high, mtime))
        ordered = sorted(spans.items(), key=lambda item: item[1])
        for (run_a, (_, end_a)), (run_b, (start_b, _)) in itertools.pairwise(ordered):
            if start_b < end_a:
                problems.append(f"{uid}: runs {run_a} and {run_b} both committed between {start_b:.1f} and "
                                f"{end_a:.1f}")
    return problems


def query_uids(root: Path) -> list[str]:
    plan = json.loads((root / "plan.json").read_text())
    return [q["uid"] for q in plan.get("queries") or []] or sorted(
        {p.name for p in (root / "runs").glob("*/checkpoints/*") if p.is_dir()})


# ------------------------------------------------------------------------------------------------ rounds
@dataclasses.dataclass
class Round:
    """What one round did and found; one row of the results."""

    number: int
    fault: Fault
    upgrade: str = ""
    lost: set[str] = dataclasses.field(default_factory=set)
    late: int = 0
    down: int = 0  # rows not delivered because the job ended Failed with its reason (``job_down``), not lost
    down_reason: str = ""
    injected: str = ""
    outcome: str = ""
    message: str = ""
    seconds: float = 0.0
    load: str = ""
    violations: list[str] = dataclasses.field(default_factory=list)


class Campaign:
    """One job upgraded back and forth, a fault per upgrade, the invariants after each."""

    def __init__(self, world: World, tmp: Path, claim: Path, seed: int) -> None:
        self.world, self.tmp, self.claim, self.seed = world, tmp, claim, seed
        self.generation = 0
        self.name = "bench"
        self.root = world.storage_root(tmp / "root")
        self.reported_missing: set[str] = set()
        self.reported_duplicates: set[str] = set()
        self.reported_windows: set[str] = set()
        self.reported_writers: set[str] = set()
        self.abandoned: list[str] = []
        self.rounds: list[Round] = []  # this job's rounds, whose lost rows may still arrive

    def start_job(self) -> None:
        """A fresh job (after an abandoned one: a new name and job root), Running with its first rows out."""
        if self.generation:
            self.name = f"bench{self.generation}"
            self.root = self.world.storage_root(self.tmp / f"root{self.generation}")
            self.reported_missing, self.reported_duplicates = set(), set()
            self.reported_windows, self.reported_writers = set(), set()
            self.rounds = []
        self.generation += 1
        self.world.add_input(self.name, 3)
        self.world.apply(self.world.job_manifest(self.name, "0.1", storage=self.root))
        self.world.wait_status(self.name, lambda s: s.get("phase") == "Running", "Running", timeout=300)
        self.world.assert_exactly_once(self.name, timeout=900)

    def play(self, number: int) -> Round:
        fault = draw(self.seed, number)
        record = Round(number, fault, load=f"{os.getloadavg()[0]:.1f}")
        began = time.monotonic()
        before = self.world.status(self.name)
        source = str(before.get("engineVersion"))
        target = ENGINES[(ENGINES.index(source) + 1) % 2] if source in ENGINES else ENGINES[1]
        record.upgrade = f"{source} -> {target}"
        started = datetime.now(UTC).timestamp() - 2
        injection = Injection(self.world, self.name, self.root, self.claim, fault, str(before.get("runId"))).start()
        status: dict[str, Any] | None = None
        try:
            with self.world.feeding(self.name, every=0.5):
                self.world.apply(self.world.job_manifest(self.name, target, storage=self.root))
                status = self.world.wait_status(self.name, lambda s: finished_since(s, started),
                                                f"round {number}: the upgrade ended", timeout=ROUND_TIMEOUT)
        except AssertionError as stuck:
            record.violations.append(f"stuck: the upgrade did not end within {ROUND_TIMEOUT:.0f} s: "
                                     f"{str(stuck).splitlines()[0][:300]}")
        finally:
            record.injected = injection.finish()
        if status is not None:
            self.outcome(record, status)
        self.check(record)
        record.seconds = time.monotonic() - began
        record.load += f" / {os.getloadavg()[0]:.1f}"
        self.rounds.append(record)
        return record

    def outcome(self, record: Round, status: dict[str, Any]) -> None:
        """The upgrade's end, settled: Running, or RolledBack / Failed with a message."""
        with contextlib.suppress(AssertionError):
            status = self.world.wait_status(
                self.name, lambda s: not s.get("operation") and s.get("phase") in ("Running", "RolledBack", "Failed"),
                "settled phase", timeout=600)
        upgrade = status.get("upgrade") or {}
        record.outcome = f"{upgrade.get('step')} / phase {status.get('phase')} on {status.get('engineVersion')}"
        record.message = str(upgrade.get("message") or status.get("error") or "")
        if status.get("phase") in ("RolledBack", "Failed") and not ADVICE.search(record.message):
            record.violations.append(f"phase {status.get('phase')} with a message that does not say what to do")

    def check(self, record: Round) -> None:
        """The invariants; a problem already reported in an earlier round is not counted again, and rows an earlier
        round counted as lost that arrived since are moved to that round's "late"."""
        settled_output(self.world, self.name)
        missing, duplicated = row_problems(self.world, self.name)
        for earlier in self.rounds:
            arrived = earlier.lost - missing
            earlier.lost -= arrived
            earlier.late += len(arrived)
        record.lost = missing - self.reported_missing
        if record.lost:  # a job that cannot run (a damaged checkpoint) ends Failed after its restarts: wait for it
            with contextlib.suppress(AssertionError):
                self.world.wait_status(self.name, lambda s: s.get("phase") == "Failed" or (
                    s.get("phase") in ("Running", "RolledBack") and not s.get("operation")), "Failed or running",
                    timeout=900)
            record.down_reason = job_down(self.world.status(self.name))
            if record.down_reason:
                record.down, record.lost = len(record.lost), set()
        new_duplicated = duplicated - self.reported_duplicates
        if new_duplicated:
            record.violations.append(f"{len(new_duplicated)} rows duplicated, e.g. {sorted(new_duplicated)[:3]}")
        self.reported_missing |= missing
        self.reported_duplicates |= duplicated
        windows = set(window_problems(self.world, self.name)) - self.reported_windows
        record.violations += sorted(windows)[:5]
        self.reported_windows |= windows
        writers = set(writer_problems(self.root, query_uids(self.root))) - self.reported_writers
        record.violations += sorted(writers)[:5]
        self.reported_writers |= writers

    def recover(self, record: Round) -> None:
        """Back to a Running job for the next round: after a rollback, the spec follows the running engine (the
        operator retries an upgrade only when spec.engineVersion changes); a job that does not run again within
        the bound is abandoned for a fresh one (recorded, never hidden)."""
        status = self.world.status(self.name)
        step = (status.get("upgrade") or {}).get("step")
        if status.get("phase") == "Running" and not status.get("operation") and step not in ("Refused", "RolledBack"):
            return
        if record.down_reason:  # it fails every start alike until a person acts: nothing to retry here
            self.abandoned.append(f"round {record.number}: job {self.name} Failed ({record.down_reason[:300]}); a "
                                  "fresh job continues")
            self.start_job()
            return
        # A refused or rolled-back target stays asked for until the spec is set back (the operator then stamps
        # upgrade.withdrawn); without that the next round's apply of the same target would change nothing.
        running = status.get("engineVersion") or "0.1"
        for spec, timeout in (({}, 120.0), ({"restartNonce": record.number}, 900.0)):
            with contextlib.suppress(AssertionError):  # kubectl refusing the spec fails loudly (not caught)
                self.world.apply(self.world.job_manifest(self.name, running, storage=self.root, **spec))
                self.world.wait_status(self.name, lambda s: s.get("phase") == "Running" and not s.get("operation")
                                       and ((s.get("upgrade") or {}).get("step") not in ("Refused", "RolledBack")
                                            or (s.get("upgrade") or {}).get("withdrawn")),
                                       "running again", timeout=timeout)
                return
        self.abandoned.append(f"round {record.number}: job {self.name} not Running again within 900 s "
                              f"({status.get('phase')}: {record.message[:200]}); a fresh job continues")
        self.start_job()


def job_down(status: dict[str, Any]) -> str:
    """The reason, when the job ended ``Failed`` with a message that says what to do (its driver failed the same
    way restart after restart: a damaged checkpoint); "" otherwise. Rows not delivered then are the job being
    down, which its status says, not rows lost by a wrong result.

    >>> job_down({"phase": "Failed", "error": "...; fix what the error says, then set spec.restartNonce"})
    '...; fix what the error says, then set spec.restartNonce'
    >>> job_down({"phase": "Failed", "error": "exit code 2"}), job_down({"phase": "Running", "error": "set x"})
    ('', '')
    """
    error = str(status.get("error") or "")
    return error if status.get("phase") == "Failed" and ADVICE.search(error) else ""


def finished_since(status: dict[str, Any], started: float) -> bool:
    """The upgrade that began after ``started`` reached a terminal step and no operation is left."""
    upgrade = status.get("upgrade") or {}
    if status.get("operation") or upgrade.get("step") not in TERMINAL or not upgrade.get("started"):
        return False
    return datetime.fromisoformat(str(upgrade["started"]).replace("Z", "+00:00")).timestamp() >= started


# ------------------------------------------------------------------------------------------------ the claim
@contextlib.contextmanager
def tmpfs_claim(world: World, size_mb: int) -> Iterator[Path]:
    """The job claim's directory as a tmpfs of ``size_mb`` MiB (the pods bind-mount the claim itself, so they see
    it), unmounted at the end; a running pod keeps its own mount until it exits."""
    assert world.kubelet is not None
    claim = world.kubelet.root / "pvc" / world.ns / CLAIM
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0777", "tmpfs", str(claim)], check=True)
    try:
        yield claim
    finally:
        subprocess.run(["umount", "-l", str(claim)], check=False)


# ------------------------------------------------------------------------------------------------ the report
def render(rounds: list[Round], campaign: Campaign | None, args: argparse.Namespace, meta: dict[str, str]) -> str:
    counts: dict[str, dict[str, int]] = {}
    for r in rounds:
        row = counts.setdefault(r.fault.kind, {"rounds": 0, "injected": 0, "Succeeded": 0, "RolledBack": 0,
                                               "Failed": 0, "other": 0, "violations": 0})
        row["rounds"] += 1
        row["injected"] += not r.injected.startswith(("not injected", "injector error"))
        end = r.outcome.split(" ", 1)[0] if r.outcome else ""
        row[end if end in ("Succeeded", "RolledBack", "Failed") else "other"] += 1
        row["violations"] += bool(violations(r))
    lines = [
        "# Fault campaign: the upgrade/rollback protocol under random faults (real engine, Kubernetes launcher)",
        "",
        f"- Command: `{meta['command']}`; seed {args.seed}; started {meta['started']} UTC; {os.cpu_count()} cores.",
        f"- Status: **{meta['state']}** ({len(rounds)} of {meta['planned']} rounds).",
        f"- Load (`uptime`) before: `{meta['uptime_before']}`; after: `{meta.get('uptime_after', '(running)')}`.",
        f"- Wall time: {meta.get('wall', '(running)')}.",
        "- Set-up: real kopf + the control plane under `.tools` + the Kubernetes launcher, pods run by the test "
        "kubelet (driver, warm standby, tool pods; executors in-process), the real `planengine` CLI of the two "
        "engine builds (`0.1` = `.venv`, `0.2` = `.venv-spark42`) behind `tests/operator/e2e/engine_wrapper.py`. "
        f"The job claim (every job root) is a **tmpfs of {args.claim_mb} MiB** mounted by this (root) user. "
        "The harness job (json -> calc -> file sink, plus a 10 s tumbling-window count), one input file per 0.5 s "
        "while each upgrade runs.",
        "- Invariants after every upgrade: copied sink = input (0 lost, 0 duplicated); every emitted window once "
        "with all its rows; the upgrade ended Running, or RolledBack/Failed with a message; no checkpoint batch "
        "committed by two drivers and no two runs committing at once (from the runs' `commits/` files: a fork "
        "carries them with their modification time, so a second time for one batch is a second writer). A problem is "
        "counted in the round it appears. "
        f"The output counts as settled after {SETTLE:.0f} s without growth; rows missing then but written later are "
        "that round's *rows late* (a slow driver start), not lost; rows missing because the job ended `Failed` with "
        "a message that says what to do (a driver that fails every restart alike, `timing.restartLimit`) are *rows "
        "undelivered*, not lost either.",
        "",
        "## Per fault",
        "",
        "| fault | rounds | injected | Succeeded | RolledBack | Failed | other/stuck | rounds with violations |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, c in sorted(counts.items()):
        lines.append(f"| {kind} | {c['rounds']} | {c['injected']} | {c['Succeeded']} | {c['RolledBack']} | "
                     f"{c['Failed']} | {c['other']} | {c['violations']} |")
    lines += ["", "## Rounds", "",
              "| # | upgrade | fault | what was injected | outcome | message | rows late | rows undelivered (job "
              "Failed) | s | load start / end |",
              "|---:|---|---|---|---|---|---:|---:|---:|---|"]
    for r in rounds:
        lines.append(f"| {r.number} | {r.upgrade} | {r.fault.describe()} | {cell(r.injected)} | {cell(r.outcome)} | "
                     f"{cell(r.message, 160)} | {r.late} | {r.down} | {r.seconds:.0f} | {r.load} |")
    down = [r for r in rounds if r.down]
    if down:
        lines += ["", f"## Jobs that ended Failed with their reason: {len(down)} round(s)", "",
                  "Not violations: the job stopped with a message that says what to do, and its undelivered rows "
                  "are in the table above, not counted as lost.", ""]
        lines += [f"- Round {r.number} ({r.fault.describe()}): {r.down} rows undelivered; {cell(r.down_reason, 400)}"
                  for r in down]
    bad = [r for r in rounds if violations(r)]
    lines += ["", f"## Invariant violations: {len(bad)} round(s)", ""]
    for r in bad:
        lines.append(f"- Round {r.number} ({r.fault.describe()}; {r.upgrade}): {'; '.join(violations(r))}. Replay: "
                     f"`.venv/bin/python -m benchmarks.fault_campaign --seed {args.seed} --only-round {r.number}`")
    if campaign is not None and campaign.abandoned:
        lines += ["", "## Jobs abandoned for a fresh one", "", *[f"- {a}" for a in campaign.abandoned]]
    return "\n".join(lines) + "\n"


def violations(r: Round) -> list[str]:
    """The round's violations, its lost rows as they stand now (rows that arrived after its check are late)."""
    lost = [f"{len(r.lost)} rows lost, e.g. {sorted(r.lost)[:3]}"] if r.lost else []
    return lost + r.violations


def cell(text: str, limit: int = 200) -> str:
    text = re.sub(r"\s+", " ", text).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ------------------------------------------------------------------------------------------------ main
def campaign(args: argparse.Namespace, meta: dict[str, str], out: Path) -> list[Round]:
    rounds: list[Round] = []
    numbers = [args.only_round] if args.only_round else list(range(1, args.upgrades + 1))
    deadline = time.monotonic() + args.stop_after_minutes * 60 if args.stop_after_minutes else None
    with (tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp,
          real_world(Path(tmp), "kubernetes") as world,
          tmpfs_claim(world, args.claim_mb) as claim):
        serialize_input(world)
        world.start_operator()
        run = Campaign(world, Path(tmp), claim, args.seed)
        run.start_job()
        for number in numbers:
            if deadline is not None and time.monotonic() > deadline:
                meta["state"] = f"partial: stopped by --stop-after-minutes {args.stop_after_minutes}"
                break
            record = run.play(number)
            rounds.append(record)
            print(f"round {number}: {record.fault.describe()} | {record.injected} | {record.outcome} | "
                  f"{record.seconds:.0f} s | violations: {violations(record)}", flush=True)
            out.write_text(render(rounds, run, args, meta))
            run.recover(record)
        if meta["state"] == RUNNING:
            meta["state"] = "complete"
        out.write_text(render(rounds, run, args, meta))
    return rounds


def serialize_input(world: World) -> None:
    """The feeder and the source-mid-batch fault both add input files, numbered by how many exist: one at a time,
    or two writers would pick the same number and one half-written file could be renamed into place."""
    lock = threading.Lock()
    add = world.add_input

    def add_input(name: str, count: int = 1) -> list[str]:
        with lock:
            return add(name, count)

    world.add_input = add_input  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upgrades", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None, help="default: drawn from the clock, and printed")
    parser.add_argument("--only-round", type=int, default=None, help="replay one round's fault on a fresh job")
    parser.add_argument("--claim-mb", type=int, default=1024, help="size of the tmpfs holding the job roots")
    parser.add_argument("--stop-after-minutes", type=float, default=None,
                        help="start no round after this many minutes (the report then says partial)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    print(f"fault campaign: seed {args.seed}", flush=True)
    # A background run ignores SIGINT; a TERM must still stop the pods, the control plane and the tmpfs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if (why := sandbox.available()) is not None:
        print(f"fault_campaign needs the test kubelet: {why}", file=sys.stderr)
        return 2
    began = time.monotonic()
    command = ".venv/bin/python -m benchmarks.fault_campaign " + " ".join(
        argv if argv is not None else sys.argv[1:])
    meta = {"command": command.strip(), "started": f"{datetime.now(UTC):%Y-%m-%d %H:%M}", "state": RUNNING,
            "planned": "1" if args.only_round else str(args.upgrades), "uptime_before": uptime()}
    out = Path(args.out)
    rounds: list[Round] = []
    try:
        rounds = campaign(args, meta, out)
    except BaseException as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else ""
        meta["state"] = f"partial: the campaign stopped on {type(exc).__name__}: {why}"
        raise
    finally:
        finish_report(out, meta, time.monotonic() - began)
    return 1 if any(violations(r) for r in rounds) else 0


def finish_report(out: Path, meta: dict[str, str], wall: float) -> None:
    """The final status, load and wall time into the report the rounds left (it is rewritten after each)."""
    if not out.exists():
        return
    text = out.read_text()
    text = re.sub(r"- Status: \*\*[^*]*\*\*", lambda _: f"- Status: **{meta['state']}**", text)
    text = text.replace("after: `(running)`", f"after: `{uptime()}`")
    text = text.replace("- Wall time: (running).", f"- Wall time: {wall:.0f} s.")
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
