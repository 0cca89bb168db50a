"""Run one fuzz input through the compile path in-process and classify what happened.

``compile_bytes`` is what ``planengine compile FILE`` does after argument parsing (decode the file, build a
session, execute the setup statements, plan the one program, encode the plan as JSON), minus writing the
file. Spark is never started: :func:`no_spark` makes any attempt an immediate, visible failure.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

from planengine.errors import PlanEngineError

COMPILED = "compiled"
CLEAN_ERROR = "clean error"
UNLOCATED_ERROR = "error without a location"
TRACEBACK = "traceback"


@dataclass(frozen=True)
class Outcome:
    kind: str
    seconds: float
    message: str = ""


def compile_bytes(data: bytes, source: str = "fuzz.sql") -> str:
    """The plan JSON for a script given as raw file bytes; raises ``PlanEngineError`` for bad input."""
    from planengine.api import TableEnvironment
    from planengine.commands._env import decode_source
    from planengine.commands.compile import compile_to_json

    text = decode_source(data, source)
    return compile_to_json(TableEnvironment(), text, source)[1]


def names_location(error: PlanEngineError, source: str) -> bool:
    """An error names a location when it has a line, or (for whole-file errors) names the file."""
    location = error.location
    if location is not None and location.line is not None:
        return True
    return source in error.render()


def run_one(data: bytes, source: str = "fuzz.sql") -> Outcome:
    started = time.perf_counter()
    try:
        compile_bytes(data, source)
    except PlanEngineError as error:
        kind = CLEAN_ERROR if names_location(error, source) else UNLOCATED_ERROR
        return Outcome(kind, time.perf_counter() - started, error.render())
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        import traceback

        return Outcome(TRACEBACK, time.perf_counter() - started, "".join(traceback.format_exception(error)))
    return Outcome(COMPILED, time.perf_counter() - started)


@contextlib.contextmanager
def no_spark() -> Iterator[None]:
    """Make starting Spark fail loudly: compiling must never need it (every path ends in ``getOrCreate``)."""
    from pyspark.sql import SparkSession

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("compile started Spark")

    saved = SparkSession.Builder.getOrCreate
    SparkSession.Builder.getOrCreate = refuse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        SparkSession.Builder.getOrCreate = saved  # type: ignore[method-assign]
