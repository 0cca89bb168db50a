"""Runs one conformance program through the engine in-process and judges its sinks (README "Run semantics").

Each phase's rows of a source are one file, so each phase is one micro-batch, as in the CLI contract: rows
behind the watermark of earlier rows of the same batch are the engine's business (per-record watermarks),
not the harness's.

Restore programs: phase 1 writes the ``before`` rows, compiles the statement, runs until idle and stops with
a snapshot WITHOUT draining; phase 2 writes the ``after`` rows as new files, builds a fresh
``TableEnvironment`` with the same DDL, restores ``<job root>/plan.json`` (never re-plans) and runs until
idle WITH drain (end of input fires every remaining window and timer). Semantic programs
(``restore_split: false``): one drained run over ``before``.

Judgement per sink: the committed ``changelog-json`` output (both phases) against ``before ++ after``.
Spark folds intermediate updates inside a micro-batch, so a sink passes when its *materialized* table
matches (keyed by ``upsert_key_indices``, else the sink's PRIMARY KEY, else a multiset); whether the exact
changelog matched too is recorded. ``ordered: true`` sinks compare insert order.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planengine.testing.changelog import ChangelogRow, changelog_counter, materialize, read_changelog_json
from planengine.testing.conformance_programs import ConformanceProgram, expected_rows, json_lines

UDF_MODULE = "tests.conformance.udfs"

# Failure categories (docs/conformance.md explains them).
PLANNER = "planner error"
MISSING_TRANSLATOR = "runtime missing translator"
RUNTIME = "runtime error"
WRONG = "wrong result"
HARNESS = "harness limitation"
NEEDS_UDAF = "needs python UDAF/UDTF"
BY_DESIGN = "unsupported by design"


@dataclass
class SinkVerdict:
    name: str
    materialized_equal: bool
    exact_equal: bool
    phase1_equal: bool | None = None  # materialized phase-1 output vs the expected 'before' (informative)
    missing: list[str] = field(default_factory=list)  # materialized rows expected but absent (with counts)
    unexpected: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    program: ConformanceProgram
    passed: bool = False
    exact: bool = False
    category: str | None = None
    stage: str | None = None
    error: str | None = None
    seconds: float = 0.0
    sinks: list[SinkVerdict] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.program.key

    def summary(self) -> str:
        if self.passed:
            return "pass" + ("" if self.exact else " (materialized; exact changelog differs: folded updates)")
        return f"{self.category}: {self.error}"


# --- helpers -----------------------------------------------------------------------------------------------
def _columns(env: Any, table: str) -> tuple[list[str], list[Any], list[int]]:
    """Physical column names and types, and the primary key's positions among them."""
    resolved = env.catalog_manager.get_table(env.catalog_manager.qualify([table])).object
    physical = resolved.schema.physical_columns
    names = [c.name for c in physical]
    pk = resolved.schema.primary_key
    key_names = list(getattr(pk, "columns", None) or []) if pk is not None else []
    return names, [c.type for c in physical], [names.index(k) for k in key_names if k in names]


def new_env(program: ConformanceProgram, workdir: Path) -> Any:
    from planengine.api import TableEnvironment

    env = TableEnvironment(program.session_config())
    env.execute_sql(program.ddl(workdir, UDF_MODULE if program.functions else None))
    return env


def write_sources(env: Any, program: ConformanceProgram, workdir: Path, phase: str) -> None:
    for s in program.sources:
        names, types, _ = _columns(env, s.name)
        rows = s.before if phase == "before" else s.after
        directory = workdir / s.name
        directory.mkdir(parents=True, exist_ok=True)
        if phase == "after" and s.is_lookup:
            # README: across the savepoint a lookup (dimension) table's content is replaced, not appended
            for old in directory.glob("before*.json"):
                old.unlink()
        if rows:
            changelog = program.source_format(s) == "changelog-json"
            stamp = time.time()
            path = directory / f"{phase}.json"  # one file per phase: one micro-batch, as in the CLI contract
            path.write_text(json_lines(rows, names, types, changelog=changelog), encoding="utf-8")
            os.utime(path, (stamp, stamp))


_FRAME_RE = re.compile(r'File "([^"]*planengine/[^"]+)", line (\d+), in (\S+)')
_FINAL_RE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit)): (.*)$")


