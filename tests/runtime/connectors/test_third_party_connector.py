"""A connector that lives outside planengine plugs in both halves through entry points, end to end on Spark.

The plug-in below is a real distribution on ``sys.path`` (a package plus a ``.dist-info`` with
``entry_points.txt``), found the way an installed one is: its plan-time factory through
``planengine.factories``, its run-time reader and writer through ``planengine.runtime_connectors``.
Nothing in planengine names it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.connectors import discovery
from planengine.errors import ValidationError
from planengine.runtime import connectors as runtime_connectors

PLANNER = '''
from planengine.connectors.base import (DynamicTableSink, ScanRuntimeProvider, ScanTableSource,
                                        SinkRuntimeProvider)
from planengine.connectors.factories import DynamicTableSinkFactory, DynamicTableSourceFactory
from planengine.ir.changelog import INSERT_ONLY


class TinyTable(ScanTableSource, DynamicTableSink):
    def __init__(self, path, columns):
        self.path, self.columns = path, columns

    def changelog_mode(self, requested=None):
        return INSERT_ONLY if requested is None else requested

    def scan_runtime_provider(self, ctx):
        return ScanRuntimeProvider("tiny", self, False)

    def sink_runtime_provider(self, ctx):
        return SinkRuntimeProvider("tiny", self)

    def as_summary_string(self):
        return f"tiny({self.path})"


class TinyFactory(DynamicTableSourceFactory, DynamicTableSinkFactory):
    factory_identifier = "tiny"

    def create_dynamic_table_source(self, ctx):
        return TinyTable(ctx.options["path"], [(c.name, c.type) for c in ctx.schema.physical_columns])

    create_dynamic_table_sink = create_dynamic_table_source
'''

SPARK = '''
import json
import os

from planengine.runtime.connectors import SourceFrame, sink_writer, source_reader, spark_schema_ddl


@source_reader("tiny")
def read_tiny(source, ctx, node):
    names, types = zip(*source.columns)
    ddl = spark_schema_ddl(list(names), list(types))
    return SourceFrame(ctx.spark.readStream.schema(ddl).json(os.path.join(source.path, "in")), bounded=False)


@sink_writer("tiny")
def write_tiny(stream, sink, node, ctx, query):
    names = [name for name, _ in sink.columns]

    def batch(df, batch_id):  # one file per batch id: a replayed batch rewrites the same file
        rows = [dict(zip(names, row)) for row in df.select(*stream.columns).collect()]
        os.makedirs(os.path.join(sink.path, "out"), exist_ok=True)
        with open(os.path.join(sink.path, "out", f"{batch_id}.json"), "w") as f:
            f.writelines(json.dumps(r) + "\\n" for r in rows)

    return query.configure(stream.df.writeStream.foreachBatch(batch).outputMode(stream.output_mode)).start()
'''


def install_plugin(site: Path, runtime_entry: str = "tinyconn.spark") -> None:
    (site / "tinyconn").mkdir(parents=True)
    (site / "tinyconn" / "__init__.py").write_text("")
    (site / "tinyconn" / "planner.py").write_text(PLANNER)
    (site / "tinyconn" / "spark.py").write_text(SPARK)
    info = site / "tinyconn-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyconn\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [planengine.factories]
        tiny = tinyconn.planner:TinyFactory

        [planengine.runtime_connectors]
        tiny = {runtime_entry}
        """))


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    yield site
    discovery.clear_cache()
    runtime_connectors.forget("tiny")
    monkeypatch.delitem(__import__("sys").modules, "tinyconn.spark", raising=False)


def test_a_third_party_connector_runs_end_to_end(site: Path, tmp_path: Path, spark) -> None:
    install_plugin(site)
    discovery.clear_cache()
    runtime_connectors.forget("tiny")
    data = tmp_path / "data"
    (data / "src" / "in").mkdir(parents=True)
    (data / "src" / "in" / "1.json").write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n{"a": 3, "b": "z"}\n')
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (a INT, b STRING) WITH ('connector' = 'tiny', 'path' = '{data / "src"}');
        CREATE TABLE snk (a INT, b STRING) WITH ('connector' = 'tiny', 'path' = '{data / "snk"}');
    """)
    plan = env.compile_plan_sql("INSERT INTO snk SELECT a * 10, UPPER(b) FROM src WHERE a > 1")
    env.execute_plan(plan, job_root=str(tmp_path / "root"), until_idle=True)
    files = sorted((data / "snk" / "out").glob("*.json"))
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert sorted(rows, key=lambda r: r["a"]) == [{"a": 20, "b": "Y"}, {"a": 30, "b": "Z"}]


def test_a_runtime_entry_point_that_registers_nothing_is_named_in_the_error(site: Path) -> None:
    install_plugin(site, runtime_entry="tinyconn")  # the package, not the module with the decorators
    runtime_connectors.forget("tiny")
    with pytest.raises(ValidationError) as info:
        runtime_connectors.get_source_reader("tiny")
    assert "cannot be read by this engine's Spark runtime" in str(info.value)
    assert "tinyconn" in str(info.value) and "planengine.runtime_connectors" in str(info.value)
