"""The terminal prompt: prompt_toolkit edits one whole statement at a time.

Why prompt_toolkit rather than ``readline``: ``input()`` returns a line, so readline's history held lines, and a
statement typed over five lines came back one line at a time. Here the buffer is the statement: Enter runs it once
``is_complete`` says so (a ``;`` outside strings and statement-set blocks, or a client command), and otherwise opens
a new line; so the history (a file, ``planengine.client.state.history_file``) holds statements, Up brings back a
whole one to edit, and Tab completes from the session's catalog (``planengine.client.completion``).

Ctrl-C drops the buffer (``KeyboardInterrupt``), Ctrl-D on an empty buffer leaves (``EOFError``): ``Shell.interact``
handles both as it handles them from ``LineReader``. ``keys``/``screen`` are for tests (prompt_toolkit's pipe input
and ``DummyOutput``); a real session uses the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output

from planengine.catalog.manager import CatalogManager
from planengine.client.completion import SqlCompleter
from planengine.client.reading import CONTINUATION, PROMPT, is_complete


def statement_prompt(catalogs: CatalogManager, history: Path, *, keys: Input | None = None,
                     screen: Output | None = None) -> Callable[[], str]:
    """A ``read_statement`` for ``Shell.interact``: each call edits and returns one statement."""
    session: PromptSession[str] = PromptSession(
        PROMPT, multiline=True, prompt_continuation=CONTINUATION, history=FileHistory(str(history)),
        completer=SqlCompleter(catalogs), complete_while_typing=False, key_bindings=_enter_runs_statements(),
        input=keys, output=screen)
    return session.prompt


def _enter_runs_statements() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        """Run the buffer when it is a complete statement and the cursor is at its end; else a new line (editing
        the middle of a recalled statement must not run it half-changed)."""
        buffer = event.current_buffer
        if is_complete(buffer.text) and not buffer.document.text_after_cursor.strip():
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    return bindings