def _excerpt(error: BaseException, limit: int = 500) -> str:
    """The error's first line, and for a failed Python worker its last engine frame and final exception."""
    text = f"{type(error).__name__}: {error}".strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    first = lines[0] if lines else text
    first = re.sub(r"Query \[id = [^]]*\] ", "", first)
    parts = [first if len(first) <= 240 else first[:240] + "…"]
    frames = _FRAME_RE.findall(text)
    if frames:
        path, line, fn = frames[-1]
        parts.append(f"at {path.split('/work/main/')[-1].split('site-packages/')[-1]}:{line} in {fn}")
    finals = [m for m in (_FINAL_RE.match(ln) for ln in lines[1:]) if m and not m.group(1).startswith(
        ("org.", "py4j", "java."))]
    if finals:
        parts.append(f"{finals[-1].group(1)}: {finals[-1].group(2)[:200]}")
    out = " | ".join(parts)
    return out if len(out) <= limit else out[:limit] + "…"


def _sink_key(spec: Any, pk: list[int]) -> list[int] | None:
    if spec.upsert_key_indices:
        return list(spec.upsert_key_indices)
    return pk or None


def _ordered_equal(actual: list[ChangelogRow], expected: list[ChangelogRow]) -> bool:
    """Insert-only ordered sinks: the same rows in the same order; otherwise the materialized table."""
    return [r.text for r in actual] == [r.text for r in expected]


def judge_sink(env: Any, program: ConformanceProgram, spec: Any, workdir: Path, phase1: list[ChangelogRow] | None
               ) -> SinkVerdict:
    names, types, pk = _columns(env, spec.name)
    actual = read_changelog_json(workdir / spec.name, names, types)
    expected = expected_rows([*spec.before, *spec.after], types)
    key = _sink_key(spec, pk)
    if spec.ordered:
        exact = _ordered_equal(actual, expected)
        insert_only = all(r.kind == "+I" for r in [*actual, *expected])
        mat = exact if insert_only else materialize(actual, key) == materialize(expected, key)
    else:
        exact = changelog_counter(actual) == changelog_counter(expected)
        mat = exact or materialize(actual, key) == materialize(expected, key)
    want, got = materialize(expected, key), materialize(actual, key)
    verdict = SinkVerdict(spec.name, mat, exact,
                          missing=sorted(f"{b} x{n}" for b, n in (want - got).items()),
                          unexpected=sorted(f"{b} x{n}" for b, n in (got - want).items()))
    if not mat and not verdict.missing and not verdict.unexpected:
        # multiset subtraction drops negative counts: show the raw difference
        diff = {b: got.get(b, 0) - want.get(b, 0) for b in set(got) | set(want) if got.get(b, 0) != want.get(b, 0)}
        verdict.unexpected = sorted(f"{b} x{n}" for b, n in diff.items())
        if not diff and spec.ordered:
            verdict.unexpected = ["(same rows, different order) got: " + " ".join(r.text for r in actual)]
    if phase1 is not None:
        before = expected_rows(spec.before, types)
        verdict.phase1_equal = materialize(phase1, key) == materialize(before, key)
    return verdict


def classify(program: ConformanceProgram, stage: str, error: BaseException | None) -> str:
    """The failure category: requirements first (they explain any stage), then the stage that failed."""
    req = set(program.requires)
    if req & {"processing-time", "temporal-table-function"}:
        return f"{BY_DESIGN} ({', '.join(sorted(req & {'processing-time', 'temporal-table-function'}))})"
    if stage == "plan" and req & {"java-udaf", "java-udtf"}:
        names = [str(f.get("name", "")).lower() for f in program.functions]
        if any(n and n in str(error).lower() for n in names) or "aggregate function" in str(error).lower():
            return NEEDS_UDAF
    if stage in ("ddl", "plan"):
        return PLANNER
    if stage == "compare":
        return WRONG
    if stage == "sources":
        return HARNESS
    from planengine.errors import PlanIncompatible

    if isinstance(error, PlanIncompatible) or "cannot run node" in str(error):
        return MISSING_TRANSLATOR
    return RUNTIME


# --- the run -----------------------------------------------------------------------------------------------
# Spark's fixed 10 s handshake with a new Python worker fails on an overloaded machine; not the engine's fault.
TRANSIENT = ("Python worker failed to connect back", "worker exited unexpectedly (crashed)")


