"""User-facing catalog errors, built in one place so every catalog says "what, where, how to fix" alike.

Catalogs and the manager raise these instead of formatting strings inline, so the wording (and the
did-you-mean suggestions) stays consistent whether a table lives in memory, in files or is temporary.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from planengine.catalog.objects import ObjectIdentifier
from planengine.errors import CatalogError
from planengine.ir.types import quote_identifier

_LISTING_LIMIT = 20


def listing(names: Iterable[str]) -> str:
    """`a`, `b`, `c` (sorted, capped so a huge catalog does not flood the message), or "none"."""
    ordered = sorted(set(names))
    if not ordered:
        return "none"
    shown = ", ".join(quote_identifier(n) for n in ordered[:_LISTING_LIMIT])
    if len(ordered) > _LISTING_LIMIT:
        shown += f", … ({len(ordered) - _LISTING_LIMIT} more)"
    return shown


def suggestion(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to ``name``: an exact case-insensitive match first, then by similarity."""
    pool = sorted(set(candidates))
    for candidate in pool:
        if candidate.lower() == name.lower():
            return candidate
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return close[0] if close else None


def catalog_not_found(name: str, available: Iterable[str]) -> CatalogError:
    names = list(available)
    guess = suggestion(name, names)
    message = f"catalog {quote_identifier(name)} does not exist"
    if guess:
        message += f"; did you mean {quote_identifier(guess)}?"
    return CatalogError(
        message,
        hint=f"available catalogs: {listing(names)}; register one with CREATE CATALOG {name} WITH ('type' = …)",
    )


def database_not_found(catalog: str, database: str, available: Iterable[str]) -> CatalogError:
    names = list(available)
    guess = suggestion(database, names)
    message = f"database {quote_identifier(database)} does not exist in catalog {quote_identifier(catalog)}"
    if guess:
        message += f"; did you mean {quote_identifier(guess)}?"
    return CatalogError(message, hint=f"available: {listing(names)}; create it with CREATE DATABASE first")


def object_not_found(kind: str, identifier: ObjectIdentifier, candidates: Iterable[str]) -> CatalogError:
    """``kind`` is "table", "view", "table or view" or "function"."""
    names = list(candidates)
    guess = suggestion(identifier.name, names)
    message = f"{kind} {identifier} does not exist"
    if guess:
        message += f"; did you mean {quote_identifier(guess)}?"
    where = f"{quote_identifier(identifier.catalog)}.{quote_identifier(identifier.database)}"
    return CatalogError(
        message,
        hint=f"existing in {where}: {listing(names)}; check the name, or the current catalog and database (USE …)",
    )


def already_exists(kind: str, identifier: ObjectIdentifier) -> CatalogError:
    statement = kind.upper()
    return CatalogError(
        f"{kind} {identifier} already exists; use CREATE {statement} IF NOT EXISTS or DROP {statement} first"
    )


def wrong_kind(identifier: ObjectIdentifier, actual: str, expected: str, action: str) -> CatalogError:
    """E.g. DROP TABLE on a view, or creating a table where a view of that name exists."""
    return CatalogError(
        f"{identifier} is a {actual}, not a {expected}",
        hint=f"tables and views share one namespace; use {action} {actual.upper()} for a {actual}, "
        "or pick another name",
    )
