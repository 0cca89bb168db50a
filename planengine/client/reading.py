"""When typed text is a statement to run: the one rule for the interactive prompt and the line reader.

The prompt (``planengine.client.prompt``) asks this on every Enter, to either run the buffer or open a new line;
``LineReader`` asks it after every line it is handed. Sharing the rule is what keeps the two from disagreeing
about, say, a ``;`` inside a string or a statement set that has not reached its ``END;`` yet.

>>> [is_complete(t) for t in ("SELECT 1", "SELECT 1;", "SELECT ';'", "help", "", "EXECUTE STATEMENT SET BEGIN;")]
[False, True, False, True, True, False]
"""

from __future__ import annotations

from collections.abc import Callable

from planengine.sql import ends_statement

PROMPT = "planengine> "
CONTINUATION = "         > "
#: Words the client answers itself; a ``;`` after them is optional, as in Flink's client.
LEAVE = ("QUIT", "EXIT")
HELP = "HELP"


def command_word(text: str) -> str:
    """The client command ``text`` is (``QUIT``, ``EXIT``, ``HELP``), else ``""``; ``;`` and case do not matter."""
    word = text.strip().rstrip(";").strip().upper()
    return word if word in (*LEAVE, HELP) else ""


def is_complete(text: str) -> bool:
    """Whether Enter should run ``text``: nothing typed (a fresh prompt), a client command, or statements that end
    with a ``;`` outside strings, comments and statement-set blocks."""
    return not text.strip() or bool(command_word(text)) or ends_statement(text)


class LineReader:
    """Statements out of a line-at-a-time ``read_line(prompt)`` (``input`` or a test's typist).

    Each call returns the next complete statement text (several lines joined); Ctrl-C (``KeyboardInterrupt``) drops
    the lines read so far and propagates, EOF (``EOFError``) propagates. The prompt shown is ``PROMPT`` for a
    statement's first line and ``CONTINUATION`` after it, as the terminal prompt shows them."""

    def __init__(self, read_line: Callable[[str], str] = input):
        self.read_line = read_line

    def __call__(self) -> str:
        lines: list[str] = []
        while True:
            try:
                lines.append(self.read_line(CONTINUATION if lines else PROMPT))
            except KeyboardInterrupt:
                lines.clear()
                raise
            text = "\n".join(lines)
            if is_complete(text):
                return text
