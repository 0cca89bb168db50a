"""``planengine compile FILE -o plan.json``: plan a script's INSERT / statement set once, write the plan.

The script may hold setup statements (DDL, USE, SET, RESET) and exactly one INSERT or statement set (or a
``COMPILE PLAN`` / ``COMPILE AND EXECUTE PLAN`` statement, whose body is used and whose path is ignored).
Compiling has no side effect beyond writing the output plan, so statements that would run a job, preview a
query or read and write plan files (``SELECT``, ``EXECUTE PLAN``, ``COMPILE PLAN … FROM``, ``EXPLAIN``,
``SHOW``, ``DESCRIBE``) are refused with their statement and line (docs/sql-client.md "Compiling a script").
The same rule holds wherever a script is split into setup and program (``run --script``, ``explain FILE``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planengine.commands._env import add_session_arguments, read_text, session
from planengine.errors import UserError
from planengine.plan.compiled_plan import CompiledPlan
from planengine.sql import parse_script
from planengine.sql import statements as S
from planengine.sql.deep_stack import run_deep, too_deep


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


# Statements that only change the session or its catalogs: compile executes them before planning.
SETUP_STATEMENTS = (S.CreateTable, S.CreateView, S.CreateFunction, S.CreateCatalog, S.CreateDatabase, S.UseCatalog,
                    S.UseDatabase, S.Drop, S.SetOption, S.ResetOption, S.AlterTable)


def refuse_side_effect(stmt: S.Statement) -> UserError:
    """Why a statement has no place in a script being compiled, naming it and where it is."""
    name = _KINDS.get(type(stmt), type(stmt).__name__)
    return UserError(f"{name} is not allowed in a script being compiled: compiling only plans the script's INSERT or "
                     "statement set and must not run, preview or write anything else",
                     location=stmt.location,
                     hint="remove the statement, or run it with `planengine sql` (compile keeps DDL, USE, SET and "
                          "RESET)")


_KINDS: dict[type, str] = {
    S.Query: "a query (SELECT/VALUES)",
    S.ExecutePlan: "EXECUTE PLAN",
    S.MigratePlan: "COMPILE PLAN ... FROM (plan migration)",
    S.Explain: "EXPLAIN",
    S.ExplainPlan: "EXPLAIN PLAN",
    S.Show: "SHOW",
    S.ShowColumns: "SHOW COLUMNS",
    S.ShowCreate: "SHOW CREATE",
    S.ShowCurrent: "SHOW CURRENT",
    S.Describe: "DESCRIBE",
}


def _split(env, text: str, source: str) -> tuple[list[S.Insert], S.Statement]:  # type: ignore[no-untyped-def]
    program: list[S.Insert] | None = None
    program_stmt: S.Statement | None = None
    statements = parse_script(text, source)
    for stmt in statements:  # refuse before executing anything: a refused script changes no catalog
        body = stmt.body if isinstance(stmt, S.CompilePlan | S.CompileAndExecutePlan) else stmt
        if not isinstance(body, S.Insert | S.StatementSet) and not isinstance(stmt, SETUP_STATEMENTS):
            raise refuse_side_effect(stmt)
    for stmt in statements:
        body = stmt.body if isinstance(stmt, S.CompilePlan | S.CompileAndExecutePlan) else stmt
        if isinstance(body, S.Insert | S.StatementSet):
            if program is not None:
                raise UserError("the script holds more than one INSERT / statement set", location=stmt.location,
                                hint="put several INSERTs into one EXECUTE STATEMENT SET BEGIN ... END block")
            program = [body] if isinstance(body, S.Insert) else list(body.inserts)
            program_stmt = stmt
        else:
            try:
                env.execute_statement(stmt)
            except RecursionError:
                raise too_deep(stmt.location) from None
    if program is None:
        raise UserError(f"{source}: no INSERT or statement set to compile",
                        hint="add INSERT INTO <sink> SELECT ... after the table definitions")
    assert program_stmt is not None
    return program, program_stmt


def compile_to_json(env, text: str, source: str) -> tuple[CompiledPlan, str]:  # type: ignore[no-untyped-def]
    """The plan and its JSON text, both made on the deep stack (encoding walks the expression trees too)."""
    def work() -> tuple[CompiledPlan, str]:
        inserts, stmt = _split(env, text, source)
        try:
            plan = env.compile_plan(inserts)
            return plan, plan.as_json()
        except RecursionError:
            raise too_deep(stmt.location) from None
        except UserError as error:
            if error.location is None:
                raise type(error)(error.message, location=stmt.location, hint=error.hint) from None
            raise

    return run_deep(work)


def run(args: argparse.Namespace) -> int:
    if args.output and Path(args.output).exists() and not args.force:
        raise UserError(f"plan file {args.output} already exists",
                        hint="add --force to overwrite it, or write the plan to another file with -o")
    env = session(args)
    if args.force:
        env.config["table.plan.force-recompile"] = "true"
    plan, text = compile_to_json(env, read_text(args.file), args.file)
    if args.output:
        run_deep(lambda: plan.write_to_file(args.output))  # encodes the plan again: deep trees need the deep stack
        print(f"plan {plan.plan_id} written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
