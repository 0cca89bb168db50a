"""``planengine sql``: scripts from files and standard input, and the interactive prompt (driven in-process)."""

from __future__ import annotations

import io
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.cli import main
from planengine.client.reading import CONTINUATION, PROMPT, LineReader
from planengine.client.shell import Shell
from planengine.commands import sql as sql_command
from planengine.sql import ends_statement


def typing(*lines: str):  # type: ignore[no-untyped-def]
    """A read_line that types ``lines`` and records the prompts it was shown."""
    prompts: list[str] = []
    feed: Iterator[str] = iter(lines)

    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        try:
            line = next(feed)
        except StopIteration:
            raise EOFError from None
        if line == "^C":
            raise KeyboardInterrupt
        return line

    return read_line, prompts


def test_the_prompt_reads_statements_over_lines_and_survives_errors() -> None:
    out = io.StringIO()
    read_line, prompts = typing(
        "CREATE TABLE clicks (",
        "  page STRING, n BIGINT",
        ") WITH ('connector' = 'datagen');",
        "SET 'table.exec.state.tll' = '1 h';",
        "SELECT * FROM nowhere; -- an error does not end the session",
        "half a statement",
        "^C",
        "SHOW TABLES;",
        "help;",
        "DESCRIBE clicks; SHOW CURRENT DATABASE;",
        "QUIT;",
        "SHOW TABLES;",  # never read
    )
    assert Shell(TableEnvironment(), out=out).interact(LineReader(read_line)) == 0
    text = out.getvalue()
    assert prompts[:4] == [PROMPT, CONTINUATION, CONTINUATION, PROMPT]
    assert "[INFO] table `default_catalog`.`default_database`.`clicks` created" in text
    assert "[ERROR] statement 2, line 1, column 1: unknown option 'table.exec.state.tll'; did you mean " \
           "'table.exec.state.ttl'?" in text
    assert "[ERROR] statement 3, line 1, column 15: table or view `default_catalog`.`default_database`.`nowhere` " \
           "does not exist" in text
    assert "^C" in text and "half a statement" not in text
    assert "| table name |\n+------------+\n|     clicks |" in text
    assert "SHOW TABLES | VIEWS | FUNCTIONS" in text  # HELP
    assert "|    n | BIGINT | TRUE |" in text and "| current database name |" in text
    assert text.count("[ERROR]") == 2
    assert len(prompts) == 11  # stopped reading at QUIT


def test_errors_name_the_statement_in_the_session_and_the_place_within_it() -> None:
    """Statements are counted over the session, lines and columns within the statement however it was typed; a
    failing statement stops the rest of what was typed with it."""
    out = io.StringIO()
    read_line, _ = typing(
        "CREATE TABLE clicks (page STRING) WITH ('connector' = 'datagen');",
        "SHOW TABLES; EXPLAIN SELECT page,",
        "  nope FROM clicks;",
        "SHOW CATALOGS;   SHOW TABLS; SHOW DATABASES;",
        "SHOW",
        "  CURRENT CATALOG",
        "SHOW TABLES;",
    )
    Shell(TableEnvironment(), out=out).interact(LineReader(read_line))
    errors = [line for line in out.getvalue().splitlines() if line.startswith("[ERROR]")]
    assert errors == [
        "[ERROR] statement 3, line 2, column 3: column 'nope' not found",
        "[ERROR] statement 5, line 1, column 6: did you mean SHOW TABLES? expected TABLES, VIEWS, [USER] FUNCTIONS, "
        "CATALOGS, DATABASES, COLUMNS FROM <table>, CREATE TABLE|VIEW <name> or CURRENT CATALOG|DATABASE after SHOW",
        "[ERROR] statement 6, line 3, column 1: missing ';' before line 3 column 1: the statement before 'SHOW' "
        "does not end with ';'",
    ]
    assert "| database name |" not in out.getvalue()  # SHOW DATABASES came after the error in its line


def test_warnings_while_a_statement_runs_are_warning_lines_without_timestamps() -> None:
    """The CLI's log format (a timestamp, the level, the logger) is for logs; at the prompt a warning is a message."""
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    out = io.StringIO()
    try:
        read_line, _ = typing("SET 'sql-client.verbose' = 'true';", "SHOW CATALOGS;")
        Shell(TableEnvironment(), out=out).interact(LineReader(read_line))
        logging.getLogger("planengine.test").warning("after the session: a log line again")
    finally:
        root.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert lines[1:3] == ["[WARNING] 'sql-client.verbose' has no effect in planengine: use `planengine -v` for "
                          "detailed logs", "[INFO] set 'sql-client.verbose' = 'true'"]
    assert "sql-client.verbose" not in log.getvalue()
    assert "WARNING planengine.test: after the session: a log line again" in log.getvalue()


