import pytest

from planengine.connectors.base import SinkContext
from planengine.connectors.discovery import create_table_sink
from planengine.errors import OptionError
from planengine.ir.changelog import ALL, INSERT_ONLY, UPSERT
from tests.connectors.builders import build_ctx


@pytest.mark.parametrize("connector", ["print", "blackhole"])
@pytest.mark.parametrize("requested", [INSERT_ONLY, UPSERT, ALL])
def test_debug_sinks_accept_any_changelog(connector, requested):
    assert create_table_sink(build_ctx(options={"connector": connector})).changelog_mode(requested) == requested


def test_print_options():
    sink = create_table_sink(build_ctx(options={"connector": "print", "print-identifier": "out",
                                                "standard-error": "true"}))
    assert sink.print_identifier == "out" and sink.standard_error
    assert sink.as_summary_string() == "print(stderr, print-identifier=out)"
    with pytest.raises(OptionError, match="unknown option 'print-identifer': did you mean 'print-identifier'"):
        create_table_sink(build_ctx(options={"connector": "print", "print-identifer": "x"}))


def test_blackhole_has_no_options_and_names_its_spark_side():
    with pytest.raises(OptionError, match="unknown option 'path'"):
        create_table_sink(build_ctx(options={"connector": "blackhole", "path": "/x"}))
    provider = create_table_sink(build_ctx(options={"connector": "blackhole"})).sink_runtime_provider(SinkContext())
    # The plan-time provider is data; Spark's noop sink is planengine/runtime/connectors/blackhole.py.
    assert provider.connector == "blackhole"
