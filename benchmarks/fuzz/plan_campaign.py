"""Fuzzing campaign: mutated plans through the real CLI, hostile HTTP requests against the driver API.

    .venv/bin/python benchmarks/fuzz/plan_campaign.py --mode plans --count-plans 2000 --seed 20261128
    .venv/bin/python benchmarks/fuzz/plan_campaign.py --mode http --count-http 1000 --seed 20261128
    .venv/bin/python benchmarks/fuzz/plan_campaign.py --mode both          # both, default counts

``plans``: each mutated plan (``tests/fuzz/plan_mutants.py``, the generator the bounded tests use) is written to a
file and given to ``planengine check --plan P --json`` and ``planengine explain --plan P`` in worker
processes (``planengine.cli.main`` in a long-lived subprocess per worker, so Spark's imports are paid once);
a run counts as a *traceback* when the command raises anything outside ``planengine.errors`` or exits with a
code outside its documented set (check 0/2/3/4, explain 0/2), and as a *hang* when it takes over
``--hang-seconds`` (the worker is killed and replaced). ``http``: each request goes over a real socket to a
``StatusServer`` (token-protected, over a recording driver) in this process; it fails when a stop or start
happens without the token, the server does not answer or close within the bound, or ``/healthz`` stops
answering. Prints a Markdown report (counts, slowest inputs, load average) to stdout; a failing input is
printed with its index, so ``--start INDEX --count-plans 1`` (or ``--count-http 1``) replays it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing as mp
import os
import platform
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fuzz.plan_mutants import http_request, mutated_plan, seed_plans  # noqa: E402

CHECK_EXITS = {0, 2, 3, 4}
EXPLAIN_EXITS = {0, 2}


# --- plans ------------------------------------------------------------------------------------------------
def _worker(requests: Any, answers: Any) -> None:
    """Run CLI commands in-process on plan texts until told to stop; answer (code, traceback, seconds)."""
    from planengine.cli import main

    workdir = Path(tempfile.mkdtemp(prefix="plan-fuzz-"))
    path = workdir / "plan.json"
    while True:
        job = requests.get()
        if job is None:
            return
        index, command, text = job
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        argv = ["check", "--plan", str(path), "--json"] if command == "check" else ["explain", "--plan", str(path)]
        began = time.perf_counter()
        failure = None
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        except SystemExit as exit_:  # argparse
            code = int(exit_.code or 0)
        except BaseException:  # anything outside planengine.errors escaped the CLI: the defect we hunt
            code, failure = 1, traceback.format_exc()
        answers.put((index, command, code, failure, time.perf_counter() - began, out.getvalue()[:2000]))


class Pool:
    """Worker processes with a per-input deadline: a hung worker is killed and replaced."""

    def __init__(self, size: int, hang_seconds: float):
        self.ctx = mp.get_context("fork")
        self.hang_seconds = hang_seconds
        self.workers = [self._spawn() for _ in range(size)]

    def _spawn(self) -> tuple[Any, Any, Any]:
        requests, answers = self.ctx.Queue(), self.ctx.Queue()
        process = self.ctx.Process(target=_worker, args=(requests, answers), daemon=True)
        process.start()
        return process, requests, answers

    def run(self, slot: int, index: int, command: str, text: str) -> tuple[int, str | None, float, str, bool]:
        """(exit code, traceback, seconds, stdout, hung) of one command on worker ``slot``."""
        process, requests, answers = self.workers[slot]
        began = time.perf_counter()
        requests.put((index, command, text))
        try:
            _, _, code, failure, seconds, out = answers.get(timeout=self.hang_seconds)
            return code, failure, seconds, out, False
        except Exception:  # queue.Empty: the input hangs the CLI
            process.kill()
            process.join(5)
            self.workers[slot] = self._spawn()
            return -1, None, time.perf_counter() - began, "", True

    def close(self) -> None:
        for process, requests, _ in self.workers:
            requests.put(None)
            process.join(5)
            if process.is_alive():
                process.kill()


def plan_campaign(count: int, seed: int, start: int, hang_seconds: float) -> dict[str, Any]:
    rng = random.Random(seed)
    seeds = seed_plans()
    inputs = [mutated_plan(rng, seeds) for _ in range(start + count)][start:]
    pool = Pool(1, hang_seconds)
    pool.run(0, -1, "check", json.dumps(seeds[0]))  # warm the worker's imports (not an input's time)
    exits: dict[str, dict[int, int]] = {"check": {}, "explain": {}}
    failures: list[dict[str, Any]] = []
    hangs: list[dict[str, Any]] = []
    slowest: list[tuple[float, int, str, str]] = []
    began = time.perf_counter()
    for offset, (text, what) in enumerate(inputs):
        index = start + offset
        for command, allowed in (("check", CHECK_EXITS), ("explain", EXPLAIN_EXITS)):
            code, failure, seconds, out, hung = pool.run(0, index, command, text)
            slowest.append((seconds, index, command, what))
            if hung:
                hangs.append({"index": index, "command": command, "what": what, "seconds": round(seconds, 1)})
                continue
            exits[command][code] = exits[command].get(code, 0) + 1
            if failure or code not in allowed or (command == "check" and not _json_body(out, code)):
                failures.append({"index": index, "command": command, "code": code, "what": what,
                                 "traceback": (failure or out)[-1500:]})
    pool.close()
    slowest.sort(reverse=True)
    return {"inputs": len(inputs), "runs": 2 * len(inputs), "exits": exits, "failures": failures, "hangs": hangs,
            "slowest": slowest[:5], "seconds": round(time.perf_counter() - began, 1)}


def _json_body(out: str, code: int) -> bool:
    """``check --json`` answers a JSON document with its exit code, whatever the verdict."""
    try:
        return json.loads(out).get("exitCode") == code
    except ValueError:
        return False


# --- HTTP -------------------------------------------------------------------------------------------------
def http_campaign(count: int, seed: int, start: int, hang_seconds: float) -> dict[str, Any]:
    from planengine.runtime.engine.status_server import StatusServer
    from tests.fuzz.test_driver_api_fuzz import TOKEN, RecordingDriver, exchange, healthy

    rng = random.Random(seed)
    requests = [http_request(rng, TOKEN) for _ in range(start + count)][start:]
    driver = RecordingDriver()
    statuses: dict[str, int] = {}
    failures: list[dict[str, Any]] = []
    slowest: list[tuple[float, int, str]] = []
    authorized_effects = 0
    began = time.perf_counter()
    with StatusServer(driver, token=TOKEN) as server:  # type: ignore[arg-type]
        for offset, (raw, what, authorized) in enumerate(requests):
            index = start + offset
            before = (len(driver.stops), len(driver.starts))
            t0 = time.perf_counter()
            try:
                answer = exchange(server.port, raw, bound=hang_seconds)
            except (AssertionError, OSError) as error:
                failures.append({"index": index, "what": what, "error": f"no answer or close: {error}"})
                continue
            seconds = time.perf_counter() - t0
            slowest.append((seconds, index, what))
            status = answer.split(b" ", 2)[1].decode(errors="replace") if answer.startswith(b"HTTP/") else (
                "closed" if not answer else "garbage")
            statuses[status] = statuses.get(status, 0) + 1
            if status == "garbage":
                failures.append({"index": index, "what": what, "error": f"not an HTTP answer: {answer[:100]!r}"})
            if (len(driver.stops), len(driver.starts)) != before:
                if not authorized:
                    failures.append({"index": index, "what": what, "error": "stopped/started without the token"})
                authorized_effects += 1
                server._stop_started = False
                server._stop_done.clear()
        if not healthy(server.port):
            failures.append({"index": -1, "what": "after the campaign", "error": "/healthz does not answer"})
    slowest.sort(reverse=True)
    return {"requests": len(requests), "statuses": dict(sorted(statuses.items())), "failures": failures,
            "effects": authorized_effects, "slowest": slowest[:5], "seconds": round(time.perf_counter() - began, 1)}


# --- report -----------------------------------------------------------------------------------------------
def report(args: argparse.Namespace, plans: dict[str, Any] | None, http: dict[str, Any] | None,
           load_before: str, load_after: str) -> str:
    lines = ["# Fuzzing campaign: plans and the driver API", "",
             f"Command: `.venv/bin/python benchmarks/fuzz/plan_campaign.py --mode {args.mode} --count-plans "
             f"{args.count_plans} --count-http {args.count_http} --seed {args.seed}`", "",
             f"Seed {args.seed}; machine: {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; `uptime` before: `{load_before}`; after: `{load_after}`.", ""]
    if plans is not None:
        lines += ["## Plans (`check --json` and `explain --plan`, one worker process, per-run bound "
                  f"{args.hang_seconds:g} s)", "",
                  f"- inputs: {plans['inputs']} mutated plans, {plans['runs']} CLI runs, {plans['seconds']} s",
                  f"- exit codes of check: {dict(sorted(plans['exits']['check'].items()))}; of explain: "
                  f"{dict(sorted(plans['exits']['explain'].items()))}",
                  f"- tracebacks / undocumented exit codes: {len(plans['failures'])}",
                  f"- hangs (over {args.hang_seconds:g} s): {len(plans['hangs'])}", "",
                  "Slowest runs:", "", "| seconds | input | command | mutation |", "|---|---|---|---|"]
        lines += [f"| {s:.3f} | {i} | {c} | {w[:90]} |" for s, i, c, w in plans["slowest"]]
        for f in plans["failures"][:10]:
            lines += ["", f"Failure at input {f['index']} ({f['command']}, exit {f['code']}): {f['what']}", "```",
                      f["traceback"], "```"]
        for h in plans["hangs"][:10]:
            lines += ["", f"Hang at input {h['index']} ({h['command']}): {h['what']}"]
        lines.append("")
    if http is not None:
        lines += ["## HTTP (`StatusServer` with a control token over a recording driver, real sockets)", "",
                  f"- requests: {http['requests']}, {http['seconds']} s; answers by status: {http['statuses']} "
                  "(`closed`: the server closed the connection without an answer, e.g. a body that never came)",
                  f"- stops/starts performed (all with the right token): {http['effects']}",
                  f"- failures (unauthorized effect, no answer within {args.hang_seconds:g} s, garbage, unhealthy "
                  f"after): {len(http['failures'])}", "", "Slowest requests:", "", "| seconds | request | what |",
                  "|---|---|---|"]
        lines += [f"| {s:.3f} | {i} | {w[:100]} |" for s, i, w in http["slowest"]]
        for f in http["failures"][:10]:
            lines += ["", f"Failure at request {f['index']}: {f['what']}: {f['error']}"]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("plans", "http", "both"), default="both")
    parser.add_argument("--count-plans", type=int, default=2000)
    parser.add_argument("--count-http", type=int, default=1000)
    parser.add_argument("--start", type=int, default=0, help="index of the first input (replay one: --start I)")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--hang-seconds", type=float, default=10.0)
    args = parser.parse_args()
    load_before = os.popen("uptime").read().strip()
    plans = plan_campaign(args.count_plans, args.seed, args.start, args.hang_seconds) \
        if args.mode in ("plans", "both") else None
    http = http_campaign(args.count_http, args.seed, args.start, args.hang_seconds) \
        if args.mode in ("http", "both") else None
    print(report(args, plans, http, load_before, os.popen("uptime").read().strip()))
    bad = (plans and (plans["failures"] or plans["hangs"])) or (http and http["failures"])
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
