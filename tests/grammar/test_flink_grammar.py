"""The grammar drift guard (issue 22): what Flink's own parser accepts, ours parses or refuses by name.

The comparison itself starts a JVM (Flink's parser), so it declares ``jvm_process`` and runs in the spark tier;
the corpus, the judgement and the missing-jar failure are checked here without one (fast tier), so a broken
guard fails in the first minutes. docs/testing.md, "The grammar drift guard".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planengine.errors import SqlParseError
from planengine.runtime.connectors import maven_jars
from planengine.sql import parse_script
from tests.grammar import drift, flink
from tests.grammar.corpus import REPO, Corpus, CorpusStatement, Script, collect, split
from tests.grammar.drift import ALLOWED, BOTH, GAP, NEITHER, OURS_ONLY, REFUSED, Allowed

# Flink's parser must accept most of the corpus: a harness that rejected everything (a wrong lexical setting, a
# broken class path) would otherwise make every comparison vacuous. 524 of 531 on 2026-12-07.
MIN_ACCEPTED_SHARE = 0.9


@pytest.mark.usefixtures("jvm_process")  # java (Flink's parser) and, when its classes are not cached, javac
def test_flink_accepts_no_statement_that_our_parser_fails_on(drift_summary: Callable[[str], None]) -> None:
    try:
        report = drift.run()
    except flink.FlinkParserUnavailable as error:
        pytest.fail(str(error), pytrace=False)  # never a skip: a skipped guard reads as a passing one
    drift_summary(report.text())
    accepted = sum(r.flink.accepted for r in report.results)
    assert accepted >= MIN_ACCEPTED_SHARE * len(report.results), report.text(everything=True)
    assert not report.failed, report.text()


@pytest.mark.usefixtures("jvm_process")
def test_a_jar_missing_from_the_class_path_fails_the_run_instead_of_rejecting_statements() -> None:
    """Calcite wraps whatever its generated parser throws, a NoClassDefFoundError too, into a parse exception: the
    harness must not read that as Flink refusing the statement (this is also how the jar set was kept minimal)."""
    try:
        jars = flink.jars()
    except flink.FlinkParserUnavailable as error:
        pytest.fail(str(error), pytrace=False)
    assert [v.accepted for v in flink.parse(["SELECT INTERVAL '1' SECOND", "SELEC 1 FROM"], class_path=jars)] == [
        True, False]
    without_math = [jar for jar in jars if not jar.name.startswith("commons-math3-")]  # Calcite's TimeFrames needs it
    with pytest.raises(RuntimeError, match=r"(?s)exit status 3.*NoClassDefFoundError: org/apache/commons/math3"):
        flink.parse(["SELECT INTERVAL '1' SECOND"], class_path=without_math)


# --- without a JVM ---------------------------------------------------------------------------------------------
def test_the_corpus_holds_every_source() -> None:
    corpus = collect()
    assert set(corpus.by_source) == {"conformance programs", "golden programs", "e2e cases", "restore corpus", "docs",
                                     "Flink statement forms"}
    assert all(count > 0 for count in corpus.by_source.values()), corpus.by_source
    assert corpus.total == sum(corpus.by_source.values()) >= len(corpus.statements) > 300
    golden = [s for s in corpus.statements if s.origin.startswith("tests/golden/programs/")]
    assert len({s.origin for s in golden}) == len(list((REPO / "tests/golden/programs").glob("*.sql")))
    for statement in corpus.statements:
        if not statement.origin.startswith("shared/"):
            lines = (REPO / statement.origin).read_text().splitlines()
            assert 1 <= statement.line <= len(lines), statement.where


def test_each_statement_is_placed_on_the_line_where_it_starts() -> None:
    """The failure list names file and line: the line must hold the statement's first words (YAML values too)."""
    misplaced = []
    for statement in collect().statements:
        if statement.origin.startswith("shared/"):
            continue  # the conformance DDL is rendered from data, placed at its program's `- id:` line
        line = (REPO / statement.origin).read_text().splitlines()[statement.line - 1]
        if " ".join(statement.text.split()[:2]) not in " ".join(line.split()):
            misplaced.append(f"{statement.where}: {line.strip()!r} for {statement.text[:40]!r}")
    assert misplaced == []


def test_the_legacy_statement_set_reaches_flink_in_pieces() -> None:
    [statement] = split(Script("x.sql", 1, "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\n"
                                          "INSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t;\nEND;"))
    assert statement.flink_parts == ("BEGIN STATEMENT SET", "INSERT INTO a SELECT 1",
                                     "INSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t", "END")
    [one] = split(Script("y.sql", 3, "\n\nEXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;"))
    assert one.flink_parts == (one.text,) and one.line == 5


def judged(text: str, flink_accepts: bool = True,
           allow_list: tuple[Allowed, ...] = ()) -> drift.Report:
    statement = CorpusStatement("tests/grammar/example.sql", 7, text, (text,))
    verdict = flink.FlinkVerdict(True, "SqlNode") if flink_accepts else flink.FlinkVerdict(False, error="nope")
    return drift.compare(Corpus([statement], 1, {"example": 1}), [verdict], allow_list)


