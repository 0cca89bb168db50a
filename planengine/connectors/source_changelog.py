"""The ``'changelog-mode'`` table option: how a source narrows or declares the row kinds it produces.

Only formats that carry row kinds (debezium-json, changelog-json) can produce anything but inserts, so the
option can narrow their changelog (``'I,UB,UA,D'``, ``'I'``) or declare it an *upsert* changelog
(``'I,UA,D'``): rows keyed by the table's primary key, which the planner normalises (DESIGN §4). The value
is parsed with the other options (bad letters are reported with them); the checks that need the format
and the schema run here.
"""

from __future__ import annotations

from planengine.catalog.objects import ObjectIdentifier
from planengine.connectors.base import DecodingFormat
from planengine.connectors.options import ConfigOption, OptionType, option
from planengine.errors import OptionError, ValidationError
from planengine.ir.changelog import ChangelogMode
from planengine.ir.schema import ResolvedSchema


def _parse_mode(text: str) -> ChangelogMode:
    try:
        return ChangelogMode.parse(text)
    except ValidationError as e:
        raise ValueError(f"a changelog mode such as 'I', 'I,UA,D' or 'I,UB,UA,D' ({e.message})") from None


CHANGELOG_MODE_TYPE: OptionType[ChangelogMode] = OptionType("ChangelogMode", _parse_mode)

CHANGELOG_MODE: ConfigOption[ChangelogMode] = option(
    "changelog-mode", CHANGELOG_MODE_TYPE,
    description="Row kinds the source produces, as letters I, UB, UA, D (e.g. 'I,UA,D' = upsert source keyed "
    "by the primary key). Only for formats that carry row kinds; defaults to the format's changelog mode.",
)


def resolve_source_changelog_mode(
    identifier: ObjectIdentifier, schema: ResolvedSchema, fmt: DecodingFormat, declared: ChangelogMode | None
) -> ChangelogMode:
    """The source's changelog mode: the format's, or the declared one after checking it is possible."""
    produced = fmt.changelog_mode()
    if declared is None:
        return produced
    if declared == produced:
        pass
    elif produced.contains_only_inserts():
        raise OptionError(
            f"table {identifier}: 'changelog-mode' = '{declared}' needs a format that carries row kinds, but "
            f"format '{fmt.identifier}' is insert-only",
            hint="use 'debezium-json' or 'changelog-json', or remove 'changelog-mode'",
        )
    elif not produced.includes(declared):
        raise OptionError(
            f"table {identifier}: 'changelog-mode' = '{declared}' asks for row kinds that format "
            f"'{fmt.identifier}' never produces (it produces {produced})",
            hint=f"declare a subset of {produced}",
        )
    if declared.is_upsert() and schema.primary_key is None:
        raise OptionError(
            f"table {identifier}: 'changelog-mode' = '{declared}' declares an upsert source keyed by its "
            "primary key, but the table has no PRIMARY KEY",
            hint="add PRIMARY KEY (…) NOT ENFORCED to the table, or declare 'I,UB,UA,D' (a full changelog)",
        )
    return declared
