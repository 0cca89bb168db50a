from importlib.metadata import EntryPoint

import pytest

from planengine.connectors import discovery
from planengine.connectors.base import DynamicTableSink, DynamicTableSource
from planengine.connectors.factories import (
    DecodingFormatFactory,
    DynamicTableSinkFactory,
    DynamicTableSourceFactory,
    EncodingFormatFactory,
    Factory,
    is_mutable_option,
)
from planengine.errors import OptionError, ValidationError
from tests.connectors.builders import build_ctx

CONNECTORS = ["blackhole", "datagen", "filesystem", "jdbc", "kafka", "print", "upsert-kafka"]
FORMATS = ["changelog-json", "csv", "debezium-json", "json", "parquet"]


def test_entry_points_provide_all_built_in_connectors_and_formats():
    assert discovery.available_connectors() == CONNECTORS
    assert discovery.available_formats() == FORMATS
    for name in CONNECTORS:
        assert discovery.find_table_factory(name).factory_identifier == name
    for name in FORMATS:
        factory = discovery.find_format_factory(name)
        assert isinstance(factory, DecodingFormatFactory) and isinstance(factory, EncodingFormatFactory)


@pytest.mark.parametrize(("name", "source", "sink"), [
    ("blackhole", False, True), ("datagen", True, False), ("filesystem", True, True), ("jdbc", True, True),
    ("kafka", True, True), ("print", False, True), ("upsert-kafka", True, True),
])
def test_connector_roles(name, source, sink):
    factory = discovery.find_table_factory(name)
    assert isinstance(factory, DynamicTableSourceFactory) == source
    assert isinstance(factory, DynamicTableSinkFactory) == sink


def test_unknown_connector_suggests_the_closest_and_lists_the_rest():
    with pytest.raises(OptionError) as info:
        discovery.create_table_source(build_ctx(options={"connector": "kafak"}))
    assert "table `cat`.`db`.`t`: no connector 'kafak'; did you mean 'kafka'?" in str(info.value)
    assert "available: blackhole, datagen, filesystem, jdbc, kafka, print, upsert-kafka" in str(info.value)


def test_a_format_is_not_a_connector():
    with pytest.raises(OptionError, match="no connector 'json'"):
        discovery.find_table_factory("json")


def test_missing_connector_option_names_the_table_and_the_fix():
    with pytest.raises(OptionError) as info:
        discovery.create_table_sink(build_ctx(options={"path": "/x"}))
    text = str(info.value)
    assert "table `cat`.`db`.`t` has no 'connector' option" in text
    assert "add 'connector' = '…' to its WITH clause; available: blackhole, datagen" in text


def test_sink_only_connector_cannot_be_read():
    with pytest.raises(OptionError, match=r"connector 'print' cannot be read from .*sink-only"):
        discovery.create_table_source(build_ctx(options={"connector": "print"}))
    with pytest.raises(OptionError, match="connector 'datagen' cannot be written to"):
        discovery.create_table_sink(build_ctx(options={"connector": "datagen"}))


def test_create_helpers_build_sources_and_sinks():
    assert isinstance(discovery.create_table_source(build_ctx(options={"connector": "datagen"})), DynamicTableSource)
    assert isinstance(discovery.create_table_sink(build_ctx(options={"connector": "print"})), DynamicTableSink)


def test_missing_optional_dependency_becomes_an_actionable_message(monkeypatch):
    fake = {"broken": EntryPoint("broken", "psycopg_not_installed_here.factory:Factory", discovery.GROUP)}
    monkeypatch.setattr(discovery, "_entry_points", lambda: fake)
    discovery._load.cache_clear()
    try:
        with pytest.raises(ValidationError) as info:
            discovery.find_table_factory("broken")
        assert "the Python package 'psycopg_not_installed_here' is not installed" in str(info.value)
        assert "pip install psycopg_not_installed_here" in str(info.value)
        # A broken plug-in does not hide the others from listings.
        assert discovery.available_connectors() == []
    finally:
        discovery._load.cache_clear()


def test_known_extras_are_named_in_the_install_hint(monkeypatch):
    fake = {"pg": EntryPoint("pg", "psycopg.nope_module:Factory", discovery.GROUP)}
    monkeypatch.setattr(discovery, "_entry_points", lambda: fake)
    discovery._load.cache_clear()
    try:
        with pytest.raises(ValidationError, match=r"pip install 'planengine\[spark\]'"):
            discovery.load_factory("pg")
    finally:
        discovery._load.cache_clear()


def test_registered_factories_are_found_without_entry_points():
    class Custom(DynamicTableSinkFactory):
        factory_identifier = "custom-sink"

        def create_dynamic_table_sink(self, ctx):
            raise NotImplementedError

    discovery.register_factory(Custom())
    try:
        assert "custom-sink" in discovery.available_connectors()
        assert isinstance(discovery.find_table_factory("custom-sink"), Custom)
    finally:
        discovery.unregister_factory("custom-sink")


@pytest.mark.parametrize(("connector", "key", "mutable"), [
    ("jdbc", "password", True), ("jdbc", "username", True), ("jdbc", "lookup.cache", True),
    ("jdbc", "lookup.partial-cache.max-rows", True), ("jdbc", "sink.buffer-flush.interval", True),
    ("jdbc", "url", False), ("jdbc", "table-name", False),
    ("filesystem", "source.monitor-interval", True), ("filesystem", "sink.rolling-policy.file-size", True),
    ("filesystem", "path", False), ("filesystem", "format", False),
    ("kafka", "topic", False),
])
def test_mutable_options(connector, key, mutable):
    factory: Factory = discovery.find_table_factory(connector)
    assert is_mutable_option(factory, key) is mutable
