"""Generate restore-corpus cases: ``python -m tests.restore_corpus.generate [--write] [--force] [case ...]``.

For each program (``programs/<case>.yaml``; all of them when none is named) this compiles the program with
today's engine, runs phase 1 in-process until idle, stops with a snapshot and checks the phase-1 output
against the program's expected ``before`` rows. Without ``--write`` that is all (a dry run that prints what
would be written); with it the case goes to ``corpus/<this engine version>/<case>/`` (see ``layout.py``).

Run it on purpose only: when a node version is introduced, add a program that covers it and generate that
case. An existing case is never overwritten (``--force`` exists for a case written by mistake in the same
engine version, before it was committed): a case is the record of what an engine version wrote, and
regenerating it would hide exactly the incompatibility the corpus is there to catch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.restore_corpus.layout import (
    COMPILE_CONFIG,
    CORPUS,
    DIR_TOKEN,
    JOB_ROOT,
    PROGRAMS_DIR,
    CorpusProgram,
    portable_copy,
    program_names,
    remove_tree,
    sink_rows,
    tree_size,
)


class GenerationError(Exception):
    """A program that cannot become a corpus case as it stands (the message says why)."""


def generate_case(name: str, *, write: bool, force: bool = False) -> dict[str, Any]:
    """Run phase 1 of program ``name``; with ``write``, check the case in. Returns a summary."""
    from planengine.version import ENGINE_VERSION

    program_path = PROGRAMS_DIR / f"{name}.yaml"
    program = CorpusProgram.from_file(program_path)
    target = CORPUS / ENGINE_VERSION / name
    if write and target.exists() and not force:
        raise GenerationError(f"{target} exists: a corpus case is never regenerated (add a new program instead)")
    with tempfile.TemporaryDirectory(prefix="restore-corpus-") as tmp:
        data = Path(tmp) / name
        plan, snapshot = _run_phase_one(program, data)
        summary = {
            "case": f"{ENGINE_VERSION}/{name}",
            "nodeTypes": sorted({n["type"] for n in plan.data["nodes"]}),
            "snapshotBytes": 0,
        }
        if write:
            staging = target.with_name(f".{name}.tmp")
            remove_tree(staging)
            _write_case(staging, program_path, plan, snapshot, program, data)
            remove_tree(target)
            staging.rename(target)
            summary["bytes"] = tree_size(target)
            summary["snapshotBytes"] = tree_size(target / "snapshot")
        else:
            summary["snapshotBytes"] = tree_size(snapshot)
    return summary


def _run_phase_one(program: CorpusProgram, data: Path) -> tuple[Any, Path]:
    from planengine.api import TableEnvironment
    from planengine.runtime.engine.session import get_spark
    from planengine.runtime.storage.snapshots import checkpoint_info

    env = TableEnvironment(dict(COMPILE_CONFIG))
    env.execute_sql(program.ddl_for(data))
    program.write_inputs(data, "before")
    plan = env.compile_plan_sql(program.statement)
    if str(data) in plan.as_json():
        raise GenerationError(f"{program.name}: the plan names the data directory {data}; it would not restore "
                              "on another machine (keep paths out of the plan)")
    result = env.execute_plan(plan, job_root=str(data / JOB_ROOT), until_idle=True)
    if result.snapshot_id is None:
        raise GenerationError(f"{program.name}: phase 1 stopped without a snapshot")
    snapshot = data / JOB_ROOT / "snapshots" / result.snapshot_id
    for uid in sorted(p.name for p in (snapshot / "checkpoints").iterdir()):
        info = checkpoint_info(snapshot / "checkpoints" / uid)
        if info["lastPlannedBatchId"] > info["lastCommittedBatchId"]:
            raise GenerationError(f"{program.name}: query {uid} has a planned but uncommitted batch in the "
                                  "snapshot; phase 1 must end idle")
    spark = get_spark()
    for sink in program.sinks:
        got, want = sink_rows(spark, env, data, sink), program.expected(sink, "before")
        if got != want:
            raise GenerationError(f"{program.name}: sink {sink} after phase 1 differs from the program's "
                                  f"'before' rows\n  missing: {sorted((want - got).elements())}\n"
                                  f"  unexpected: {sorted((got - want).elements())}")
    return plan, snapshot


def _write_case(target: Path, program_path: Path, plan: Any, snapshot: Path, program: CorpusProgram,
                data: Path) -> None:
    import pyspark

    from planengine.runtime.storage.snapshots import read_snapshot
    from planengine.version import ENGINE_VERSION

    target.mkdir(parents=True)
    (target / "plan.json").write_text(plan.as_json(), encoding="utf-8")
    (target / "program.yaml").write_bytes(program_path.read_bytes())
    portable_copy(snapshot, target / "snapshot", data)
    for sink in program.sinks:
        portable_copy(data / sink, target / "output" / sink, data)
    if (data / JOB_ROOT / "inputs").is_dir():
        portable_copy(data / JOB_ROOT / "inputs", target / "job-inputs", data)
    manifest = read_snapshot(snapshot).manifest or {}
    generated = {
        "engineVersion": ENGINE_VERSION,
        "sparkVersion": pyspark.__version__,
        "pythonVersion": platform.python_version(),
        "generatedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "program": program.name,
        "programSha256": hashlib.sha256(program_path.read_bytes()).hexdigest(),
        "planId": plan.plan_id,
        "snapshotId": manifest.get("snapshotId"),
        "lastBatchIds": {uid: q["lastBatchId"] for uid, q in sorted(manifest.get("queries", {}).items())},
        "compileConfig": COMPILE_CONFIG,
        "dataDirToken": DIR_TOKEN,
        "nodeTypes": sorted({n["type"] for n in plan.data["nodes"]}),
    }
    (target / "generated.json").write_text(json.dumps(generated, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.restore_corpus.generate", description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help="program names (default: every program)")
    parser.add_argument("--write", action="store_true", help="check the cases in under corpus/<engine version>/")
    parser.add_argument("--force", action="store_true", help="overwrite an existing case (never a committed one)")
    args = parser.parse_args(argv)
    names = args.cases or program_names()
    unknown = sorted(set(names) - set(program_names()))
    if unknown:
        parser.error(f"no program {', '.join(unknown)} in {PROGRAMS_DIR}")
    failed = 0
    for name in names:
        try:
            summary = generate_case(name, write=args.write, force=args.force)
        except GenerationError as error:
            print(f"FAILED {name}: {error}", file=sys.stderr, flush=True)
            failed += 1
            continue
        except Exception as error:  # a Spark failure: report it and go on with the other cases
            first_line = (str(error).splitlines() or [type(error).__name__])[0]
            print(f"FAILED {name}: {type(error).__name__}: {first_line[:500]}", file=sys.stderr, flush=True)
            failed += 1
            continue
        print(json.dumps(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
