"""What every built-in format shares: a configured-format value and a factory base.

A configured format is plain data (identifier, typed options, changelog modes), so a source or sink can
hand it to the runtime unchanged and the planner can compare or describe it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from planengine.connectors.base import DecodingFormat, EncodingFormat
from planengine.connectors.factories import DecodingFormatFactory, EncodingFormatFactory, FactoryContext
from planengine.ir.changelog import INSERT_ONLY, ChangelogMode


@dataclass(frozen=True)
class ConfiguredFormat(DecodingFormat, EncodingFormat):
    identifier: str
    options: Mapping[str, Any] = field(default_factory=dict)
    mode: ChangelogMode = INSERT_ONLY

    def changelog_mode(self) -> ChangelogMode:
        return self.mode

    def summary(self) -> str:
        return self.identifier


class BuiltinFormatFactory(DecodingFormatFactory, EncodingFormatFactory):
    """A format that both reads and writes, with fixed changelog modes."""

    decoding_mode: ClassVar[ChangelogMode] = INSERT_ONLY
    encoding_mode: ClassVar[ChangelogMode] = INSERT_ONLY

    def check_schema(self, ctx: FactoryContext, options: Mapping[str, Any]) -> None:
        """Reject tables this format cannot represent; raise ``OptionError``/``ValidationError``."""

    def create_decoding_format(self, ctx: FactoryContext, options: Mapping[str, Any]) -> ConfiguredFormat:
        self.check_schema(ctx, options)
        return ConfiguredFormat(self.factory_identifier, dict(options), self.decoding_mode)

    def create_encoding_format(self, ctx: FactoryContext, options: Mapping[str, Any]) -> ConfiguredFormat:
        self.check_schema(ctx, options)
        return ConfiguredFormat(self.factory_identifier, dict(options), self.encoding_mode)
