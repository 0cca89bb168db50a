"""Long fuzzing campaign over ``planengine compile``: ``python -m benchmarks.fuzz.sql_campaign [--inputs N]
[--seed S] [--workers W] [--timeout SEC] [--out DIR]``.

Inputs come from ``tests/fuzz/sql_mutants.py`` (mutated golden and conformance programs). Each input runs
in-process in a worker process through ``tests/fuzz/harness.run_one`` (the compile path as a function:
decode, set-up statements, plan, JSON; Spark is never started); the parent gives each input ``--timeout``
seconds of the worker's CPU time (read from ``/proc``, so a loaded machine does not turn slow inputs into
"hangs") and at most ``--wall-factor`` times that in wall time (an input that blocks without computing), and
replaces a worker that overruns (a hang). Tracebacks, errors without a location and hangs are
written to ``--out`` as replayable ``.sql`` files (replay: ``planengine compile FILE``). The summary (seed,
counts, slowest input, machine load) is printed as Markdown for ``benchmarks/results/fuzz_sql.md``.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HANG = "hang"


def _worker(seed: int, count: int, shard: int, shards: int, conn) -> None:  # type: ignore[no-untyped-def]
    """Compile this shard's inputs, reporting ``("start", i)`` then ``("done", i, kind, seconds, message)``."""
    sys.path.insert(0, str(REPO))
    logging.disable(logging.WARNING)  # sqlglot's "falling back to Command" warnings are noise here
    from tests.fuzz.harness import no_spark, run_one
    from tests.fuzz.sql_mutants import mutants

    skip = conn.recv()  # inputs already done (a replacement worker resumes after a hang)
    with no_spark():
        for i, mutant in enumerate(mutants(seed, count)):
            if i % shards != shard or i < skip:
                continue
            conn.send(("start", i))
            cpu = time.process_time()
            outcome = run_one(mutant.data, f"input-{i}.sql")
            conn.send(("done", i, outcome.kind, time.process_time() - cpu, outcome.message[-4000:]))
    conn.send(("end",))


def _save(out: Path, seed: int, i: int, kind: str, message: str) -> None:
    from tests.fuzz.sql_mutants import mutants

    mutant = next(m for j, m in enumerate(mutants(seed, i + 1)) if j == i)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"seed{seed}-input{i}-{kind.replace(' ', '-')}"
    (out / f"{stem}.sql").write_bytes(mutant.data)
    (out / f"{stem}.txt").write_text(f"seed {seed} input {i} ({mutant.seed}, {mutant.mutation}): {kind}\n{message}\n")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (``/proc/<pid>/stat`` fields 14 and 15), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def campaign(seed: int, inputs: int, workers: int, timeout: float, out: Path, wall_factor: float = 6.0) -> dict:
    from tests.fuzz.harness import CLEAN_ERROR, COMPILED, TRACEBACK, UNLOCATED_ERROR

    counts: Counter[str] = Counter()
    slowest = (0.0, -1)
    started = time.perf_counter()
    ctx = mp.get_context("fork")
    next_skip = [0] * workers
    live: dict[int, tuple] = {}

    def spawn(shard: int) -> None:
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_worker, args=(seed, inputs, shard, workers, child), daemon=True)
        process.start()
        parent.send(next_skip[shard])
        live[shard] = (process, parent, None, (0.0, 0.0))  # (process, pipe, current input, its start: wall, CPU)

    for shard in range(workers):
        spawn(shard)
    done = 0
    while live:
        for shard, (process, pipe, current, since) in list(live.items()):
            if pipe.poll(0.05):
                try:
                    message = pipe.recv()
                except EOFError:
                    message = ("crash",)
                if message[0] == "start":
                    live[shard] = (process, pipe, message[1], (time.perf_counter(), _cpu_seconds(process.pid)))
                elif message[0] == "done":
                    _, i, kind, seconds, text = message
                    counts[kind] += 1
                    done += 1
                    slowest = max(slowest, (seconds, i))
                    if kind in (TRACEBACK, UNLOCATED_ERROR):
                        _save(out, seed, i, kind, text)
                    live[shard] = (process, pipe, None, (0.0, 0.0))
                    if done % 500 == 0:
                        print(f"[campaign] {done}/{inputs} {dict(counts)} {time.perf_counter() - started:.0f} s",
                              file=sys.stderr, flush=True)
                elif message[0] in ("end", "crash"):
                    if message[0] == "crash" and current is not None:  # the interpreter died on this input
                        counts["crash"] += 1
                        done += 1
                        _save(out, seed, current, "crash", "worker process died")
                        next_skip[shard] = current + 1
                        del live[shard]
                        spawn(shard)
                        continue
                    process.join()
                    del live[shard]
            elif current is not None and time.perf_counter() - since[0] > timeout and (
                    _cpu_seconds(process.pid) - since[1] > timeout
                    or time.perf_counter() - since[0] > wall_factor * timeout):
                cpu = _cpu_seconds(process.pid) - since[1]
                wall = time.perf_counter() - since[0]
                process.kill()
                process.join()
                counts[HANG] += 1
                done += 1
                slowest = max(slowest, (timeout, current))
                _save(out, seed, current, HANG, f"no result after {cpu:.1f} s CPU, {wall:.1f} s wall")
                next_skip[shard] = current + 1
                del live[shard]
                spawn(shard)
    return {
        "seed": seed, "inputs": done, "compiled": counts[COMPILED], "clean errors": counts[CLEAN_ERROR],
        "errors without a location": counts[UNLOCATED_ERROR], "tracebacks": counts[TRACEBACK],
        f"hangs over {timeout:g} s": counts[HANG], "interpreter crashes": counts["crash"],
        "slowest input (CPU)": f"{slowest[0]:.2f} s (input {slowest[1]})",
        "wall time": f"{time.perf_counter() - started:.0f} s", "workers": workers,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None, help="default: a random seed, printed")
    parser.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="CPU seconds per input before it counts as a hang")
    parser.add_argument("--wall-factor", type=float, default=6.0,
                        help="an input is also a hang after this many times --timeout in wall time")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "fuzz_sql_failures")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"[campaign] seed {seed}: {args.inputs} inputs, {args.workers} workers, {args.timeout:g} s per input",
          file=sys.stderr, flush=True)
    load_before = os.popen("uptime").read().strip()
    summary = campaign(seed, args.inputs, args.workers, args.timeout, args.out, args.wall_factor)
    summary["load (uptime) before"] = load_before
    summary["load (uptime) after"] = os.popen("uptime").read().strip()
    print("| measure | value |\n|---|---|")
    for key, value in summary.items():
        print(f"| {key} | {value} |")
    failed = summary["tracebacks"] + summary["errors without a location"] + summary["interpreter crashes"]
    return 1 if failed or summary[f"hangs over {args.timeout:g} s"] else 0


if __name__ == "__main__":
    sys.exit(main())
