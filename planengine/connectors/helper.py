"""``TableFactoryHelper``: the one place a connector factory validates its options and finds its formats.

Connectors call ``validate`` once, naming which options select formats (``format``, ``key.format``,
``value.format``); the helper resolves those formats, validates their namespaced options
(``json.…``, ``value.json.…``) together with the connector's own, lets the connector add cross-option
checks, and raises a single ``OptionError`` listing everything wrong with the table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from planengine.connectors.base import DecodingFormat, EncodingFormat
from planengine.connectors.discovery import find_format_factory
from planengine.connectors.factories import (
    DecodingFormatFactory,
    EncodingFormatFactory,
    Factory,
    FactoryContext,
    FormatFactory,
)
from planengine.connectors.options import (
    ConfigOption,
    OptionGroup,
    OptionProblems,
    ValidatedOptions,
    describe_subject,
    validate_options,
)
from planengine.errors import OptionError

Check = Callable[[ValidatedOptions, OptionProblems], None]


def format_prefix(format_key: str, format_name: str) -> str:
    """``'format'`` → ``'json.'``; ``'value.format'`` → ``'value.json.'`` (Flink's namespacing)."""
    scope = format_key[: -len("format")]
    return f"{scope}{format_name}."


class TableFactoryHelper:
    def __init__(self, factory: Factory, ctx: FactoryContext):
        self.factory = factory
        self.ctx = ctx
        self.options: ValidatedOptions | None = None
        self._formats: dict[str, tuple[FormatFactory, str]] = {}  # format key -> (factory, prefix)

    def validate(
        self,
        *,
        format_keys: Sequence[str] = (),
        prefixes_allowed: Iterable[str] = (),
        extra_options: Iterable[ConfigOption[Any]] = (),
        unknown_key_hint: Callable[[str], str | None] | None = None,
        checks: Iterable[Check] = (),
    ) -> ValidatedOptions:
        raw = self.ctx.options
        problems = OptionProblems()
        nested: list[OptionGroup] = []
        for key in format_keys:
            name = raw.get(key)
            if not name:
                continue
            try:
                fmt = find_format_factory(name)
            except OptionError as e:
                problems.invalid.append(f"option '{key}' = '{name}' is not valid: {e.message} ({e.hint})")
                continue
            prefix = format_prefix(key, name)
            self._formats[key] = (fmt, prefix)
            nested.append(OptionGroup.of(fmt, prefix))
        values = validate_options(
            self.factory, raw, prefixes_allowed=prefixes_allowed, nested=nested, extra_options=extra_options,
            identifier=self.ctx.identifier, unknown_key_hint=unknown_key_hint, problems=problems,
            raise_errors=False,
        )
        if not problems.invalid and not problems.missing:
            for check in checks:  # cross-option rules only make sense once each value parsed
                check(values, problems)
        problems.raise_if_any(describe_subject(self.factory, self.ctx.identifier),
                              hint=self._supported_hint(nested, prefixes_allowed, extra_options))
        self.options = values
        return values

    def _supported_hint(self, nested: list[OptionGroup], prefixes: Iterable[str],
                        extra: Iterable[ConfigOption[Any]]) -> str:
        keys = [o.key for o in (*self.factory.required_options(), *self.factory.optional_options(), *extra)]
        for group in nested:
            keys += [group.prefix + o.key for o in (*group.required, *group.optional)]
        keys += [p + "*" for p in prefixes]
        return "supported options: " + ", ".join(sorted(dict.fromkeys(keys)))

    def _format_options(self, key: str) -> tuple[FormatFactory, dict[str, Any]] | None:
        if self.options is None:
            raise AssertionError("call validate() before asking for formats")
        if key not in self._formats:
            return None
        factory, prefix = self._formats[key]
        return factory, self.options.with_prefix(prefix)

    def decoding_format(self, key: str = "format") -> DecodingFormat | None:
        found = self._format_options(key)
        if found is None:
            return None
        factory, options = found
        if not isinstance(factory, DecodingFormatFactory):
            raise OptionError(f"table {self.ctx.identifier}: format '{factory.factory_identifier}' "
                              f"(option '{key}') cannot be read")
        return factory.create_decoding_format(self.ctx, options)

    def encoding_format(self, key: str = "format") -> EncodingFormat | None:
        found = self._format_options(key)
        if found is None:
            return None
        factory, options = found
        if not isinstance(factory, EncodingFormatFactory):
            raise OptionError(f"table {self.ctx.identifier}: format '{factory.factory_identifier}' "
                              f"(option '{key}') cannot be written")
        return factory.create_encoding_format(self.ctx, options)
