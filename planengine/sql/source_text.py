"""Files the user hands us (SQL scripts, plan files) as text, with a located error when they are not UTF-8.

Python's ``UnicodeDecodeError`` names a byte offset in a message meant for programmers; users need the
line and column of the bad byte and what to do (re-save the file as UTF-8), the same "what, where, how"
as any other input error.
"""

from __future__ import annotations

from pathlib import Path

from planengine.errors import SourceLocation, UserError


def decode_source(data: bytes, source: str, *, error: type[UserError] = UserError) -> str:
    """``data`` decoded as UTF-8 (a leading byte-order mark dropped), or ``error`` naming the bad byte.

    >>> decode_source("SELECT 'é'".encode(), "a.sql")
    "SELECT 'é'"
    >>> decode_source(b"SELECT 1;\\nSELECT '\\xff'", "a.sql")
    Traceback (most recent call last):
    ...
    planengine.errors.UserError: a.sql, line 2, column 9: file is not UTF-8 text: byte 0xff cannot be decoded
      hint: save a.sql as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 a.sql)
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as failure:
        offset = failure.start
        good = data[:offset].decode("utf-8-sig")
        line = good.count("\n") + 1
        column = len(good) - (good.rfind("\n") + 1) + 1
        bad = data[offset : max(failure.end, offset + 1)]
        raise error(f"file is not UTF-8 text: byte{'s' if len(bad) > 1 else ''} "
                    f"{' '.join(f'0x{b:02x}' for b in bad)} cannot be decoded",
                    location=SourceLocation(line=line, column=column, source=source),
                    hint=f"save {source} as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8 {source})") from None


def read_source(path: str | Path, *, error: type[UserError] = UserError) -> str:
    """The text of a file the user named; a missing, unreadable or non-UTF-8 file is a located user error."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise error(f"file {path} does not exist") from None
    except IsADirectoryError:
        raise error(f"{path} is a directory, not a file", hint="name the file itself") from None
    except OSError as failure:
        raise error(f"cannot read {path}: {failure.strerror}") from None
    return decode_source(data, str(path), error=error)
