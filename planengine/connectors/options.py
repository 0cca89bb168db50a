"""Typed connector and format options, and the one helper that validates a table's ``WITH (...)`` map.

Options arrive as strings; factories declare ``ConfigOption``s so that parsing, defaults, documentation and
error messages all come from one definition (``docs/connectors.md`` is generated from them). Validation
collects *every* problem (unknown keys with a "did you mean", missing required keys, unparsable values)
into a single ``OptionError`` so a user fixes a table definition in one round trip rather than one error
per run.

>>> parse_duration_ms("10 s"), parse_duration_ms("5min"), parse_duration_ms("1 h"), parse_duration_ms("100ms")
(10000, 300000, 3600000, 100)
>>> parse_memory_bytes("4 mb")
4194304
>>> mask_secrets({"password": "hunter2", "url": "jdbc:postgresql://db/x"})
{'password': '******', 'url': 'jdbc:postgresql://db/x'}
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from planengine.config.secrets import MASK, SECRET_KEY, is_secret_key
from planengine.config.values import (  # noqa: F401 - the value types are part of this module's API
    BOOL,
    DURATION,
    FLOAT,
    INT,
    MEMORY,
    STRING,
    OptionType,
    enum_type,
    format_duration_ms,
    list_type,
    non_negative,
    parse_duration_ms,
    parse_memory_bytes,
    positive,
)
from planengine.errors import OptionError

T = TypeVar("T")

#: DESIGN §3: option keys matching this are never written into a plan or a log (one rule: config.secrets).
SENSITIVE_KEY_PATTERN = SECRET_KEY


def is_sensitive_key(key: str) -> bool:
    return is_secret_key(key)


def mask_secrets(options: Mapping[str, str], extra_sensitive_keys: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``options`` with sensitive values replaced by ``******`` (for plans, logs and errors)."""
    extra = set(extra_sensitive_keys)
    return {k: (MASK if is_sensitive_key(k) or k in extra else v) for k, v in options.items()}


# --- options ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One typed option. ``default_text`` is how the default reads in docs (``'1 min'``, not 60000)."""

    key: str
    type: OptionType[T]
    default: T | None = None
    description: str = ""
    fallback_keys: tuple[str, ...] = ()
    default_text: str | None = None
    explicitly_sensitive: bool = False

    @property
    def sensitive(self) -> bool:
        return self.explicitly_sensitive or is_sensitive_key(self.key)

    @property
    def has_default(self) -> bool:
        return self.default is not None

    def parse(self, raw: str) -> T:
        return self.type.parse(raw)

    def documented_default(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default is None:
            return "(none)"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, list):
            return ";".join(str(v) for v in self.default)
        return str(self.default)

    def with_prefix(self, prefix: str) -> ConfigOption[T]:
        """The same option under a namespace (``json.`` + ``ignore-parse-errors``)."""
        return ConfigOption(prefix + self.key, self.type, self.default, self.description,
                            tuple(prefix + k for k in self.fallback_keys), self.default_text,
                            self.explicitly_sensitive)


def option(key: str, type_: OptionType[T], *, default: T | None = None, description: str = "",
           fallback_keys: Sequence[str] = (), sensitive: bool = False) -> ConfigOption[T]:
    return ConfigOption(key, type_, default, description, tuple(fallback_keys), None, sensitive)


def string_option(key: str, *, default: str | None = None, description: str = "",
                  fallback_keys: Sequence[str] = (), sensitive: bool = False) -> ConfigOption[str]:
    return option(key, STRING, default=default, description=description, fallback_keys=fallback_keys,
                  sensitive=sensitive)


def int_option(key: str, *, default: int | None = None, description: str = "",
               type_: OptionType[int] = INT) -> ConfigOption[int]:
    return option(key, type_, default=default, description=description)


def float_option(key: str, *, default: float | None = None, description: str = "") -> ConfigOption[float]:
    return option(key, FLOAT, default=default, description=description)


def bool_option(key: str, *, default: bool | None = None, description: str = "") -> ConfigOption[bool]:
    return option(key, BOOL, default=default, description=description)


def duration_option(key: str, *, default: str | None = None, description: str = "") -> ConfigOption[int]:
    """Parsed to milliseconds; ``default`` is written the way users write it (``'1 min'``)."""
    return ConfigOption(key, DURATION, None if default is None else parse_duration_ms(default), description,
                        (), default)


def memory_option(key: str, *, default: str | None = None, description: str = "") -> ConfigOption[int]:
    """Parsed to bytes; ``default`` is written the way users write it (``'128 mb'``)."""
    return ConfigOption(key, MEMORY, None if default is None else parse_memory_bytes(default), description,
                        (), default)


def enum_option(key: str, values: Sequence[str], *, default: str | None = None,
                description: str = "") -> ConfigOption[str]:
    return option(key, enum_type(*values), default=default, description=description)


def list_option(key: str, element: OptionType[Any] = STRING, *, default: list[Any] | None = None,
                description: str = "") -> ConfigOption[list[Any]]:
    return option(key, list_type(element), default=default, description=description)


