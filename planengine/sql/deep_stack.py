"""Run the compile path on a thread with a large stack, and turn running out of it into a located error.

SQL that code generators write is deep: a sum of thousands of terms is a binary tree thousands of levels
deep, every nested parenthesis or sub-query is several frames in sqlglot's recursive-descent parser, and
the converter, the planner rules and the JSON encoder of the plan all walk those trees recursively.
Python's default limit (1000 frames) fails at about 50 nested parentheses. Rewriting every walker
iteratively is a large change across sqlglot and our planner; instead the whole compile runs on a worker
thread whose C stack is large enough for :data:`RECURSION_LIMIT` Python frames, so the interpreter raises
``RecursionError`` long before the C stack overflows (``tests/sql/test_deep_sql.py`` drives input far
deeper than the limit and checks it fails cleanly instead of crashing the process). A ``RecursionError``
becomes :class:`planengine.errors.SqlParseError` "expression nested too deeply", located at the statement
being compiled.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from planengine.errors import PlanEngineError, SourceLocation, SqlParseError

T = TypeVar("T")

# Frames the compile path may use. Measured (docs/sql-client.md "Limits"): 200 nested parentheses need about
# 6 000, a 5000-term sum about 16 000 in the worst walker. Each Python frame that goes through C (calls via
# type(), isinstance hooks, the JSON encoder) costs at most ~2 KB of C stack in CPython 3.11 on x86-64;
# the stack below leaves more than a factor four of headroom over RECURSION_LIMIT * that.
RECURSION_LIMIT = 60_000
STACK_BYTES = 512 * 1024 * 1024

_lock = threading.Lock()  # the recursion limit is per interpreter: one deep run raises it at a time
_worker = threading.local()


class NestedTooDeeply(SqlParseError):
    """The input is nested deeper than the compile path supports."""


def too_deep(location: SourceLocation | None) -> NestedTooDeeply:
    where = ""
    if location is not None and location.line is not None:
        where = f" at line {location.line} column {location.column or 1}"
    return NestedTooDeeply(f"expression nested too deeply{where}",
                           location=location,
                           hint="simplify it: split long AND/OR chains or sums into views or several columns, "
                                "and flatten nested sub-queries and CASE expressions")


def run_deep(work: Callable[[], T], *, location: Callable[[], SourceLocation | None] = lambda: None) -> T:
    """``work()`` on a thread with a large stack; a ``RecursionError`` becomes :class:`NestedTooDeeply`.

    ``location`` is asked after a failure for the best place to report (e.g. the statement being planned).

    >>> run_deep(lambda: sum(range(4)))
    6
    """
    if getattr(_worker, "active", False):  # already on a deep stack (e.g. a view planned inside a compile)
        return work()
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        _worker.active = True
        try:
            result.append(work())
        except RecursionError:
            failure.append(too_deep(location()))
        except PlanEngineError as error:
            # Its traceback and context hold the frames, and through them the deep trees: release them here,
            # where the stack is deep enough to free them, not on the caller's 8 MB stack.
            error.__context__ = error.__cause__ = None
            failure.append(error.with_traceback(None))
        except BaseException as error:  # a bug: handed over with its traceback
            failure.append(error)
        finally:
            gc.collect()  # deep garbage with cycles (sqlglot nodes point to their parents) is freed here too

    with _lock:
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        try:
            worker = threading.Thread(target=target, name="planengine-compile", daemon=True)
            previous_stack = threading.stack_size(STACK_BYTES)  # read when the thread starts, so start it here
            try:
                worker.start()
            finally:
                threading.stack_size(previous_stack)
            worker.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return result[0]
