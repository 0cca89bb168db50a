"""The terminal prompt, driven through prompt_toolkit's pipe input (no terminal): whole statements in and out of the
history file, Enter inside a statement, Ctrl-C and Ctrl-D, and where the history lives."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from planengine.api import TableEnvironment
from planengine.client.prompt import statement_prompt
from planengine.client.state import history_file

UP, LEFT, END, ENTER, CTRL_C, CTRL_D = "\x1b[A", "\x1b[D", "\x1b[F", "\r", "\x03", "\x04"


@pytest.fixture
def keys() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe:
        yield pipe


def test_a_statement_over_lines_is_one_history_entry_recalled_whole(keys: PipeInput, tmp_path: Path) -> None:
    history = tmp_path / "history"
    env = TableEnvironment()
    keys.send_text(f"SELECT 1{ENTER}  + 2;{ENTER}SHOW TABLES;{ENTER}")
    read = statement_prompt(env.catalog_manager, history, keys=keys, screen=DummyOutput())
    assert read() == "SELECT 1\n  + 2;"  # the first Enter opened a line: no ; yet
    assert read() == "SHOW TABLES;"
    # A new session (a new prompt on the same file) recalls the statement whole with two Up presses.
    keys.send_text(f"{UP}{UP}{ENTER}")
    again = statement_prompt(env.catalog_manager, history, keys=keys, screen=DummyOutput())
    assert again() == "SELECT 1\n  + 2;"
    assert list(FileHistory(str(history)).load_history_strings())[::-1] == [
        "SELECT 1\n  + 2;", "SHOW TABLES;", "SELECT 1\n  + 2;"]


def test_enter_in_the_middle_of_a_statement_opens_a_line(keys: PipeInput, tmp_path: Path) -> None:
    keys.send_text(f"SELECT 12;{LEFT}{LEFT}{ENTER}{END}{ENTER}")  # Enter before "2;", then End, Enter
    read = statement_prompt(TableEnvironment().catalog_manager, tmp_path / "h", keys=keys, screen=DummyOutput())
    assert read() == "SELECT 1\n2;"


def test_ctrl_c_drops_the_statement_and_ctrl_d_leaves(keys: PipeInput, tmp_path: Path) -> None:
    read = statement_prompt(TableEnvironment().catalog_manager, tmp_path / "h", keys=keys, screen=DummyOutput())
    keys.send_text(f"SELECT{ENTER}1{CTRL_C}")
    with pytest.raises(KeyboardInterrupt):
        read()
    keys.send_text(CTRL_D)
    with pytest.raises(EOFError):
        read()
    assert not (tmp_path / "h").exists() or "SELECT" not in (tmp_path / "h").read_text()


def test_the_history_is_private_to_the_user_in_their_state_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLANENGINE_HISTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = history_file()
    assert path == tmp_path / "state" / "planengine" / "sql_history"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # not absolute: ignored, as XDG says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert history_file() == tmp_path / "home" / ".local" / "state" / "planengine" / "sql_history"
    monkeypatch.setenv("PLANENGINE_HISTORY", str(tmp_path / "mine" / "h"))
    assert history_file() == tmp_path / "mine" / "h"
    assert stat.S_IMODE((tmp_path / "mine" / "h").stat().st_mode) == 0o600


def test_an_existing_history_readable_by_others_is_made_private(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANENGINE_HISTORY", str(tmp_path / "h"))
    (tmp_path / "h").write_text("\n# 2026\n+SHOW TABLES;\n")
    (tmp_path / "h").chmod(0o644)
    assert stat.S_IMODE(history_file().stat().st_mode) == 0o600
    assert "+SHOW TABLES;" in (tmp_path / "h").read_text()
