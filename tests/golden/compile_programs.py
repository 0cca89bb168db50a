"""Compile the golden programs: ``python -m tests.golden.compile_programs [--write]``.

``--write`` regenerates ``tests/golden/plans/*.json`` on purpose (review the diff before committing);
without it, prints one ``name<TAB>sha256`` line per plan (used to prove determinism across processes).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs"
PLANS = HERE / "plans"


def program_names() -> list[str]:
    return sorted(p.stem for p in PROGRAMS.glob("*.sql") if not p.name.startswith("_"))


def compile_program(name: str) -> str:
    from planengine.api import TableEnvironment
    from planengine.commands.compile import split_program

    env = TableEnvironment()
    env.execute_sql((PROGRAMS / "_prelude.sql").read_text(), source="_prelude.sql")
    text = (PROGRAMS / f"{name}.sql").read_text()
    return env.compile_plan(split_program(env, text, f"{name}.sql")).as_json()


def main(argv: list[str]) -> int:
    for name in program_names():
        plan = compile_program(name)
        if "--write" in argv:
            (PLANS / f"{name}.json").write_text(plan)
        else:
            print(f"{name}\t{hashlib.sha256(plan.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
