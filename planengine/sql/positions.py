"""Offsets to 1-based line/column and caret excerpts, shared by the splitter and error reporting.

Token offsets are relative to the whole script (the script is tokenized once), so every position a user
sees is computed here from the same source text.
"""

from __future__ import annotations

from planengine.config.secrets import mask_secret_literals


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of character ``offset`` in ``text``.

    >>> line_and_column("SELECT 1;\\nSELECT x", 17)
    (2, 8)
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start + 1


def caret_excerpt(text: str, line: int, column: int, width: int = 100) -> str:
    """The source line at ``line`` with a caret under ``column``, trimmed to ``width`` characters; values of
    secret options (``'password' = '…'``) are masked.

    >>> print(caret_excerpt("SELECT a\\nFRM t", 2, 1))
      FRM t
      ^
    """
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    source, column = mask_secret_literals(source, column)  # an excerpt must not print a password in clear
    start = 0 if len(source) <= width else max(0, column - 1 - width // 2)
    snippet = source[start : start + width].rstrip("\r")
    return f"  {snippet}\n  {' ' * (column - 1 - start)}^"
