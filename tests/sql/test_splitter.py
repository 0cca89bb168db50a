"""Statement boundaries: ';' only splits outside strings, identifiers, comments, hints and BEGIN ... END."""

from __future__ import annotations

import pytest

from planengine.sql import Flink
from planengine.sql.splitter import split_statements


def split(text: str) -> list[tuple[str, int, int]]:
    return [(s.text, s.line, s.column) for s in split_statements(text, Flink().tokenize(text))]


@pytest.mark.parametrize(
    ("script", "texts"),
    [
        ("SELECT 'a;b'; SELECT 2", ["SELECT 'a;b'", "SELECT 2"]),
        ("SELECT 'it''s;'; SELECT 2", ["SELECT 'it''s;'", "SELECT 2"]),
        ("SELECT `we;ird` FROM t; SELECT 2", ["SELECT `we;ird` FROM t", "SELECT 2"]),
        ("SELECT 1 -- not; here\n; SELECT 2", ["SELECT 1", "SELECT 2"]),
        ("SELECT /* a; b */ 1; SELECT 2", ["SELECT /* a; b */ 1", "SELECT 2"]),
        ("SELECT /*+ STATE_TTL('t'='1d;') */ 1; SELECT 2", ["SELECT /*+ STATE_TTL('t'='1d;') */ 1", "SELECT 2"]),
        ("SELECT * FROM t /*+ OPTIONS('a'=';') */; SELECT 2", ["SELECT * FROM t /*+ OPTIONS('a'=';') */", "SELECT 2"]),
        (";;SELECT 1;;;SELECT 2;;", ["SELECT 1", "SELECT 2"]),
        ("SELECT 1", ["SELECT 1"]),
        ("SELECT 1;\n-- trailing comment\n", ["SELECT 1"]),
        ("", []),
    ],
)
def test_semicolons_outside_tokens_only(script, texts):
    assert [text for text, _, _ in split(script)] == texts


STATEMENT_SET_SCRIPT = """SET 'a' = 'b';
EXECUTE STATEMENT SET BEGIN
  INSERT INTO x SELECT CASE WHEN a THEN 1 ELSE 2 END FROM s;
  INSERT INTO y SELECT CASE a WHEN 1 THEN 'one' END FROM s;
END;
BEGIN STATEMENT SET;
  INSERT INTO z SELECT 1;
END;
COMPILE PLAN 'p' FOR STATEMENT SET BEGIN INSERT INTO x SELECT 1; END;
SELECT 3"""


def test_statement_set_blocks_keep_inner_semicolons_and_case_end():
    statements = split(STATEMENT_SET_SCRIPT)
    assert [(line, column) for _, line, column in statements] == [(1, 1), (2, 1), (6, 1), (9, 1), (10, 1)]
    assert statements[1][0].startswith("EXECUTE STATEMENT SET BEGIN") and statements[1][0].endswith("END")
    assert statements[1][0].count(";") == 2
    assert statements[2][0] == "BEGIN STATEMENT SET;\n  INSERT INTO z SELECT 1;\nEND"
    assert statements[3][0] == "COMPILE PLAN 'p' FOR STATEMENT SET BEGIN INSERT INTO x SELECT 1; END"


def test_line_and_column_tracking_with_leading_comments_and_indentation():
    script = "/* header\n   spans lines */\n\n    SELECT 1;  SELECT\n2;\n\tSHOW TABLES"
    assert split(script) == [("SELECT 1", 4, 5), ("SELECT\n2", 4, 16), ("SHOW TABLES", 6, 2)]


def test_statement_indexes_are_one_based_and_skip_empty_statements():
    script = "SELECT 1;;  ;SELECT 2"
    statements = split_statements(script, Flink().tokenize(script))
    assert [s.index for s in statements] == [1, 2]
    assert statements[1].start == script.index("SELECT 2")
