"""Secret options and ``${env:NAME}`` references.

DESIGN §3: options whose key matches ``password|secret|token|credential`` (and, as in Flink,
``jaas.config``; ``planengine.config.secrets``) never reach a plan, a log or a
catalog file in plain text. A persistent catalog therefore stores only references such as
``'password' = '${env:PG_PASSWORD}'``, resolved from the process environment when the table is read (on
Kubernetes the variable comes from a Secret). References may appear in any option value
(``jdbc:postgresql://${env:PG_HOST}/shop``); for secret keys the whole value must be one reference.

>>> is_secret_key("properties.sasl.jaas.config"), is_secret_key("Password"), is_secret_key("url")
(True, True, False)
>>> resolve_value("${env:HOME_DIR}/x", {"HOME_DIR": "/h"}, on_missing=lambda var: None)
'/h/x'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from planengine.config.secrets import MASK, is_secret_key

ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def is_reference(value: str) -> bool:
    """Whether the whole value is one environment reference (the only form a secret may be stored in)."""
    return ENV_REFERENCE.fullmatch(value) is not None


def has_reference(value: str) -> bool:
    return ENV_REFERENCE.search(value) is not None


def resolve_value(value: str, environ: Mapping[str, str], on_missing: Callable[[str], None]) -> str:
    """Substitute every ``${env:NAME}``; ``on_missing(NAME)`` is called (and should raise) for unset ones."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            on_missing(name)
            return match.group(0)
        return environ[name]

    return ENV_REFERENCE.sub(substitute, value)


def mask_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options safe to print: secret values replaced by ``******`` unless they are references."""
    return {k: (MASK if is_secret_key(k) and not is_reference(v) else v) for k, v in options.items()}


def suggested_variable(table_name: str, key: str) -> str:
    """A conventional variable name for a secret option, used in advice: orders + password → ORDERS_PASSWORD."""
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{table_name}_{key}").strip("_").upper()


def restore_references(
    options: Mapping[str, str], previous: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, str]:
    """Put back the references a stored object was written with, where the resolved value is unchanged.

    A catalog hands out resolved values; without this, reading a table and writing it back (ALTER) would
    turn ``${env:PG_PASSWORD}`` into the plain password — or be refused for it.
    """
    restored = dict(options)
    for key, raw in previous.items():
        if key in restored and has_reference(raw):
            try:
                resolved = resolve_value(raw, environ, on_missing=_raise_missing)
            except KeyError:
                continue
            if resolved == restored[key]:
                restored[key] = raw
    return restored


def plain_secrets(options: Mapping[str, str]) -> list[str]:
    """Keys of secret options whose value is not a single environment reference."""
    return sorted(k for k, v in options.items() if is_secret_key(k) and not is_reference(v))


def _raise_missing(name: str) -> None:
    raise KeyError(name)
