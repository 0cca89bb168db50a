"""Which option keys hold secrets, in one place for plans, logs, catalogs and echoed source lines.

DESIGN §3 "Catalog objects": values of keys matching ``password|secret|token|credential`` never reach a
plan or a log in clear. Flink also masks keys holding ``jaas.config`` (Kafka's
``properties.sasl.jaas.config`` carries a user name and password), so do we.

>>> is_secret_key("properties.sasl.jaas.config"), is_secret_key("Password"), is_secret_key("url")
(True, True, False)
"""

from __future__ import annotations

import re

SECRET_KEY = re.compile(r"password|secret|token|credential|jaas\.config", re.IGNORECASE)
MASK = "******"

# 'key' = 'value' in SQL text (a WITH clause, a SET, an OPTIONS hint); the value may run to the end of the line
# when the error being reported is that very string being unterminated.
_OPTION_PAIR = re.compile(r"'((?:[^']|'')*)'(\s*=\s*)'((?:[^']|'')*)('|$)")


def is_secret_key(key: str) -> bool:
    return SECRET_KEY.search(key) is not None


def mask_secret_literals(line: str, column: int = 0) -> tuple[str, int]:
    """``line`` with the values of secret ``'key' = 'value'`` pairs masked, and ``column`` (1-based) moved
    to the same spot of the masked line, so an error excerpt can show the line without leaking a password.

    >>> mask_secret_literals("WITH ('password' = 'hunter2', 'x' = 'y') oops", 42)
    ("WITH ('password' = '******', 'x' = 'y') oops", 41)
    """
    shift = 0

    def mask(match: re.Match[str]) -> str:
        nonlocal shift
        key, equals, value, close = match.groups()
        if not is_secret_key(key) or value == MASK:
            return match.group(0)
        if column and match.end(3) < column:
            shift += len(MASK) - len(value)
        return f"'{key}'{equals}'{MASK}{close}"

    masked = _OPTION_PAIR.sub(mask, line)
    return masked, max(1, column + shift) if column else column
