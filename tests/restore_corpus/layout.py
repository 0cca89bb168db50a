"""What a restore-corpus case is on disk, and how its files move between machines.

A case is ``corpus/<engineVersion>/<case>/``::

    plan.json        the plan the engine compiled (restored verbatim, never re-planned)
    program.yaml     a copy of the program it was generated from (DDL, input rows, expected rows), so an
                     old case never changes when ``programs/`` is edited later
    generated.json   who wrote it: engine, Spark and Python versions, the node types of the plan
    snapshot/        the phase-1 snapshot (manifest.json, plan.json, checkpoints/<uid>/), trimmed
    output/<sink>/   each sink's phase-1 output, with the file sink's ``_spark_metadata`` log
    job-inputs/      ``<job root>/inputs/`` when the plan has one: VALUES rows are written there once
                     and read by a file source, so they live beside the snapshot, not in it

Spark writes absolute paths into a few text files (the file source's log of files read, the file sink's
log of files written, transformWithState's operator metadata). The generator replaces its temporary data
directory by ``{dir}`` (the same placeholder the program's DDL uses) and a test puts its own directory
back: a plain text substitution, checked so that no binary file ever names a path. Spark's ``.crc``
checksum files are left out: Hadoop reads a file without one unverified, and a relocated file's old
checksum would no longer match.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.runtime.test_executor_cases import load, sink_changelog, write_rows

HERE = Path(__file__).resolve().parent
PROGRAMS_DIR = HERE / "programs"
CORPUS = HERE / "corpus"

DIR_TOKEN = "{dir}"
JOB_ROOT = "job"  # the job root is <data dir>/job for the generator and the test alike
# Paths differ on every machine, so the plan keeps each table's identifier and schema and takes its options
# (paths) from the catalog the test declares; node JSON is unaffected by this choice.
COMPILE_CONFIG = {"table.plan.compile.catalog-objects": "SCHEMA"}
# The phase-1 input files get this modification time (2020-01-01), which Spark's file source records:
# it ignores new files older than the newest recorded one minus 7 days, so a generator clock running
# ahead of the test machine's must not make the phase-2 files look old.
PHASE1_MTIME = 1577836800
SKIPPED_SUFFIXES = (".crc",)


@dataclass(frozen=True)
class CorpusProgram:
    """One case's program: the e2e cases' YAML format (``tests/runtime/test_executor_cases.py``)."""

    name: str
    description: str
    ddl: str
    statement: str
    sources: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    sinks: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @staticmethod
    def from_file(path: Path, name: str | None = None) -> CorpusProgram:
        spec = load(path)
        return CorpusProgram(name or path.stem, spec.get("description", ""), spec["ddl"], spec["statement"],
                       spec.get("sources") or {}, spec["sinks"])

    def ddl_for(self, data_dir: Path) -> str:
        return self.ddl.replace(DIR_TOKEN, str(data_dir))

    def write_inputs(self, data_dir: Path, phase: str) -> None:
        """Write each source's rows of ``phase`` (``before`` | ``after``) as ``<source>/<phase>.json``."""
        for source, rows in self.sources.items():
            write_rows(data_dir / source, phase, rows.get(phase, []))
            if phase == "before":
                os.utime(data_dir / source / "before.json", (PHASE1_MTIME, PHASE1_MTIME))

    def expected(self, sink: str, *phases: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for phase in phases:
            out.update(self.sinks[sink].get(phase) or [])
        return out


def sink_rows(spark: Any, env: Any, data_dir: Path, sink: str) -> Counter[str]:
    """A changelog-json sink's committed changelog as Flink row strings (a multiset)."""
    return Counter(sink_changelog(spark, env, sink, data_dir / sink))


@dataclass(frozen=True)
class CorpusCase:
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def engine_version(self) -> str:
        return self.path.parent.name

    @property
    def id(self) -> str:
        return f"{self.engine_version}/{self.name}"

    @property
    def plan_path(self) -> Path:
        return self.path / "plan.json"

    @property
    def snapshot_dir(self) -> Path:
        return self.path / "snapshot"

    @property
    def output_dir(self) -> Path:
        return self.path / "output"

    @property
    def job_inputs_dir(self) -> Path:
        return self.path / "job-inputs"

    def program(self) -> CorpusProgram:
        return CorpusProgram.from_file(self.path / "program.yaml", self.name)

    def generated(self) -> dict[str, Any]:
        return json.loads((self.path / "generated.json").read_text(encoding="utf-8"))

    def plan(self) -> dict[str, Any]:
        return json.loads(self.plan_path.read_text(encoding="utf-8"))

    def node_types(self) -> set[tuple[str, int]]:
        from planengine.exec.base import split_type_name

        return {split_type_name(n["type"]) for n in self.plan()["nodes"]}


def corpus_cases(root: Path = CORPUS) -> list[CorpusCase]:
    return sorted((CorpusCase(p) for p in root.glob("*/*") if (p / "plan.json").is_file()), key=lambda c: c.id)


def program_names() -> list[str]:
    return sorted(p.stem for p in PROGRAMS_DIR.glob("*.yaml"))


# --- moving files ------------------------------------------------------------------------------------------
def portable_copy(source: Path, target: Path, data_dir: Path) -> None:
    """Copy a tree for checking in: ``data_dir`` becomes ``{dir}``, ``.crc`` files and empty directories
    (which git would not keep anyway) are left out; refuses a binary file that names ``data_dir``."""
    needle = str(data_dir).encode()
    for path in _files(source):
        content = path.read_bytes()
        if needle in content:
            try:
                content = content.decode("utf-8").replace(str(data_dir), DIR_TOKEN).encode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path} is binary and names {data_dir}: it cannot be relocated") from None
        _write(target / path.relative_to(source), content)


def localized_copy(source: Path, target: Path, data_dir: Path) -> None:
    """The inverse of ``portable_copy``: ``{dir}`` becomes ``data_dir`` in the text files that name it."""
    token = DIR_TOKEN.encode()
    for path in _files(source):
        content = path.read_bytes()
        if token in content:
            # A binary file that happens to hold the bytes (portable_copy never writes one) stays as it is.
            with contextlib.suppress(UnicodeDecodeError):
                content = content.decode("utf-8").replace(DIR_TOKEN, str(data_dir)).encode("utf-8")
        _write(target / path.relative_to(source), content)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(SKIPPED_SUFFIXES))


def _write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, 0o644)


def tree_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def remove_tree(path: Path) -> None:
    """Remove a tree that may hold read-only files (snapshots are made read-only)."""
    if path.exists():
        for dirpath, _dirs, _names in os.walk(path):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(path)
