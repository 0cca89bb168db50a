"""``planengine compile FILE -o plan.json``: plan a script's INSERT / statement set once, write the plan.

The script may hold DDL and SET statements before exactly one INSERT or statement set (or a
``COMPILE PLAN`` statement, whose body is used).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planengine.commands._env import add_session_arguments, read_text, session
from planengine.errors import UserError
from planengine.sql import parse_script
from planengine.sql import statements as S


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "compile", help="compile a SQL script into a plan",
        description="Plan the script's one INSERT or statement set once and write the compiled plan: "
                    "deterministic JSON that `planengine run --plan` executes and later engines restore without "
                    "re-planning. DDL and SET statements before it set up the session.")
    p.add_argument("file", help="SQL script: DDL and SET statements, then one INSERT or EXECUTE STATEMENT SET")
    p.add_argument("-o", "--output", metavar="PLAN", help="plan file to write (default: print the plan)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plan file")
    add_session_arguments(p)
    p.set_defaults(handler=run)


def split_program(env, text: str, source: str) -> list[S.Insert]:  # type: ignore[no-untyped-def]
    """Execute the script's setup statements and return the inserts of its one program."""
    return _split(env, text, source)[0]


def _split(env, text: str, source: str) -> tuple[list[S.Insert], S.Statement]:  # type: ignore[no-untyped-def]
    program: list[S.Insert] | None = None
    program_stmt: S.Statement | None = None
    for stmt in parse_script(text, source):
        body = stmt.body if isinstance(stmt, S.CompilePlan | S.CompileAndExecutePlan) else stmt
        if isinstance(body, S.Insert | S.StatementSet):
            if program is not None:
                raise UserError("the script holds more than one INSERT / statement set", location=stmt.location,
                                hint="put several INSERTs into one EXECUTE STATEMENT SET BEGIN ... END block")
            program = [body] if isinstance(body, S.Insert) else list(body.inserts)
            program_stmt = stmt
        else:
            env.execute_statement(stmt)
    if program is None:
        raise UserError(f"{source}: no INSERT or statement set to compile",
                        hint="add INSERT INTO <sink> SELECT ... after the table definitions")
    assert program_stmt is not None
    return program, program_stmt


def compile_program(env, text: str, source: str):  # type: ignore[no-untyped-def]
    """Plan the script's one program; planning errors name its statement, as ``execute_sql`` would."""
    inserts, stmt = _split(env, text, source)
    try:
        return env.compile_plan(inserts)
    except UserError as error:
        if error.location is None:
            raise type(error)(error.message, location=stmt.location, hint=error.hint) from None
        raise


def run(args: argparse.Namespace) -> int:
    if args.output and Path(args.output).exists() and not args.force:
        raise UserError(f"plan file {args.output} already exists",
                        hint="add --force to overwrite it, or write the plan to another file with -o")
    env = session(args)
    if args.force:
        env.config["table.plan.force-recompile"] = "true"
    plan = compile_program(env, read_text(args.file), args.file)
    if args.output:
        plan.write_to_file(args.output)
        print(f"plan {plan.plan_id} written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(plan.as_json())
    return 0
