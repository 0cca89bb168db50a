"""Typed text to statements: when Enter runs what was typed, and the line reader that scripts the prompt in tests."""

from __future__ import annotations

import pytest

from planengine.client.reading import CONTINUATION, PROMPT, LineReader, command_word, is_complete


@pytest.mark.parametrize(("text", "complete"), [
    ("SELECT 1", False),
    ("SELECT 1;", True),
    ("SELECT 1\n  FROM t;", True),
    ("SELECT ';'", False),  # the ; is inside a string
    ("SELECT 'it''s;", False),  # the string is still open
    ("SELECT 1; -- done", True),
    ("EXECUTE STATEMENT SET BEGIN\n INSERT INTO a SELECT 1;", False),  # a statement set runs at its END;
    ("EXECUTE STATEMENT SET BEGIN\n INSERT INTO a SELECT 1;\nEND;", True),
    ("", True), ("   ", True),  # Enter on nothing: a fresh prompt
    ("help", True), ("Quit", True), ("exit;", True),  # client commands need no ;
    ("helpful", False),
])
def test_enter_runs_complete_statements_and_client_commands(text: str, complete: bool) -> None:
    assert is_complete(text) is complete


def test_client_commands_ignore_case_and_semicolons() -> None:
    assert [command_word(t) for t in ("quit;", " EXIT ", "Help;", "SHOW TABLES;", "")] == [
        "QUIT", "EXIT", "HELP", "", ""]


def typist(*lines: str):  # type: ignore[no-untyped-def]
    """A read_line that types ``lines`` ("^C" presses Ctrl-C) and records the prompts it was shown."""
    prompts: list[str] = []
    feed = iter(lines)

    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        line = next(feed, None)
        if line is None:
            raise EOFError
        if line == "^C":
            raise KeyboardInterrupt
        return line

    return read_line, prompts


def test_the_line_reader_returns_whole_statements_and_drops_them_on_ctrl_c() -> None:
    read_line, prompts = typist("CREATE TABLE t (", "  a INT", ") WITH ('connector' = 'datagen');",
                                "SELECT", "^C", "SHOW TABLES;")
    read = LineReader(read_line)
    assert read() == "CREATE TABLE t (\n  a INT\n) WITH ('connector' = 'datagen');"
    with pytest.raises(KeyboardInterrupt):
        read()
    assert read() == "SHOW TABLES;"  # the SELECT typed before Ctrl-C is gone
    with pytest.raises(EOFError):
        read()
    assert prompts == [PROMPT, CONTINUATION, CONTINUATION, PROMPT, CONTINUATION, PROMPT, PROMPT]
