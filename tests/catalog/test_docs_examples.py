"""The examples in docs/catalogs.md are real: the ConfigMap and the table file load as documented."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from planengine.catalog.file_catalog import FileCatalog
from planengine.catalog.manager import CatalogManager

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalogs.md"


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_configmap_example_loads_as_a_read_only_flat_catalog(tmp_path):
    configmap = next(yaml.safe_load(b) for b in yaml_blocks() if "kind: ConfigMap" in b)
    for key, text in configmap["data"].items():
        (tmp_path / key).write_text(text)
    manager = CatalogManager()
    manager.create_catalog_from_options("shared", {"type": "file", "path": str(tmp_path), "read-only": "true"})
    manager.use_catalog("shared")
    assert manager.list_tables() == ["clicks", "clicks_per_minute"]
    clicks = manager.get_table(("clicks",)).object
    assert str(clicks.schema.column("click_time").type) == "TIMESTAMP(3) *ROWTIME*"
    assert clicks.options_dict["rows-per-second"] == "20"


def test_table_file_example_loads(tmp_path):
    block = next(b for b in yaml_blocks() if b.startswith("kind: table"))
    (tmp_path / "default").mkdir()
    (tmp_path / "default" / "tables").mkdir()
    (tmp_path / "default" / "tables" / "orders.yaml").write_text(block)
    table = FileCatalog(tmp_path, environ={"KAFKA_BOOTSTRAP": "kafka:9092"}).get_table(("default", "orders"))
    assert table.schema.primary_key.columns == ("id", "dt")
    assert table.partition_keys == ("dt",)
    assert table.options_dict["properties.bootstrap.servers"] == "kafka:9092"
    assert table.schema.column("kafka_offset").virtual
