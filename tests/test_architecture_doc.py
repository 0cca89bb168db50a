"""docs/architecture.md draws the import-linter layers contracts; the pictures must not drift from them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def contract(name: str) -> dict:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (found,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(name)]
    return found


def contract_layers(name: str) -> list[list[str]]:
    return [[m.strip() for m in layer.split("|")] for layer in contract(name)["layers"]]


def picture(section: str) -> list[str]:
    """The lines of the first code block after ``## <section>``."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split(f"## {section}\n", 1)[1].split("```", 2)[1].strip().splitlines()


def drawn_layers() -> list[list[str]]:
    """The first column of the layer picture: ``planengine.a | planengine.b`` or ``planengine.a | .b``."""
    layers = []
    for line in picture("The layers"):
        names = re.match(r"\s*(planengine\S*(?:\s*\|\s*\S+)*)", line)
        assert names, f"docs/architecture.md: layer line without a package: {line!r}"
        parts = [p.strip() for p in names.group(1).split("|")]
        layers.append([p if p.startswith("planengine") else "planengine" + p for p in parts])
    return layers


def drawn_rooms() -> list[list[str]]:
    """The first column of the runtime's picture, ``runtime.a | runtime.b``, as names inside the container."""
    rooms = []
    for line in picture("The runtime's rooms"):
        names = re.match(r"\s*(runtime\.\w+(?:\s*\|\s*runtime\.\w+)*)", line)
        assert names, f"docs/architecture.md: room line without a room: {line!r}"
        rooms.append([p.strip().removeprefix("runtime.") for p in names.group(1).split("|")])
    return rooms


def test_the_layer_picture_is_the_import_linter_contract():
    assert drawn_layers() == contract_layers("Engine layers")


def test_the_runtime_picture_is_the_rooms_contract():
    assert contract("Runtime rooms")["containers"] == ["planengine.runtime"]
    assert drawn_rooms() == contract_layers("Runtime rooms")

