"""What the prompt prints besides results: ``[INFO]``, ``[WARNING]`` and ``[ERROR]`` lines, as Flink's SQL client does.

Two things used to leak through in other shapes. Warnings the engine logs while a statement runs (a ``SET`` key
without effect here, say) came out as the CLI's log lines, ``2026-12-07 10:00:00,123 WARNING planengine: …``,
between the ``[INFO]`` lines; ``statement_log`` turns them into ``[WARNING] …`` lines in the prompt's output for the
duration of one statement and leaves everything else (INFO records under ``-v``, records after the statement) to the
handlers that were there. And errors were located in the text typed at one prompt, so every one said
``statement 1``; ``error_line`` numbers statements within the session and keeps line and column within the
statement, which is how the user sees it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from planengine.errors import PlanEngineError, SourceLocation


def info_line(message: str) -> str:
    """Every line of ``message`` tagged, so a line that follows another (a resumed job, then its submission) does
    not read as program output.

    >>> print(info_line("resuming the job in /j from snapshot s-1\\nSubmitted job r-2: plan 8a68"))
    [INFO] resuming the job in /j from snapshot s-1
    [INFO] Submitted job r-2: plan 8a68
    """
    return "\n".join(f"[INFO] {line}" for line in message.splitlines() or [""])


def error_line(error: PlanEngineError, statement: int) -> str:
    """``[ERROR] statement N, line L, column C: what; hint``, N counted in the session.

    ``error`` was raised while the statement's own text was parsed and run alone, so its line and column are
    already within the statement (1, 1 is its first word) and only the number changes. A location in another
    text (a file the statement read, ``source`` set) is left as it is.

    >>> from planengine.errors import ValidationError
    >>> error_line(ValidationError("column 'x' not found", location=SourceLocation(1, 2, 8)), 7)
    "[ERROR] statement 7, line 2, column 8: column 'x' not found"
    >>> error_line(ValidationError("no plan"), 3)
    '[ERROR] statement 3: no plan'
    """
    location = error.location or SourceLocation()
    if location.source is None:
        error.location = dataclasses.replace(location, statement=statement)
    return f"[ERROR] {error.render()}"


class _WarningLines(logging.Handler):
    """Warnings and errors become ``[WARNING]`` / ``[ERROR]`` lines; other records go where they went before."""

    def __init__(self, out: TextIO, others: list[logging.Handler]):
        super().__init__()
        self.out = out
        self.others = others

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.WARNING:
            for handler in self.others:
                if record.levelno >= handler.level:
                    handler.handle(record)
            return
        tag = "ERROR" if record.levelno >= logging.ERROR else "WARNING"
        try:
            print(f"[{tag}] {record.getMessage()}", file=self.out, flush=True)
        except Exception:  # logging must never raise into the statement; the standard handlers behave alike
            self.handleError(record)


@contextmanager
def statement_log(out: TextIO) -> Iterator[None]:
    """While one statement runs, the root logger's records of WARNING and above print as message lines on ``out``."""
    root = logging.getLogger()
    others = list(root.handlers)
    lines = _WarningLines(out, others)
    root.handlers = [lines]
    try:
        yield
    finally:
        root.handlers = others
