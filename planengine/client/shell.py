"""``planengine sql``: run a script (a file or standard input), or talk to a prompt.

The prompt hands over whole statements (``planengine.client.prompt`` on a terminal: a statement ends with ``;``, a
statement set with its ``END;``); the shell runs each and prints the result the way Flink's SQL client does:
tables for listings and SELECT previews, ``[INFO]`` for what a statement did, ``[ERROR]`` with the reason and the
fix, after which the prompt simply continues. ``HELP;`` lists what one can type, ``QUIT;`` / ``EXIT;`` / Ctrl-D
leave (stopping the jobs started here with a snapshot), Ctrl-C drops the statement being typed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from planengine.api.results import TableResult
from planengine.client.messages import error_line, info_line, statement_log
from planengine.client.reading import HELP, LEAVE, command_word
from planengine.errors import PlanEngineError
from planengine.sql import parse_script, statement_texts
from planengine.version import ENGINE_VERSION

HELP_TEXT = """Statements end with ';' and may span lines. Among them:
  SHOW TABLES | VIEWS | FUNCTIONS | CATALOGS | DATABASES | CURRENT CATALOG | CURRENT DATABASE
  DESCRIBE t;  SHOW COLUMNS FROM t;  SHOW CREATE TABLE t;
  CREATE TABLE t (...) WITH (...);  ALTER TABLE t SET ('k' = 'v');  DROP TABLE t;
  SET;  SET 'key' = 'value';  RESET 'key';         (docs/options.md lists the keys)
  SELECT ...;            a preview: the first rows ('planengine.preview.max-rows'), for a while at most
                         ('planengine.preview.timeout')
  EXPLAIN SELECT ...;    the plan with its changelog modes
  INSERT INTO t SELECT ...;  EXECUTE STATEMENT SET BEGIN ... END;   start a job (stopped with a snapshot
                         when you leave)
  COMPILE PLAN 'p.json' FOR INSERT ...;  EXECUTE PLAN 'p.json';  EXPLAIN PLAN 'p.json';
  HELP;  QUIT;  (Ctrl-C drops the statement being typed, Ctrl-D leaves)"""


class Shell:
    """Executes statements on one ``TableEnvironment`` and prints what they produced."""

    def __init__(self, env: Any, out: TextIO | None = None, err: TextIO | None = None):
        self.env = env
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.jobs: list[Any] = []
        self.statements = 0  # statements typed at the prompt so far: errors name theirs by this number

    # -- scripts ---------------------------------------------------------------------------------------------
    def run_script(self, text: str, source: str) -> None:
        """Every statement in order; the first error propagates (the CLI maps it to its exit code). Warnings while
        a statement runs are ``[WARNING]`` lines on stderr, as at the prompt (stdout keeps only the results)."""
        for statement in parse_script(text, source):
            with statement_log(self.err):
                result = self.env.execute_statement(statement)
            self.show(result)

    def show(self, result: TableResult) -> None:
        text = str(result)
        if text:
            print(text, file=self.out, flush=True)
        if result.job is not None and hasattr(result.job, "wait"):
            self.jobs.append(result.job)

    # -- the prompt ------------------------------------------------------------------------------------------
    def interact(self, read_statement: Callable[[], str]) -> int:
        """Run what ``read_statement`` returns until QUIT, EXIT or EOF (Ctrl-D); Ctrl-C drops the typed text.

        ``read_statement`` hands over one whole statement at a time (``planengine.client.prompt`` on a terminal,
        ``LineReader`` over any line source), so the shell never sees half a statement."""
        print(f"planengine {ENGINE_VERSION} SQL client. Statements end with ';'. HELP; lists them, QUIT; leaves.",
              file=self.out, flush=True)
        while True:
            try:
                text = read_statement()
            except EOFError:
                print(file=self.out)
                break
            except KeyboardInterrupt:
                print("^C", file=self.out)
                continue
            word = command_word(text)
            if word in LEAVE:
                break
            if word == HELP:
                print(HELP_TEXT, file=self.out, flush=True)
            elif text.strip():
                self._run_typed(text)
        self.stop_jobs()
        return 0

    def _run_typed(self, text: str) -> None:
        """Each statement of what was typed, in order, until one fails (the rest may depend on it)."""
        try:
            texts = statement_texts(text)
        except PlanEngineError as error:  # only if the prompt let an untokenizable text through
            self.statements += 1
            print(error_line(error, self.statements), file=self.out, flush=True)
            return
        for statement_text in texts:
            self.statements += 1
            if not self._run_statement(statement_text):
                return

    def _run_statement(self, text: str) -> bool:
        """Parse and run one statement alone, so an error's line and column are within it; False if it failed."""
        try:
            with statement_log(self.out):
                [statement] = parse_script(text, None)
                result = self.env.execute_statement(statement)
            if result.kind in ("OK", "PLAN", "JOB"):
                result.message = info_line(result.message)
            self.show(result)
            return True
        except PlanEngineError as error:
            print(error_line(error, self.statements), file=self.out, flush=True)
        except KeyboardInterrupt:
            print(info_line("cancelled"), file=self.out, flush=True)
        except Exception as error:  # an engine bug must not end the session; the message goes to the user
            print(f"[ERROR] internal error: {type(error).__name__}: {error}", file=self.out, flush=True)
        return False

    def stop_jobs(self) -> None:
        for job in self.jobs:
            snapshot = job.stop(snapshot=True, reason="stop")
            root = job.job_root
            print(info_line(f"job {job.run.run_id} stopped with snapshot {snapshot}; `planengine run --plan "
                            f"{root.plan_path} --job-root {root.location}` continues it"), file=self.out, flush=True)
        self.jobs = []
