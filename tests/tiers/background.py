"""A set-up script that runs while other work goes on, at the lowest CPU priority, with its result in a file.

``make test`` starts the control plane's build (``tests/setup/prepare.d/40-controlplane.sh``, which only the e2e
tier needs) before it creates the virtualenv, so the Go compilation overlaps the downloads of ``make venv`` and
the other set-up steps and the fast and Spark tiers; the test runner (``tests/tiers/run.py``) adopts that build
and waits for it before the e2e tier. Run alone, the runner starts the build itself. Only the standard library:
``make`` calls this with the machine's ``python3`` before the virtualenv exists.

    python3 -m tests.tiers.background start 40-controlplane

Files under ``.tools/logs/``: ``<step>.log`` (the script's output), ``<step>.pid`` (the process group),
``<step>.status`` (its exit status, written when it ends).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEPS = REPO / "tests" / "setup" / "prepare.d"
LOGS = REPO / ".tools" / "logs"
# Set by `make test` for the runner: the build it started is the one to wait for.
ADOPT_ENV = "PLANENGINE_BACKGROUND_STARTED"
# The script, then its exit status written atomically (a reader never sees a half-written file).
_WRAPPER = 'bash "$0" > "$1" 2>&1; echo $? > "$2.tmp"; mv "$2.tmp" "$2"'


class BackgroundSetup:
    """One set-up script in the background: started here or adopted from ``make``, waited for, or stopped."""

    def __init__(self, script: Path, logs: Path = LOGS) -> None:
        self.script = script
        self.log = logs / f"{script.stem}.log"
        self.status_file = logs / f"{script.stem}.status"
        self.pid_file = logs / f"{script.stem}.pid"
        self.process: subprocess.Popen[bytes] | None = None  # when this process started it (to reap it)
        self.pid = 0

    def start(self, *, adopt: bool = False) -> None:
        """Start the script, or with ``adopt`` take over the one ``make`` started (if its pid file is there)."""
        if adopt and self.pid_file.exists():
            self.pid = int(self.pid_file.read_text().strip())
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.status_file.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            ["nice", "-n", "19", "bash", "-c", _WRAPPER, str(self.script), str(self.log), str(self.status_file)],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self.pid = self.process.pid
        self.pid_file.write_text(f"{self.pid}\n")

    def _alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return "\tZ" not in _proc_state(self.pid)

    def result(self) -> int | None:
        """The exit status once the script ended; 1 if it vanished without one (killed)."""
        if self.status_file.exists():
            return int(self.status_file.read_text().strip() or 1)
        return None if self._alive() else 1

    def wait(self, poll: float = 1.0) -> int:
        """Block until the script ends; its exit status (0 when it had nothing to do). The log's tail is printed
        when it failed, the whole (short) log when it did something."""
        if self.result() is None:
            print(f"waiting for {_shown(self.script)} (log: {_shown(self.log)})", flush=True)
        while (status := self.result()) is None:
            time.sleep(poll)
        if self.process is not None:
            self.process.wait()
        text = self.log.read_text(errors="replace").strip() if self.log.exists() else ""
        if status != 0:
            tail = "\n".join(text.splitlines()[-40:])
            print(f"{_shown(self.script)} failed (exit {status}); the end of {_shown(self.log)}:\n{tail}", flush=True)
        elif text:
            print(text, flush=True)
        return status

    def stop(self) -> None:
        """End a script nobody will wait for (an earlier step failed): its whole process group."""
        if self.pid and self.result() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 30
            while self._alive() and time.monotonic() < deadline:
                time.sleep(0.1)
        if self.process is not None and self.process.poll() is not None:
            self.process.wait()


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "start" or not (STEPS / f"{argv[1]}.sh").exists():
        steps = " ".join(sorted(p.stem for p in STEPS.glob("*.sh")))
        print(f"usage: python3 -m tests.tiers.background start STEP (steps: {steps})", file=sys.stderr)
        return 2
    BackgroundSetup(STEPS / f"{argv[1]}.sh").start()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
