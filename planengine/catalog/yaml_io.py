"""Reading and writing catalog YAML: line numbers on the way in, a stable human style on the way out.

Catalog files are edited by people (and reviewed in diffs of ConfigMaps), so a mistake must be reported
with the file and line, and a write must always produce the same text for the same object. PyYAML keeps
neither line numbers nor duplicate keys by default; the small loader here records the line of every
mapping and of each of its keys, and refuses duplicate keys (which YAML would otherwise let silently win).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from planengine.errors import CatalogError, SourceLocation


class LineMapping(dict):
    """A mapping from a YAML file that remembers where it and each of its keys were written."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return getattr(self, "key_lines", {}).get(key, self.line)


class FlowList(list):
    """A short list of names written inline (``primaryKey: [id, region]``), which reads best."""


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Any:
    mapping = LineMapping()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    yield mapping
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in mapping:
            raise yaml.MarkedYAMLError(
                "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str, source: Path | str) -> Any:
    """Parse one YAML document; syntax errors become CatalogErrors naming the file, line and column."""
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "malformed YAML"
        raise CatalogError(
            f"malformed YAML: {problem}",
            location=SourceLocation(
                source=str(source),
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            ),
            hint="fix the YAML syntax (indentation, quoting, ':' after keys); see docs/catalogs.md for examples",
        ) from None
    except yaml.YAMLError as e:
        raise CatalogError(f"malformed YAML: {e}", location=SourceLocation(source=str(source))) from None


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent list items under their key (`columns:\n  - name: …`), as kubectl and most humans write it.
        super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    tag = "tag:yaml.org,2002:str"
    if "\n" in value:
        return dumper.represent_scalar(tag, value, style="|")
    analysis = dumper.analyze_scalar(value)
    needs_quotes = not (analysis.allow_flow_plain and analysis.allow_block_plain)
    if needs_quotes and "'" in value and '"' not in value and "\\" not in value:
        # SQL text is full of single quotes: "`ts` - INTERVAL '5' SECOND" beats '`ts` - INTERVAL ''5'' SECOND'.
        return dumper.represent_scalar(tag, value, style='"')
    return dumper.represent_scalar(tag, value)


def _represent_flow_list(dumper: yaml.SafeDumper, value: FlowList) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


def _represent_line_mapping(dumper: yaml.SafeDumper, value: LineMapping) -> yaml.MappingNode:
    return dumper.represent_dict(value)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(FlowList, _represent_flow_list)
_Dumper.add_representer(LineMapping, _represent_line_mapping)


def dump_yaml(document: dict[str, Any]) -> str:
    """Block style, keys in the order given (callers order them), no line wrapping, UTF-8 kept."""
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