def test_a_generic_parse_error_on_a_statement_flink_accepts_fails_the_guard_with_its_place() -> None:
    report = judged("SELECT a FROM t WHERE")  # as if Flink accepted it: a generic error of ours
    assert [r.outcome for r in report.results] == [GAP] and report.failed
    assert "tests/grammar/example.sql:7: SELECT a FROM t WHERE" in report.text()


def test_a_refusal_by_name_and_an_allow_listed_statement_pass() -> None:
    refused = judged("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES A.v AS v PATTERN (A) "
                     "DEFINE A AS A.v > 1)")
    assert [r.outcome for r in refused.results] == [REFUSED] and not refused.failed
    entry = Allowed("tests/grammar/example.sql", "FROM t WHERE", "an example")
    allowed = judged("SELECT a  FROM\n  t WHERE", allow_list=(entry,))
    assert [r.outcome for r in allowed.results] == [ALLOWED] and not allowed.failed
    assert "allowed: an example" in allowed.text()
    load = Allowed(entry.origin, "LOAD MODULE", "matched from the start of a word")
    assert not load.matches(CorpusStatement(entry.origin, 1, "UNLOAD MODULE hive", ("UNLOAD MODULE hive",)))


def test_a_stale_allow_list_entry_fails_the_guard() -> None:
    report = judged("SELECT 1", allow_list=(Allowed("tests/grammar/example.sql", "SELECT 1", "was a gap once"),))
    assert [r.outcome for r in report.results] == [BOTH] and report.failed
    assert "remove them" in report.text()


def test_what_flink_rejects_is_reported_never_failed() -> None:
    ours_only = judged("SELECT 1", flink_accepts=False)
    neither = judged("SELEC 1 FROM", flink_accepts=False)
    assert [r.outcome for r in ours_only.results] == [OURS_ONLY] and not ours_only.failed
    assert [r.outcome for r in neither.results] == [NEITHER] and not neither.failed


def test_every_allow_list_entry_names_a_file_of_the_corpus_and_a_reason() -> None:
    for entry in drift.ALLOW_LIST:
        assert entry.reason.strip() and entry.contains.strip(), entry
        assert entry.origin.startswith("shared/") or (REPO / entry.origin).is_file(), entry


def test_missing_jars_fail_with_the_command_that_fetches_them(tmp_path: Path) -> None:
    with pytest.raises(flink.FlinkParserUnavailable, match="maven_jars fetch flink-sql-parser"):
        flink.jars(tmp_path)
    artifact = maven_jars.read_lock(flink.GROUP)[0]
    (tmp_path / flink.GROUP).mkdir()
    (tmp_path / flink.GROUP / artifact.file_name).write_bytes(b"not the pinned jar")
    with pytest.raises(flink.FlinkParserUnavailable, match=f"is not the jar jars.lock pins for {artifact.coordinate}"):
        flink.jars(tmp_path)


def test_the_lock_pins_flink_2_3_with_the_calcite_its_build_names() -> None:
    pinned = {a.coordinate.rsplit(":", 1)[0]: a.coordinate.rsplit(":", 1)[1] for a in maven_jars.read_lock(flink.GROUP)}
    assert pinned["org.apache.flink:flink-sql-parser"] == drift.FLINK_VERSION == "2.3.0"
    assert pinned["org.apache.calcite:calcite-core"] == pinned["org.apache.calcite:calcite-linq4j"] == "1.36.0"
    assert pinned["com.google.guava:guava"] == "33.4.0-jre"
    names = [a.file_name for a in maven_jars.read_lock(flink.GROUP)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(("text", "refused"), [
    ("LOAD MODULE hive", "LOAD MODULE"), ("add jar '/x.jar'", "ADD JAR"), ("SHOW JOBS", "SHOW JOBS"),
    ("STOP JOB 'abc'", "STOP JOB"), ("CALL cat.sys.compact('t')", "CALL"), ("ALTER DATABASE d SET ('k' = 'v')",
                                                                         "ALTER DATABASE"),
    ("TRUNCATE TABLE t", "TRUNCATE TABLE"), ("ANALYZE TABLE t COMPUTE STATISTICS", "ANALYZE TABLE"),
])
def test_flink_statements_planengine_does_not_run_are_refused_by_name(text: str, refused: str) -> None:
    """What the guard found (flink_statements.sql): these failed as "unknown statement" or with SHOW's list."""
    with pytest.raises(SqlParseError, match=f"statement 2, line 2, column 1: {refused} is not supported by planengine"
                       ) as caught:
        parse_script(f"SELECT 1;\n{text}")
    assert caught.value.hint


def test_the_statement_refusals_leave_names_alone() -> None:
    [query] = parse_script("SELECT `call`, `load` FROM `show` AS jobs")
    assert query.query.sql("flink") == "SELECT `call`, `load` FROM `show` AS jobs"
