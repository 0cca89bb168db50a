"""The grammar drift guard: Flink's parser and ours on the same corpus, and what a difference means.

Why: planengine's SQL front end extends sqlglot through its private parser methods, so a sqlglot release can
change what we parse without any error of ours. Flink's own parser (``tests/grammar/flink.py``) is the reference:
for every statement of the corpus (``tests/grammar/corpus.py``) that Flink accepts, our parser
(``planengine.sql.parse_script``: tokenize, split, parse, convert to our statement dataclasses; the compile path's
parse, without planning) must either parse it or refuse it *by name* (an ``UnsupportedQueryError``, or a message
saying "not supported"/"unsupported"). A generic parse error there is drift (or a gap) and fails the guard, unless
``ALLOW_LIST`` says why the difference is deliberate. Statements we accept and Flink rejects are reported, never
failed: some are our leniency (Flink reserves words such as ``VIEWS``), and the corpus decides nothing there.

    python -m tests.grammar.drift [--all]      # the report (``--all``: every statement with both verdicts)
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass

from planengine.errors import PlanEngineError, UnsupportedQueryError
from planengine.runtime.connectors import maven_jars
from planengine.sql import parse_script
from tests.grammar import flink
from tests.grammar.corpus import Corpus, CorpusStatement, collect

# Outcomes, one per statement.
BOTH = "accepted by both"
REFUSED = "Flink only: refused here as unsupported"
GAP = "Flink only: parse error here"
ALLOWED = "Flink only: allow-listed"
OURS_ONLY = "ours only: Flink rejects"
NEITHER = "rejected by both"
OUTCOMES = (BOTH, REFUSED, GAP, ALLOWED, OURS_ONLY, NEITHER)

#: The Flink release whose parser is the reference (the lock's ``flink-sql-parser`` jar).
FLINK_VERSION = next(a.coordinate.split(":")[2] for a in maven_jars.read_lock(flink.GROUP)
                     if a.coordinate.startswith("org.apache.flink:flink-sql-parser:"))
_UNSUPPORTED = re.compile(r"not supported|unsupported", re.IGNORECASE)


@dataclass(frozen=True)
class Allowed:
    """A statement Flink accepts that we deliberately do not parse: its file, a fragment of its text (matched in
    the whitespace-normalized statement, starting at a word: ``LOAD MODULE`` does not match ``UNLOAD MODULE``) and
    the reason. A gap left for later says "parser gap: …"."""

    origin: str
    contains: str
    reason: str

    def matches(self, statement: CorpusStatement) -> bool:
        pattern = r"(?<!\w)" + re.escape(self.contains)
        return statement.origin == self.origin and re.search(pattern, " ".join(statement.text.split())) is not None


# Known differences, each with its reason; "parser gap: …" marks one nobody has decided on yet. On 2026-12-07 every
# statement of the project's data that Flink 2.3.0 accepts is parsed by planengine; the entries are all from
# tests/grammar/flink_statements.sql (statement forms the data never shows; the Flink statements planengine does
# not run, LOAD MODULE, ADD JAR, SHOW JOBS, ..., are refused by name in planengine/sql/refusals.py). An entry that
# no longer matches a failing statement fails the guard, so the list cannot outlive its reasons.
_FORMS = "tests/grammar/flink_statements.sql"
ALLOW_LIST: tuple[Allowed, ...] = (
    Allowed(_FORMS, "LANGUAGE JAVA USING JAR", "parser gap: CREATE FUNCTION ... USING JAR fails with \"unexpected "
            "'USING'\" instead of a refusal (planengine loads no jars; Python functions need none)"),
    Allowed(_FORMS, "EXECUTE SELECT", "parser gap: tests/sql/test_errors.py asserts \"expected INSERT, STATEMENT SET "
            "or PLAN after EXECUTE\" for it; Flink 2.3 parses EXECUTE <query> (SqlExecute)"),
    Allowed(_FORMS, "RETURNING INT DEFAULT 0 ON EMPTY", "parser gap: JSON_VALUE's RETURNING / ON EMPTY / ON ERROR "
            "clauses do not parse (plain JSON_VALUE(s, path) does)"),
    Allowed(_FORMS, "SELECT X'ab'", "parser gap: binary string literals X'..' do not tokenize as literals"),
)


@dataclass(frozen=True)
class OurVerdict:
    """Our parser's answer: ``parsed``, ``unsupported`` (refused by name) or ``error`` (anything else)."""

    kind: str
    message: str = ""


def our_verdict(text: str, source: str | None = None) -> OurVerdict:
    """Parse ``text`` as the compile path does (no planning, no catalog)."""
    try:
        parse_script(text, source)
    except UnsupportedQueryError as error:
        return OurVerdict("unsupported", _first_line(error))
    except PlanEngineError as error:
        message = _first_line(error)
        return OurVerdict("unsupported" if _UNSUPPORTED.search(message) else "error", message)
    except Exception as error:  # a crash inside sqlglot is the worst kind of drift: report it
        return OurVerdict("error", f"internal error {type(error).__name__}: {error}".splitlines()[0])
    return OurVerdict("parsed")


