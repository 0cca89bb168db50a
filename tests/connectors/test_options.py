import pytest

from planengine.connectors.options import (
    MASK,
    bool_option,
    duration_option,
    enum_option,
    int_option,
    list_option,
    mask_secrets,
    memory_option,
    parse_duration_ms,
    parse_memory_bytes,
    string_option,
    validate_options,
)
from planengine.errors import OptionError


@pytest.mark.parametrize(("text", "ms"), [
    ("10 s", 10_000), ("5min", 300_000), ("1 h", 3_600_000), ("100ms", 100), ("250", 250), ("2 d", 172_800_000),
    ("3 minutes", 180_000), ("1 SECOND", 1000), ("0 ms", 0),
])
def test_durations_parse_to_milliseconds(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "ten", "1.5 s", "10 fortnights", "-1 s"])
def test_bad_durations_explain_the_syntax(text):
    with pytest.raises(ValueError, match="a duration such as"):
        parse_duration_ms(text)


@pytest.mark.parametrize(("text", "size"), [("64 mb", 64 << 20), ("1g", 1 << 30), ("512", 512), ("4 kb", 4096)])
def test_memory_sizes_parse_to_bytes(text, size):
    assert parse_memory_bytes(text) == size


class DemoFactory:
    factory_identifier = "demo"

    def required_options(self):
        return (string_option("path", description="where"), int_option("port"))

    def optional_options(self):
        return (
            duration_option("interval", default="1 min"),
            enum_option("mode", ("SQL", "ISO-8601"), default="SQL"),
            bool_option("verbose", default=False),
            list_option("fields"),
            memory_option("buffer", default="1 mb"),
            string_option("new-name", fallback_keys=("old-name",)),
            string_option("password"),
        )


def test_one_error_reports_unknown_missing_and_bad_values_together():
    options = {"pth": "/x", "interval": "soon", "mode": "xml", "verbose": "yes", "port": "80"}
    with pytest.raises(OptionError) as info:
        validate_options(DemoFactory(), options, identifier="`c`.`d`.`t`")
    message = str(info.value)
    assert message.startswith("invalid options for table `c`.`d`.`t` (connector 'demo'):\n")
    assert "  - unknown option 'pth': did you mean 'path'?" in message
    assert "  - missing required option 'path' (where)" in message
    assert "  - option 'interval' = 'soon' is not valid: expected a duration such as" in message
    assert "  - option 'mode' = 'xml' is not valid: expected one of 'SQL', 'ISO-8601'" in message
    assert "  - option 'verbose' = 'yes' is not valid: expected 'true' or 'false'" in message
    assert "supported options: buffer, fields, interval, mode, new-name, password, path, port, verbose" in message


def test_values_are_typed_and_defaults_filled():
    values = validate_options(DemoFactory(), {"path": "/x", "port": "80", "mode": "iso-8601", "fields": "a;b",
                                              "old-name": "legacy"})
    assert values == {"path": "/x", "port": 80, "interval": 60_000, "mode": "ISO-8601", "verbose": False,
                      "fields": ["a", "b"], "buffer": 1 << 20, "new-name": "legacy"}


def test_passthrough_prefixes_and_the_connector_key_are_accepted():
    values = validate_options(DemoFactory(), {"connector": "demo", "path": "/x", "port": "1",
                                              "properties.acks": "all"}, prefixes_allowed=("properties.",))
    assert values.with_prefix("properties.") == {"acks": "all"}


def test_bad_sensitive_values_are_not_echoed():
    class Strict(DemoFactory):
        def optional_options(self):
            return (int_option("token-count"),)

    with pytest.raises(OptionError) as info:
        validate_options(Strict(), {"path": "/x", "port": "1", "token-count": "s3cr3t"})
    assert "s3cr3t" not in str(info.value) and MASK in str(info.value)


def test_mask_secrets_masks_keys_matching_the_design_pattern():
    options = {"password": "p", "properties.sasl.token": "t", "client-secret": "s", "aws.credentials": "c",
               "url": "jdbc:postgresql://h/db", "username": "u"}
    assert mask_secrets(options) == {"password": MASK, "properties.sasl.token": MASK, "client-secret": MASK,
                                     "aws.credentials": MASK, "url": "jdbc:postgresql://h/db", "username": "u"}
    assert string_option("db.Password").sensitive and not string_option("username").sensitive