def test_a_statement_set_runs_only_after_its_end() -> None:
    assert not ends_statement("EXECUTE STATEMENT SET BEGIN\n INSERT INTO a SELECT 1;")
    assert not ends_statement("EXECUTE STATEMENT SET BEGIN\n INSERT INTO a SELECT 1;\n INSERT INTO b SELECT 2;")
    assert ends_statement("EXECUTE STATEMENT SET BEGIN\n INSERT INTO a SELECT 1;\n END;")
    assert not ends_statement("SELECT 'a;")
    assert ends_statement("SELECT 'a;';")


def test_ctrl_d_leaves_the_prompt() -> None:
    out = io.StringIO()
    read_line, prompts = typing("SHOW CATALOGS;")
    assert Shell(TableEnvironment(), out=out).interact(LineReader(read_line)) == 0
    assert "default_catalog" in out.getvalue() and prompts == [PROMPT, PROMPT]


@pytest.mark.usefixtures("engine_process")
def test_a_script_on_standard_input_runs_statement_by_statement() -> None:
    script = ("CREATE TABLE t (a INT, b STRING) WITH ('connector' = 'datagen');\n"
              "SHOW COLUMNS FROM t LIKE 'b';\n"
              "ALTER TABLE t RENAME b TO c;\n"
              "SHOW CREATE TABLE t;\n")
    done = subprocess.run([sys.executable, "-m", "planengine.cli", "sql"], input=script, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "|    b | STRING | TRUE |" in done.stdout
    assert "  `c` STRING\n)" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "planengine.cli", "sql", "-"], input="SHOW TABLE;", text=True,
                         capture_output=True, timeout=120)
    assert bad.returncode == 2
    assert "planengine: error: <stdin>, statement 1, line 1, column 6: did you mean SHOW TABLES?" in bad.stderr


def test_on_a_terminal_the_command_opens_the_prompt_with_the_users_history_and_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``planengine sql`` without FILE on a terminal reads statements from the prompt (here a typist stands in for
    prompt_toolkit, which ``tests/client/test_prompt.py`` drives) over the session's catalog; Spark's log is the
    session's own."""
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    opened: list[object] = []

    def prompt(catalogs, history):  # type: ignore[no-untyped-def]
        opened.append((catalogs, history))
        return LineReader(typing("SHOW CATALOGS;")[0])

    sessions: list[TableEnvironment] = []
    make_session = sql_command.session
    monkeypatch.setattr(sql_command, "session", lambda args: sessions.append(make_session(args)) or sessions[-1])
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sql_command, "statement_prompt", prompt)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("PLANENGINE_HISTORY", raising=False)
    monkeypatch.setenv("PLANENGINE_SPARK_LOG", "")  # unset (and restored after the test: the command sets it)
    assert main(["sql"]) == 0
    captured = capsys.readouterr()
    assert "default_catalog" in captured.out
    assert opened[0][1] == tmp_path / "planengine" / "sql_history"  # type: ignore[index]
    assert f"history: {tmp_path / 'planengine' / 'sql_history'}" in captured.err
    # Spark's log: a file of this session's own among the user's state, named at start, where the JVM will write.
    log = Path(os.environ["PLANENGINE_SPARK_LOG"])
    assert log.parent == tmp_path / "planengine" / "logs" and log.name.endswith(f"-{os.getpid()}.log")
    assert f"Spark's log: {log};" in captured.err
    # Jobs started without a job root go to a directory of the session's own among the user's state.
    jobs = Path(sessions[0].session_jobs_dir)
    assert jobs.parent == tmp_path / "planengine" / "jobs" and jobs.name == log.stem
    assert stat.S_IMODE(jobs.parent.stat().st_mode) == 0o700
    # PLANENGINE_SPARK_LOG still chooses it.
    monkeypatch.setenv("PLANENGINE_SPARK_LOG", str(tmp_path / "mine.log"))
    assert main(["sql"]) == 0
    assert f"Spark's log: {tmp_path / 'mine.log'};" in capsys.readouterr().err
    assert os.environ["PLANENGINE_SPARK_LOG"] == str(tmp_path / "mine.log")


def test_dash_f_runs_a_script_as_flinks_client_takes_it(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``planengine sql -f FILE`` is Flink's ``sql-client.sh -f FILE``: the same as the positional FILE."""
    from planengine import cli

    script = tmp_path / "ddl.sql"
    script.write_text("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nSHOW TABLES;\n")
    assert cli.main(["sql", "-f", str(script)]) == 0
    assert "|          t |" in capsys.readouterr().out
    other = tmp_path / "other.sql"
    other.write_text("SHOW TABLES;\n")
    assert cli.main(["sql", str(other), "-f", str(script)]) == 2
    assert "two scripts given" in capsys.readouterr().err


def test_a_script_prints_warnings_as_warning_lines_on_stderr(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Script runs too: a SET of a Flink key without effect is a ``[WARNING]`` line, no log timestamp."""
    from planengine import cli

    script = tmp_path / "set.sql"
    script.write_text("SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';\n")
    assert cli.main(["sql", str(script)]) == 0
    err = capsys.readouterr().err
    assert "[WARNING] 'table.optimizer.agg-phase-strategy' has no effect in planengine" in err
    assert " WARNING planengine:" not in err
