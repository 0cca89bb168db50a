"""docs/architecture.md draws the import-linter layers contract; the picture must not drift from it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def contract_layers() -> list[list[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [[m.strip() for m in layer.split("|")] for layer in contract["layers"]]


def drawn_layers() -> list[list[str]]:
    """The first column of the layer picture: ``planengine.a | planengine.b`` or ``planengine.a | .b``."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## The layers", 1)[1].split("```", 2)[1]
    layers = []
    for line in block.strip().splitlines():
        names = re.match(r"\s*(planengine\S*(?:\s*\|\s*\S+)*)", line)
        assert names, f"docs/architecture.md: layer line without a package: {line!r}"
        parts = [p.strip() for p in names.group(1).split("|")]
        layers.append([p if p.startswith("planengine") else "planengine" + p for p in parts])
    return layers


def test_the_layer_picture_is_the_import_linter_contract():
    assert drawn_layers() == contract_layers()
