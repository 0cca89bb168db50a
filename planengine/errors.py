"""One hierarchy for every error a user can cause or meet.

Each error carries the exit code the CLI returns for it (DESIGN §6: 2 user error, 3 needs migration,
4 incompatible, 1 internal), and a location when one is known, so the CLI, the Python API and the
operator all report the same "what, where, how to fix" without string matching.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    """Where in a script something happened. Lines and columns are 1-based."""

    statement: int | None = None
    line: int | None = None
    column: int | None = None
    source: str | None = None  # file name, when known

    def __str__(self) -> str:
        parts = []
        if self.source:
            parts.append(self.source)
        if self.statement is not None:
            parts.append(f"statement {self.statement}")
        if self.line is not None:
            where = f"line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
            parts.append(where)
        return ", ".join(parts)


class PlanEngineError(Exception):
    """Base of all planengine errors. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, location: SourceLocation | None = None, hint: str | None = None):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        text = self.message
        if self.location is not None and str(self.location):
            text = f"{self.location}: {text}"
        if self.hint:
            text = f"{text}\n  hint: {self.hint}"
        return text


class UserError(PlanEngineError):
    """Bad input: the message says what was wrong, where, and how to fix it."""

    exit_code = 2


class SqlParseError(UserError):
    """The script could not be parsed."""


class ValidationError(UserError):
    """The script parsed but refers to something missing or ill-typed."""


class CatalogError(ValidationError):
    """A catalog object is missing, duplicated or inconsistent."""


class OptionError(ValidationError):
    """Connector or format options are wrong (unknown, missing, or bad values: all reported at once)."""


class UnsupportedQueryError(ValidationError):
    """The query is valid SQL but the engine cannot run it; the message names the node and the remedy."""


class PlanError(UserError):
    """A compiled plan file is malformed or cannot be written."""


class PlanMigrationRequired(PlanEngineError):
    """The plan is readable but uses node versions this engine only restores after migration."""

    exit_code = 3


class PlanIncompatible(PlanEngineError):
    """The plan (or snapshot) cannot be restored by this engine at all."""

    exit_code = 4


class InternalError(PlanEngineError):
    """A bug in planengine: please report it with the plan and the stack trace."""

    exit_code = 1
