"""The grammar guard's corpus: every Flink SQL statement the project keeps as test data or documentation.

Sources (docs/testing.md, "The grammar drift guard"):

* the conformance programs (``<conformance dir>/flink-programs/*.yaml``): each program's DDL as the conformance
  harness renders it (``ConformanceProgram.ddl``) and its statement;
* the golden programs ``tests/golden/programs/*.sql`` (with ``_prelude.sql``);
* the SQL of the end-to-end cases ``tests/e2e_cases/**/*.yaml`` and of the restore corpus
  ``tests/restore_corpus/programs/*.yaml`` (``ddl`` and ``statement``, ``{dir}`` filled in);
* the ```` ```sql ```` code blocks of ``README.md`` and ``docs/*.md``;
* ``tests/grammar/flink_statements.sql``: statement forms of Flink's SQL that none of the above shows (SHOW, ALTER,
  jobs, modules, JSON functions, ...), so the guard also watches the parts of our grammar the data never reaches.

Scripts are split with planengine's own splitter (``planengine.sql.splitter``: the same token stream and
statement-set rule the compile path uses), so both parsers see the same statement text. The only statement
handed to Flink in pieces is the legacy ``BEGIN STATEMENT SET; …; END`` block: our splitter keeps it as one
statement, while Flink's SQL client sends ``BEGIN STATEMENT SET``, each INSERT and ``END`` to the parser one by
one. Identical statements (the conformance DDL repeats a lot) are kept once, at their first place, with a count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from sqlglot.tokens import Token, TokenType

from planengine.sql import Flink
from planengine.sql.positions import line_and_column
from planengine.sql.splitter import split_statements
from planengine.testing.conformance_programs import default_conformance_dir, load_programs

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = "/data/grammar"  # stands in for ``{dir}`` of the YAML cases: a path, never read
# ``{pg:<table>}`` of the PostgreSQL cases: the jdbc options tests/runtime/connectors/test_postgres_cases.py puts there.
_PG_OPTIONS = re.compile(r"\{pg:(\w+)\}")
_PG_TEMPLATE = "'connector' = 'jdbc', 'url' = 'jdbc:postgresql://localhost:5432/test', 'table-name' = '{}'"
_DIALECT = Flink()
_SQL_FENCE = re.compile(r"^(?P<indent>[ \t]*)```sql[ \t]*\n(?P<body>.*?)^[ \t]*```", re.S | re.M)


class CorpusUnavailable(Exception):
    """A source of the corpus is missing (the conformance programs live outside the repository)."""


@dataclass(frozen=True)
class CorpusStatement:
    """One statement: where it first occurs, the text our parser gets and the pieces Flink's parser gets."""

    origin: str  # a path relative to the checkout (or the conformance dir's parent, for shared programs)
    line: int
    text: str
    flink_parts: tuple[str, ...]
    copies: int = 1

    @property
    def where(self) -> str:
        return f"{self.origin}:{self.line}"


@dataclass(frozen=True)
class Script:
    """One piece of SQL text and where it sits in its file, for the line numbers of its statements.

    ``file_text`` is set when the text is a YAML value: a folded scalar's lines are not the file's, so a
    statement's line is found by searching the file from ``first_line`` for its opening words. ``generated``:
    the text was rendered from data (the conformance DDL), so every statement is placed at ``first_line``."""

    origin: str
    first_line: int
    text: str
    file_text: str | None = None
    generated: bool = False


def split(script: Script) -> list[CorpusStatement]:
    """The script's statements, each with its line in the file.

    A script our tokenizer refuses is kept whole as one statement: the guard then asks both parsers about it
    (Flink refuses a text of several statements, which the report shows) rather than losing it silently.
    """
    try:
        statements = split_statements(script.text, _DIALECT.tokenize(script.text))
    except Exception:  # any front-end failure: keep the text for the comparison to show
        text = script.text.strip()
        return [CorpusStatement(script.origin, script.first_line, text, (text,))]
    return [CorpusStatement(script.origin, _line_in_file(script, s.text, s.line), s.text,
                            flink_parts(script.text, s.tokens)) for s in statements]


_YAML_KEY = re.compile(r"^(- )?[A-Za-z_][\w-]*: *[>|]?[-+]? *['\"]?")


def _line_in_file(script: Script, text: str, line_in_script: int) -> int:
    """The 1-based line of a statement in its file (``Script`` says how it is found)."""
    if script.generated:
        return script.first_line
    if script.file_text is None:
        return script.first_line + line_in_script - 1
    head = " ".join(text.split())[:40]
    lines = script.file_text.splitlines()
    for number in range(script.first_line, len(lines) + 1):
        line = " ".join(_YAML_KEY.sub("", lines[number - 1].strip()).split())
        if line and (line.startswith(head) or (len(line) >= 6 and head.startswith(line))):
            return number
    return script.first_line


def flink_parts(text: str, tokens: tuple[Token, ...]) -> tuple[str, ...]:
    """What Flink's parser is given for one statement of ours: the statement, or, for the legacy
    ``BEGIN STATEMENT SET; …; END`` block, its pieces between ``;`` (the SQL client parses them one by one).

    >>> t = "BEGIN STATEMENT SET; INSERT INTO a SELECT 1; END"
    >>> flink_parts(t, tuple(_DIALECT.tokenize(t)))
    ('BEGIN STATEMENT SET', 'INSERT INTO a SELECT 1', 'END')
    """
    words = [t.text.upper() for t in tokens[:3]]
    whole = text[tokens[0].start: tokens[-1].end + 1]
    if words != ["BEGIN", "STATEMENT", "SET"]:
        return (whole,)
    parts, current = [], []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                parts.append(text[current[0].start: current[-1].end + 1])
            current = []
        else:
            current.append(token)
    if current:
        parts.append(text[current[0].start: current[-1].end + 1])
    return tuple(parts)


