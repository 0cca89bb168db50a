from planengine.connectors.docs import DOC_PATH, render_connectors_markdown


def test_docs_connectors_md_is_generated_from_the_option_definitions():
    assert DOC_PATH.read_text(encoding="utf-8") == render_connectors_markdown(), (
        "docs/connectors.md is out of date: run `python -m planengine.connectors.docs --write`")


def test_docs_cover_every_connector_and_format():
    text = render_connectors_markdown()
    for name in ("blackhole", "datagen", "filesystem", "jdbc", "kafka", "print", "upsert-kafka",
                 "changelog-json", "csv", "debezium-json", "json", "parquet"):
        assert f"`{name}`" in text
    assert "| `json.ignore-parse-errors` |" in text
    assert "| `password` |  |  | String | yes | Password (sensitive: never written into plans or logs). Sensitive. |" \
        in text
