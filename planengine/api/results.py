"""``TableResult``: what executing one statement produced, and how the SQL client prints it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planengine.api.tableau import DEFAULT_MAX_WIDTH, render_table


@dataclass
class TableResult:
    """What executing one statement produced: a message, rows (SHOW), text (EXPLAIN) or a plan."""

    kind: str  # OK | ROWS | EXPLAIN | PLAN | JOB
    message: str = ""
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    plan: Any = None  # planengine.plan.compiled_plan.CompiledPlan
    job: Any = None
    columns: tuple[str, ...] = ()  # ROWS: the column headers (printed as a table like Flink's SQL client)
    max_width: int = DEFAULT_MAX_WIDTH  # ROWS: table.display.max-column-width when the result was made

    def __str__(self) -> str:
        if self.kind == "ROWS":
            if not self.columns:
                return "\n".join(" | ".join(str(v) for v in r) for r in self.rows)
            return render_table(self.columns, self.rows, max_width=self.max_width, footer=self.message)
        return self.message