# --- sources ---------------------------------------------------------------------------------------------------
def _relative(path: Path, root: Path = REPO) -> str:
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _key_line(file_text: str, key: str, start: int = 1) -> int:
    """The 1-based line of the first ``key:`` at or after line ``start`` (a YAML mapping key)."""
    pattern = re.compile(rf"^\s*(- )?{re.escape(key)}:")
    for number, line in enumerate(file_text.splitlines()[start - 1:], start):
        if pattern.match(line):
            return number
    return start


def conformance_scripts(conformance_dir: Path | None = None) -> list[Script]:
    """Each conformance program's rendered DDL (its tables and functions) and its statement."""
    base = Path(conformance_dir) if conformance_dir else default_conformance_dir(REPO)
    folder = base / "flink-programs"
    if not folder.is_dir():
        raise CorpusUnavailable(f"no conformance programs in {folder}: set CONFORMANCE_DIR to the folder holding "
                                "flink-programs/ (tests/conformance reads the same)")
    scripts = []
    for program in load_programs(base):
        path = folder / f"{program.family}.yaml"
        if not path.exists():  # a family named differently from its file: find the file that holds the id
            path = next(p for p in sorted(folder.glob("*.yaml")) if f"id: {program.id}" in p.read_text())
        file_text = path.read_text(encoding="utf-8")
        origin = _relative(path, base.parent.parent)
        at = next((n for n, line in enumerate(file_text.splitlines(), 1)
                   if re.match(rf"^\s*- id: {re.escape(program.id)}\s*$", line)), 1)
        ddl = program.ddl(DATA_DIR, "tests.conformance.udfs" if program.functions else None)
        scripts.append(Script(origin, at, ddl, generated=True))
        scripts.append(Script(origin, _key_line(file_text, "statement", at), program.statement, file_text))
    return scripts


def sql_file_scripts(folder: Path = REPO / "tests" / "golden" / "programs", pattern: str = "*.sql") -> list[Script]:
    """Every ``*.sql`` of a folder (the golden programs by default), a ``_prelude.sql`` first."""
    paths = sorted(folder.glob(pattern), key=lambda p: (not p.name.startswith("_"), p.name))
    return [Script(_relative(p), 1, p.read_text(encoding="utf-8")) for p in paths]


def yaml_case_scripts(paths: Iterable[Path]) -> list[Script]:
    """The ``ddl`` and ``statement`` of each YAML case (``{dir}`` replaced by a fixed path, ``{pg:<table>}`` by
    jdbc options, as the tests that run them do)."""
    scripts = []
    for path in paths:
        file_text = path.read_text(encoding="utf-8")
        spec = yaml.safe_load(file_text) or {}
        for key in ("ddl", "statement"):
            if spec.get(key):
                text = _PG_OPTIONS.sub(lambda m: _PG_TEMPLATE.format(m.group(1)),
                                       str(spec[key]).replace("{dir}", DATA_DIR))
                scripts.append(Script(_relative(path), _key_line(file_text, key), text, file_text))
    return scripts


def markdown_scripts(paths: Iterable[Path]) -> list[Script]:
    """The body of each ```` ```sql ```` fence, with its first line's number in the file."""
    scripts = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for match in _SQL_FENCE.finditer(text):
            first_line = line_and_column(text, match.start("body"))[0]
            scripts.append(Script(_relative(path), first_line, match.group("body")))
    return scripts


def all_scripts(conformance_dir: Path | None = None) -> dict[str, list[Script]]:
    """The corpus's scripts by source (the names the report counts under)."""
    return {
        "conformance programs": conformance_scripts(conformance_dir),
        "golden programs": sql_file_scripts(),
        "e2e cases": yaml_case_scripts(sorted((REPO / "tests" / "e2e_cases").rglob("*.yaml"))),
        "restore corpus": yaml_case_scripts(sorted((REPO / "tests" / "restore_corpus" / "programs").glob("*.yaml"))),
        "docs": markdown_scripts([REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]),
        "Flink statement forms": sql_file_scripts(REPO / "tests" / "grammar", "flink_statements.sql"),
    }


@dataclass(frozen=True)
class Corpus:
    statements: list[CorpusStatement]  # distinct, in first-seen order
    total: int  # with repetitions
    by_source: dict[str, int]  # statements (with repetitions) per source


def collect(conformance_dir: Path | None = None) -> Corpus:
    """The whole corpus, identical statements folded into their first occurrence."""
    seen: dict[str, CorpusStatement] = {}
    by_source: dict[str, int] = {}
    total = 0
    for source, scripts in all_scripts(conformance_dir).items():
        count = 0
        for statement in _statements(scripts):
            count += 1
            first = seen.get(statement.text)
            seen[statement.text] = statement if first is None else CorpusStatement(
                first.origin, first.line, first.text, first.flink_parts, first.copies + 1)
        by_source[source] = count
        total += count
    return Corpus(list(seen.values()), total, by_source)


def _statements(scripts: Iterable[Script]) -> Iterator[CorpusStatement]:
    for script in scripts:
        yield from split(script)