def run_program(program: ConformanceProgram, workdir: Path, keep: bool = False, retries: int = 1) -> Outcome:
    """Run and judge ``program``; a run that failed only because a Python worker could not start in time is
    repeated from scratch (at most ``retries`` times) and, if it still fails so, reported as transient."""
    outcome = _run_once(program, workdir, keep)
    attempts = 0
    while not outcome.passed and attempts < retries and any(t in (outcome.error or "") for t in TRANSIENT):
        attempts += 1
        shutil.rmtree(workdir, ignore_errors=True)
        took = outcome.seconds
        outcome = _run_once(program, workdir, keep)
        outcome.seconds += took
    if not outcome.passed and TRANSIENT[0] in (outcome.error or ""):
        outcome.category = f"{HARNESS} (transient: Python worker start timed out under load)"
    return outcome


def _run_once(program: ConformanceProgram, workdir: Path, keep: bool) -> Outcome:
    from planengine.plan.compiled_plan import CompiledPlan

    outcome = Outcome(program)
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    job_root = workdir / "_job"
    stage = "ddl"
    try:
        env = new_env(program, workdir)
        stage = "sources"
        write_sources(env, program, workdir, "before")
        stage = "plan"
        plan = env.compile_plan_sql(program.statement.strip())
        phase1: dict[str, list[ChangelogRow]] | None = None
        if program.restore_split:
            stage = "phase 1"
            env.execute_plan(plan, job_root=str(job_root), until_idle=True, drain=False)
            phase1 = {}
            for s in program.sinks:
                names, types, _ = _columns(env, s.name)
                phase1[s.name] = read_changelog_json(workdir / s.name, names, types)
            stage = "sources"
            write_sources(env, program, workdir, "after")
            stage = "phase 2 (restore)"
            env2 = new_env(program, workdir)
            plan2 = CompiledPlan.from_file(job_root / "plan.json")
            env2.execute_plan(plan2, job_root=str(job_root), until_idle=True, drain=True)
        else:
            stage = "bounded run"
            env.execute_plan(plan, job_root=str(job_root), until_idle=True, drain=True)
        stage = "compare"
        outcome.sinks = [judge_sink(env, program, s, workdir, (phase1 or {}).get(s.name) if phase1 else None)
                         for s in program.sinks]
        outcome.passed = all(v.materialized_equal for v in outcome.sinks)
        outcome.exact = all(v.exact_equal for v in outcome.sinks)
        if not outcome.passed:
            bad = [v for v in outcome.sinks if not v.materialized_equal]
            outcome.stage = stage
            outcome.category = classify(program, stage, None)
            outcome.error = "; ".join(
                f"{v.name}: missing {v.missing[:4]}, unexpected {v.unexpected[:4]}"
                + ("" if v.phase1_equal is None else f" (phase 1 {'ok' if v.phase1_equal else 'differs'})")
                for v in bad)
    except Exception as error:  # classified, reported; never hides a pass
        outcome.stage = stage
        outcome.category = classify(program, stage, error)
        outcome.error = f"[{stage}] {_excerpt(error)}"
        outcome.passed = False
        if keep:
            traceback.print_exc()
    finally:
        _stop_leftover_queries()
        outcome.seconds = time.monotonic() - started
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return outcome


def _stop_leftover_queries() -> None:
    """A failed run may leave queries running in the shared session; stop them so the next program is clean."""
    try:
        from planengine.runtime.engine.session import get_spark

        for q in get_spark().streams.active:
            q.stop()
    except Exception:
        pass


def family_table(outcomes: list[Outcome]) -> tuple[str, Counter[str], Counter[str]]:
    """``group_aggregate 3/4, join 6/8, … total 31/58`` and the per-family counters."""
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for o in outcomes:
        total[o.program.family] += 1
        passed[o.program.family] += int(o.passed)
    parts = [f"{f} {passed[f]}/{total[f]}" for f in sorted(total)]
    line = ", ".join(parts) + f"; total {sum(passed.values())}/{sum(total.values())}"
    return line, passed, total


# Outcomes of this process's runs (``family/id`` → Outcome), read by conftest's terminal summary.
RESULTS: dict[str, Outcome] = {}