# --- validation -------------------------------------------------------------------------------------
class OptionDeclaring(Protocol):
    """What validation needs from a factory (connector or format)."""

    factory_identifier: str

    def required_options(self) -> Sequence[ConfigOption[Any]]: ...

    def optional_options(self) -> Sequence[ConfigOption[Any]]: ...


@dataclass(frozen=True)
class OptionGroup:
    """Options that live under a namespace, e.g. a format's options under ``json.`` or ``key.json.``."""

    prefix: str
    required: Sequence[ConfigOption[Any]] = ()
    optional: Sequence[ConfigOption[Any]] = ()

    @staticmethod
    def of(factory: OptionDeclaring, prefix: str) -> OptionGroup:
        return OptionGroup(prefix, tuple(factory.required_options()), tuple(factory.optional_options()))


class ValidatedOptions(dict[str, Any]):
    """Typed option values by full key: given values parsed, defaults filled in, pass-through keys raw."""

    def value(self, opt: ConfigOption[T], prefix: str = "") -> T | None:
        return self.get(prefix + opt.key)

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Values under ``prefix`` with the prefix stripped (``properties.`` → Kafka client properties)."""
        return {k[len(prefix):]: v for k, v in sorted(self.items()) if k.startswith(prefix)}


#: Keys every table may carry and that the framework consumes before a factory sees the options.
FRAMEWORK_KEYS = ("connector",)


@dataclass
class OptionProblems:
    """Collects problems so a single ``OptionError`` can report them all."""

    unknown: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.unknown or self.missing or self.invalid or self.other)

    def lines(self) -> list[str]:
        return [*self.unknown, *self.missing, *self.invalid, *self.other]

    def raise_if_any(self, subject: str, hint: str | None = None) -> None:
        if not self:
            return
        body = "\n".join(f"  - {line}" for line in self.lines())
        raise OptionError(f"invalid options for {subject}:\n{body}", hint=hint)


def describe_subject(factory: OptionDeclaring, identifier: object | None, what: str = "connector") -> str:
    name = f"{what} '{factory.factory_identifier}'"
    return f"table {identifier} ({name})" if identifier is not None else name


def validate_options(
    factory: OptionDeclaring,
    options: Mapping[str, str],
    *,
    prefixes_allowed: Iterable[str] = (),
    nested: Iterable[OptionGroup] = (),
    extra_options: Iterable[ConfigOption[Any]] = (),
    identifier: object | None = None,
    unknown_key_hint: Callable[[str], str | None] | None = None,
    problems: OptionProblems | None = None,
    raise_errors: bool = True,
) -> ValidatedOptions:
    """Check ``options`` against ``factory``'s declared options and return typed values.

    ``prefixes_allowed`` are pass-through namespaces (``properties.`` for Kafka) kept as raw strings.
    ``nested`` adds namespaced option groups (formats) so their problems land in the same error.
    ``extra_options`` are options derived from the table itself (datagen's ``fields.<column>.kind``).
    ``unknown_key_hint`` may explain an unknown key better than spelling distance can (say, which column).
    ``problems`` lets a factory add its own findings (cross-option rules) to the same report; with
    ``raise_errors=False`` nothing is raised and the caller raises once it has added its own.
    """
    problems = problems if problems is not None else OptionProblems()
    groups = [OptionGroup("", tuple(factory.required_options()),
                          (*factory.optional_options(), *extra_options)), *nested]
    prefixes = tuple(prefixes_allowed)

    declared: dict[str, tuple[ConfigOption[Any], bool]] = {}  # full key -> (option, required)
    accepted_keys: set[str] = set(FRAMEWORK_KEYS)
    for group in groups:
        for required, opts in ((True, group.required), (False, group.optional)):
            for opt in opts:
                full = opt.with_prefix(group.prefix)
                declared[full.key] = (full, required)
                accepted_keys.add(full.key)
                accepted_keys.update(full.fallback_keys)

    values = ValidatedOptions()
    for key in sorted(options):
        if key in accepted_keys:
            continue
        if any(key.startswith(p) for p in prefixes):
            values[key] = options[key]
            continue
        hint = unknown_key_hint(key) if unknown_key_hint else None
        if hint is None:
            close = difflib.get_close_matches(key, sorted(declared), n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else None
        problems.unknown.append(f"unknown option '{key}'" + (f": {hint}" if hint else ""))

    for key, (opt, required) in declared.items():
        present = next((k for k in (key, *opt.fallback_keys) if k in options), None)
        if present is None:
            if required:
                what = f" ({opt.description})" if opt.description else ""
                problems.missing.append(f"missing required option '{key}'{what}")
            elif opt.has_default:
                values[key] = opt.default
            continue
        raw = options[present]
        try:
            values[key] = opt.parse(raw)
        except ValueError as e:
            shown = MASK if opt.sensitive else raw
            problems.invalid.append(f"option '{present}' = '{shown}' is not valid: expected {e}")

    if raise_errors:
        supported = sorted(k for k in declared) + [p + "*" for p in prefixes]
        problems.raise_if_any(describe_subject(factory, identifier),
                              hint="supported options: " + ", ".join(supported))
    return values
