"""How long does starting a run from a snapshot take: hard-link fork vs copy, as state grows.

Upgrades and rollbacks fork a snapshot into a new run before the new engine can start, so fork time is
downtime. With hard links it should depend on the number of files, not their bytes; copying is the
fallback across devices. This synthesises snapshot directories shaped like Spark state (many small
``.delta`` files, a few big ``.snapshot`` files, offsets/commits logs) with the same file count at every
size, forks each with ``fork_snapshot(mode="link")`` and ``mode="copy"``, and reports medians.

    .venv/bin/python -m benchmarks.snapshot_fork [--sizes 10MB,100MB,1GB] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from planengine.runtime.storage.snapshots import fork_snapshot

OPERATORS, PARTITIONS, BATCHES = 2, 8, 60
DELTA_BYTES = 4096
BLOCK = os.urandom(1 << 20)  # incompressible filler, reused so generation is I/O-bound, not RNG-bound
UNITS = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def parse_size(text: str) -> int:
    for unit, factor in UNITS.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def write_bytes(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        while size > 0:
            chunk = BLOCK[: min(size, len(BLOCK))]
            f.write(chunk)
            size -= len(chunk)


def synthesise_snapshot(root: Path, total_bytes: int) -> int:
    """A snapshot dir of about ``total_bytes``; returns its file count (the same for every size)."""
    cp = root / "checkpoints" / "orders_agg"
    for log in ("offsets", "commits"):
        (cp / log).mkdir(parents=True)
        for n in range(BATCHES):
            write_bytes(cp / log / str(n), 300)
    (cp / "metadata").write_text('{"id":"bench"}')
    stores = [(op, p) for op in range(OPERATORS) for p in range(PARTITIONS)]
    deltas = len(stores) * BATCHES
    big_each = max(0, total_bytes - deltas * DELTA_BYTES) // len(stores)
    for op, p in stores:
        part = cp / "state" / str(op) / str(p)
        part.mkdir(parents=True)
        for version in range(1, BATCHES + 1):
            write_bytes(part / f"{version}.delta", DELTA_BYTES)
        write_bytes(part / f"{BATCHES}.snapshot", big_each)
    return sum(1 for p in root.rglob("*") if p.is_file())


def time_fork(snapshot: Path, work: Path, mode: str, repeats: int) -> list[float]:
    timings = []
    for i in range(repeats):
        target = work / f"fork-{mode}-{i}"
        start = time.perf_counter()
        stats = fork_snapshot(snapshot, target, mode=mode)  # type: ignore[arg-type]
        timings.append(time.perf_counter() - start)
        assert (stats.files_linked if mode == "link" else stats.files_copied) > 0
        shutil.rmtree(target)
        os.sync()  # do not let the previous copy's write-back slow the next measurement
    return timings


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def filesystem_of(path: Path) -> str:
    best, fstype = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            _dev, mount, kind, *_ = line.split()
            if str(path).startswith(mount) and len(mount) > len(best):
                best, fstype = mount, kind
    except OSError:
        pass
    return f"{fstype} (mounted at {best or '?'})"


def _ms(timings: list[float]) -> str:
    return f"{statistics.median(timings) * 1000:.1f} ({min(timings) * 1000:.1f}–{max(timings) * 1000:.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10MB,100MB,1GB")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir)")
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "snapshot_fork.md"))
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="planengine-bench-", dir=args.dir))
    rows = []
    try:
        for size_text in args.sizes.split(","):
            snapshot = work / f"snapshot-{size_text}"
            files = synthesise_snapshot(snapshot, parse_size(size_text))
            on_disk = sum(p.stat().st_size for p in snapshot.rglob("*") if p.is_file())
            os.sync()
            links = time_fork(snapshot, work, "link", args.repeats)
            copies = time_fork(snapshot, work, "copy", args.repeats)
            rows.append((size_text, on_disk, files, links, copies))
            link, copy = statistics.median(links), statistics.median(copies)
            print(f"{size_text:>6}: {files} files, link {link * 1000:8.1f} ms, copy {copy * 1000:8.1f} ms", flush=True)
            shutil.rmtree(snapshot)
    finally:
        fs = filesystem_of(work)
        shutil.rmtree(work, ignore_errors=True)

    command = "python -m benchmarks.snapshot_fork " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# Snapshot fork: hard links vs copy",
        "",
        f"- Command: `{command.strip()}`",
        f"- Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Machine: {machine()}",
        f"- Filesystem: {fs}",
        f"- Shape: {OPERATORS} operators x {PARTITIONS} partitions x {BATCHES} `.delta` files of "
        f"{DELTA_BYTES} B, one big `.snapshot` per partition holding the rest, {BATCHES} offsets and commits; "
        "the same file count at every size.",
        f"- Median of {args.repeats} forks each; page cache warm (source just written), `sync` between runs.",
        "- Copies are fsynced file by file (as `fork_snapshot` does, so a run marker never outlives its data);",
        "  hard links are metadata only.",
        "",
        "| state size | bytes | files | hard-link fork, median (min–max) ms | copy fork, median (min–max) ms "
        "| copy / link |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size_text, on_disk, files, links, copies in rows:
        link, copy = statistics.median(links), statistics.median(copies)
        lines.append(f"| {size_text} | {on_disk:,} | {files} | {_ms(links)} | {_ms(copies)} | {copy / link:.0f}x |")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
