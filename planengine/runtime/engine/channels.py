"""Internal changelog channels: where a translator cuts the DAG into several streaming queries.

``ctx.cut(stream, name)`` registers a *producer* query (uid ``name``) that writes ``stream`` (with
``_rowkind`` when updating) through Spark's parquet file sink, and returns a stream that reads the channel
back with Spark's file source. The file sink's ``_spark_metadata`` manifest makes each batch's files
visible exactly once, and the consumer's checkpoint records which files it has read.

The channel directory lives *inside the producer's checkpoint*: ``<run>/checkpoints/<name>/channel/``. So a
snapshot (which forks whole checkpoint directories) carries the channel with the producer; the fork
rewrites the absolute file paths in the channel's manifest and in its readers' source logs to the new run
(``snapshots._repoint_channel_file_paths``), so a restored run's consumer sees the already-read files as
read and replays an uncommitted batch over its own copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planengine.errors import UserError
from planengine.runtime.connectors import QueryOptions
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators.sink import SinkQuery
from planengine.runtime.storage.files import validate_uid
from planengine.runtime.storage.object_store import is_object_store

CHANNEL_DIR = "channel"


def channel_path(run_dir: Path, name: str) -> Path:
    return Path(run_dir) / "checkpoints" / validate_uid(name) / CHANNEL_DIR


def refuse_channels_on_object_store(ctx: Any, name: str) -> None:
    """An internal channel is a file sink inside the producer's checkpoint; on an object-store run that is an
    ``s3a://`` prefix, which this version does not yet read back as a streaming file source. Refused before any
    query starts, naming the channel, instead of a run that fails on it later (docs/object-store.md)."""
    if ctx.checkpoints is not None and is_object_store(ctx.checkpoints):
        raise UserError(f"the plan cuts its DAG into several queries (internal channel {name}), which a job root "
                        f"on an object store ({ctx.checkpoints.rsplit('/runs/', 1)[0]}) does not support yet",
                        hint="run this plan with a --job-root that is a directory (a ReadWriteMany volume)")


def cut(stream: Stream, name: str, ctx: Any, register: Any) -> Stream:
    """Write ``stream`` to the channel ``name`` (a producer query registered via ``register``) and read it back."""

    refuse_channels_on_object_store(ctx, name)
    path = channel_path(ctx.run_dir, name)
    path.mkdir(parents=True, exist_ok=True)
    df = stream.df

    def start(options: QueryOptions) -> Any:
        writer = df.writeStream.format("parquet").outputMode("append").option("path", str(path))
        return options.configure(writer).start()

    register(SinkQuery(name, start, "channel", f"channel {name}", f"channel {name}"))
    schema = df.schema
    read_back = ctx.spark.readStream.schema(schema).parquet(str(path))
    if stream.rowtime is not None:
        # Event time does not travel through files: the consumer re-derives it with the producer's delay.
        delay = stream.facts.watermark_delay_ms
        read_back = read_back.withWatermark(stream.rowtime, f"{delay} milliseconds")
    return stream.with_df(read_back)