def _first_line(error: PlanEngineError) -> str:
    reason = getattr(error, "reason", None)  # a SqlParseError's message without the caret excerpt
    return (reason or error.message).splitlines()[0] if (reason or error.message) else type(error).__name__


@dataclass(frozen=True)
class Result:
    statement: CorpusStatement
    flink: flink.FlinkVerdict
    ours: OurVerdict
    outcome: str
    allowed: Allowed | None = None


def flink_verdicts(statements: list[CorpusStatement]) -> list[flink.FlinkVerdict]:
    """Flink's verdict per statement: accepted when every piece is (``flink_parts``), else the first refusal."""
    answers = iter(flink.parse([part for s in statements for part in s.flink_parts]))
    verdicts = []
    for statement in statements:
        pieces = [next(answers) for _ in statement.flink_parts]
        refused = [p for p in pieces if not p.accepted]
        verdicts.append(refused[0] if refused else flink.FlinkVerdict(True, "+".join(str(p.node) for p in pieces)))
    return verdicts


def classify(statement: CorpusStatement, theirs: flink.FlinkVerdict, ours: OurVerdict,
             allow_list: tuple[Allowed, ...] = ALLOW_LIST) -> Result:
    if theirs.accepted:
        if ours.kind == "parsed":
            outcome = BOTH
        elif ours.kind == "unsupported":
            outcome = REFUSED
        else:
            allowed = next((a for a in allow_list if a.matches(statement)), None)
            return Result(statement, theirs, ours, ALLOWED if allowed else GAP, allowed)
    else:
        outcome = OURS_ONLY if ours.kind == "parsed" else NEITHER
    return Result(statement, theirs, ours, outcome)


@dataclass(frozen=True)
class Report:
    corpus: Corpus
    results: list[Result]
    seconds: float
    stale: list[Allowed]  # allow-list entries that matched no failing statement

    def of(self, outcome: str) -> list[Result]:
        return [r for r in self.results if r.outcome == outcome]

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.outcome for r in self.results)

    @property
    def failed(self) -> bool:
        return bool(self.of(GAP) or self.stale)

    def summary(self) -> str:
        """One line: corpus size and the count of each outcome."""
        counts = self.counts
        sources = ", ".join(f"{n} {name}" for name, n in self.corpus.by_source.items())
        return (f"grammar drift guard (Flink {FLINK_VERSION}): {len(self.results)} distinct statements "
                f"({self.corpus.total} with repeats: {sources}); "
                + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES) + f"; {self.seconds:.1f} s")

    def text(self, everything: bool = False) -> str:
        """The summary, then the statements worth a look: gaps, stale allow-list entries, ours-only, refused."""
        lines = [self.summary()]
        for outcome, note in ((GAP, "Flink accepts these, and our parser fails with a generic error: drift or a gap"
                                    " (fix the parser, or allow-list with the reason in tests/grammar/drift.py)"),
                              (ALLOWED, "allow-listed"), (REFUSED, "refused by name"),
                              (OURS_ONLY, "we accept these, Flink's parser rejects them (reported, not failed)")):
            chosen = self.of(outcome)
            if chosen:
                lines.append(f"\n{outcome} ({len(chosen)}): {note}")
                lines.extend(describe(r) for r in chosen)
        if self.stale:
            lines.append(f"\nallow-list entries matching no failing statement ({len(self.stale)}): remove them")
            lines.extend(f"  {a.origin}: {a.contains!r} ({a.reason})" for a in self.stale)
        if everything:
            lines.append("\nevery statement:")
            lines.extend(describe(r) for r in self.results)
        return "\n".join(lines)


def describe(result: Result) -> str:
    s = result.statement
    text = " ".join(s.text.split())
    text = text if len(text) <= 160 else text[:157] + "..."
    lines = [f"  {s.where}: {text}"]
    theirs = f"accepted ({result.flink.node})" if result.flink.accepted else result.flink.error
    lines.append(f"      Flink: {theirs}")
    lines.append(f"      ours:  {result.ours.kind}{': ' + result.ours.message if result.ours.message else ''}")
    if result.allowed:
        lines.append(f"      allowed: {result.allowed.reason}")
    return "\n".join(lines)


def compare(corpus: Corpus, theirs: list[flink.FlinkVerdict], allow_list: tuple[Allowed, ...] = ALLOW_LIST,
            started: float | None = None) -> Report:
    """Our parser on each statement of ``corpus``, judged against Flink's verdicts ``theirs`` (same order)."""
    results = [classify(s, t, our_verdict(s.text, s.origin), allow_list) for s, t in zip(corpus.statements, theirs,
                                                                                          strict=True)]
    used = {id(r.allowed) for r in results if r.allowed is not None}
    stale = [a for a in allow_list if id(a) not in used]
    return Report(corpus, results, time.monotonic() - (started or time.monotonic()), stale)


def run(corpus: Corpus | None = None, allow_list: tuple[Allowed, ...] = ALLOW_LIST) -> Report:
    """Both parsers over the corpus (one JVM for Flink's side)."""
    started = time.monotonic()
    corpus = corpus or collect()
    return compare(corpus, flink_verdicts(corpus.statements), allow_list, started)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="list every statement with both verdicts")
    args = ap.parse_args(argv)
    try:
        report = run()
    except flink.FlinkParserUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.text(everything=args.all))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
