"""Mutated Flink SQL scripts for fuzzing the compile path, reproducible from a seed.

Seeds are real programs (the golden programs with their prelude, and the conformance programs' DDL plus
statement), so most mutants get past the tokenizer and exercise the parser, the planner and the plan
encoder rather than dying on the first byte. Each mutation imitates a class of input that broke the front
end once (issue 20): token edits, deletion, duplication, deep nesting, huge literals, unicode, NUL bytes,
invalid UTF-8, truncation. Inputs are ``bytes`` because invalid UTF-8 is one of the classes.

The same module serves the bounded test (``tests/fuzz/test_sql_fuzz.py``) and the long campaign
(``benchmarks/fuzz/sql_campaign.py``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "programs"
CONFORMANCE = Path("/work/shared/conformance")

_TOKEN = re.compile(r"'(?:[^']|'')*'|`[^`]*`|\w+|\s+|.", re.DOTALL)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_VOCABULARY = (
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "HAVING", "ORDER", "LIMIT", "JOIN", "ON", "AS", "AND", "OR", "NOT",
    "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "INTERVAL", "SECOND", "MAP", "ARRAY", "ROW", "WATERMARK", "FOR",
    "PRIMARY", "KEY", "WITH", "TABLE", "INSERT", "INTO", "VALUES", "UNION", "ALL", "NULL", "TRUE", "(", ")", ",",
    ";", "*", "+", "-", "/", "=", "<", ">", "<>", "'", "`", ".", "0", "1", "-1", "''", "'x'", "BEGIN", "STATEMENT",
    "SET", "EXECUTE", "PLAN", "COMPILE", "EXPLAIN", "TUMBLE", "DESCRIPTOR", "OVER", "PARTITION", "ROW_NUMBER()",
    "DECIMAL(38, 18)", "TIMESTAMP(3)", "STRING", "BIGINT", "MAP<STRING>", "ARRAY<>", "/*+ OPTIONS('a'='b') */",
    "-- c\n", "/*", "*/", "${env:X}", "'connector'", "'path'", "''''",
)
_UNICODE = ("é", "ß", "Ω", "你好", "🙂", "\u200b", "\u202e", "\ufeff", "\U0001f600", "ǅ", "İ", "\u00a0", "\r",
            "\t", "\x0b", "\x1b")


@dataclass(frozen=True)
class Seed:
    """One compilable (or nearly) script: its name says where it came from, for replay files."""

    name: str
    text: str


@dataclass(frozen=True)
class Mutant:
    seed: str
    mutation: str
    data: bytes


@cache
def seeds() -> tuple[Seed, ...]:
    """Golden programs (prelude + program) and conformance programs (DDL + statement), sorted by name."""
    found: list[Seed] = []
    prelude = (GOLDEN / "_prelude.sql").read_text()
    for path in sorted(GOLDEN.glob("*.sql")):
        if not path.name.startswith("_"):
            found.append(Seed(f"golden/{path.stem}", f"{prelude}\n{path.read_text()}"))
    if (CONFORMANCE / "flink-programs").is_dir():
        from planengine.testing.conformance_programs import load_programs

        for program in load_programs(CONFORMANCE):
            if program.functions:
                continue  # UDF classes live in the test harness; their absence is not what we fuzz
            found.append(Seed(f"conformance/{program.id}", f"{program.ddl('/data/fuzz')}\n{program.statement};"))
    return tuple(found)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _significant(tokens: list[str]) -> list[int]:
    return [i for i, t in enumerate(tokens) if not t.isspace()]


# --- mutations: each takes the text and a Random, returns bytes --------------------------------------------
def token_edit(text: str, rng: random.Random) -> bytes:
    tokens = _tokens(text)
    for _ in range(rng.randint(1, 3)):
        idx = _significant(tokens)
        if idx:
            tokens[rng.choice(idx)] = rng.choice(_VOCABULARY)
    return "".join(tokens).encode()


def token_delete(text: str, rng: random.Random) -> bytes:
    tokens = _tokens(text)
    idx = _significant(tokens)
    if idx:
        start = rng.choice(idx)
        del tokens[start : start + rng.randint(1, 4)]
    return "".join(tokens).encode()


def token_duplicate(text: str, rng: random.Random) -> bytes:
    tokens = _tokens(text)
    if tokens:
        start = rng.randrange(len(tokens))
        span = tokens[start : start + rng.randint(1, 12)]
        at = rng.randrange(len(tokens))
        tokens[at:at] = span * rng.randint(1, 3)
    return "".join(tokens).encode()


def _insert_select(text: str) -> tuple[str, str] | None:
    """The script up to the projection of its last SELECT, and the rest."""
    at = text.upper().rfind("SELECT ")
    return None if at < 0 else (text[: at + 7], text[at + 7 :])


def deep_nesting(text: str, rng: random.Random) -> bytes:
    """Wrap the first projected item (or the whole query) in one of the shapes BI tools generate."""
    split = _insert_select(text)
    if split is None:
        return text.encode()
    head, tail = split
    depth = rng.choice((10, 50, 120, 200, 400, 1500))
    terms = rng.choice((100, 1000, 5000))
    shape = rng.choice(("parens", "case", "subquery", "sum", "and", "not", "function"))
    if shape == "parens":
        return f"{head}{'(' * depth}1{')' * depth} + {tail}".encode()
    if shape == "case":
        expr = "1"
        for _ in range(min(depth, 300)):
            expr = f"CASE WHEN 1 = 1 THEN {expr} ELSE 0 END"
        return f"{head}{expr} + {tail}".encode()
    if shape == "subquery":
        query = "SELECT 1 AS x"
        for _ in range(min(depth, 300)):
            query = f"SELECT x FROM ({query})"
        return f"{head}({query}) + {tail}".encode()
    if shape == "sum":
        return f"{head}{' + '.join(['1'] * terms)} + {tail}".encode()
    if shape == "and":
        where = " AND ".join(["1 = 1"] * terms)
        return f"{head}CASE WHEN {where} THEN 1 ELSE 0 END + {tail}".encode()
    if shape == "not":
        return f"{head}CASE WHEN {'NOT ' * depth}TRUE THEN 1 ELSE 0 END + {tail}".encode()
    return f"{head}{'ABS(' * depth}1{')' * depth} + {tail}".encode()


def huge_literal(text: str, rng: random.Random) -> bytes:
    choices = (
        "9" * rng.choice((20, 40, 400, 5000)),
        "1e999", "-1e-999", "0." + "0" * 500 + "1", "99999999999999999999999999999999999999.5",
        "INTERVAL '999999999999999999999999999999' SECOND", "INTERVAL 'abc' SECOND",
        "INTERVAL '1e999' DAY", "INTERVAL 'NaN' SECOND", "INTERVAL '99999999999' YEAR",
        "INTERVAL '1-x' YEAR TO MONTH", "'" + "x" * rng.choice((1000, 100_000)) + "'",
        "DECIMAL '1'", "DATE '99999-01-01'", "TIMESTAMP '2020-13-45 25:61:61'",
        "CAST('x' AS DECIMAL(99, 200))", "CAST(1 AS VARCHAR(99999999999))",
    )
    numbers = list(_NUMBER.finditer(text))
    if numbers and rng.random() < 0.5:
        m = rng.choice(numbers)
        return (text[: m.start()] + rng.choice(choices) + text[m.end() :]).encode()
    split = _insert_select(text)
    if split is None:
        return text.encode()
    return f"{split[0]}{rng.choice(choices)} AS huge, {split[1]}".encode()


def unicode_insert(text: str, rng: random.Random) -> bytes:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(_UNICODE))
    return "".join(chars).encode("utf-8", "surrogatepass")


def nul_bytes(text: str, rng: random.Random) -> bytes:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 3)):
        data.insert(rng.randint(0, len(data)), 0)
    return bytes(data)


def invalid_utf8(text: str, rng: random.Random) -> bytes:
    data = bytearray(text.encode())
    bad = rng.choice((b"\xff", b"\xc3", b"\xe2\x82", b"\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"))
    at = rng.randint(0, len(data))
    data[at:at] = bad
    return bytes(data)


def truncate(text: str, rng: random.Random) -> bytes:
    return text[: rng.randint(0, len(text))].encode()


def structural(text: str, rng: random.Random) -> bytes:
    """Statements compile must refuse or handle: side-effect statements, odd types, secrets, bad sink paths."""
    extra = rng.choice((
        "SELECT 1;", "EXECUTE PLAN '/tmp/planengine-fuzz-never.json';",
        "COMPILE PLAN '/tmp/planengine-fuzz-never.json' FROM '/tmp/planengine-fuzz-old.json';",
        "CREATE TABLE m (a MAP<STRING>) WITH ('connector' = 'blackhole');",
        "CREATE TABLE w (ts TIMESTAMP(3), WATERMARK FOR AS ts) WITH ('connector' = 'blackhole');",
        "CREATE TABLE w (ts TIMESTAMP(3), WATERMARK FOR ts AS) WITH ('connector' = 'blackhole');",
        "CREATE TABLE k (a INT) WITH ('connector' = 'kafka', 'password' = 'hunter2' 'x');",
        "CREATE TABLE e (a INT, b AS) WITH ('connector' = 'blackhole');",
        "CREATE TABLE f (a INT) WITH ('connector' = 'filesystem', 'path' = '', 'format' = 'json');",
        "CREATE TABLE f (a INT) WITH ('connector' = 'filesystem', 'path' = 'a\x00b', 'format' = 'json');",
        "SET 'table.exec.state.ttl' = '99999999999999999999 d';",
        "EXPLAIN PLAN '/nonexistent/plan.json';", "SHOW TABLES;", "DESCRIBE clicks;",
    ))
    statements = text.split(";")
    at = rng.randint(0, max(0, len(statements) - 1))
    statements.insert(at, "\n" + extra.rstrip(";"))
    return ";".join(statements).encode()


MUTATIONS: dict[str, Callable[[str, random.Random], bytes]] = {
    "token-edit": token_edit,
    "token-delete": token_delete,
    "token-duplicate": token_duplicate,
    "deep-nesting": deep_nesting,
    "huge-literal": huge_literal,
    "unicode": unicode_insert,
    "nul-bytes": nul_bytes,
    "invalid-utf8": invalid_utf8,
    "truncate": truncate,
    "structural": structural,
}


def mutants(seed: int, count: int) -> Iterator[Mutant]:
    """``count`` mutants, the same ones for the same ``seed`` (one Random drives every choice)."""
    rng = random.Random(seed)
    pool = seeds()
    names = sorted(MUTATIONS)
    for _ in range(count):
        source = rng.choice(pool)
        mutation = rng.choice(names)
        text = source.text
        data = MUTATIONS[mutation](text, rng)
        if rng.random() < 0.2:  # stack a second mutation now and then: the fuzzer's best finds were combos
            second = rng.choice(names)
            data = MUTATIONS[second](data.decode("utf-8", "replace"), rng)
            mutation = f"{mutation}+{second}"
        yield Mutant(source.name, mutation, data)
