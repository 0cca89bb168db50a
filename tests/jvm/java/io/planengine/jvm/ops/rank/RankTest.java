package io.planengine.jvm.ops.rank;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link Rank}: Flink's Top-N functions ({@code AppendOnlyTopNFunction}, {@code RetractableTopNFunction},
 * {@code UpdatableTopNFunction}) and the sort-limit as a Top-N without partition keys, one partition at a time.
 */
public final class RankTest {
  /** (p STRING, id STRING, score BIGINT): ranked per {@code p} by {@code score DESC}. */
  private static final StructType INPUT = new StructType().add("p", DataTypes.StringType)
      .add("id", DataTypes.StringType).add("score", DataTypes.LongType);
  private static final StructType UPDATING_INPUT = INPUT.add("_rowkind", DataTypes.StringType, false);
  private static final Row P = row("p");
  private static final String BY_SCORE_DESC = "[{\"field\": 2, \"ascending\": false, \"nullsFirst\": false}]";

  private static String spec(String type, long rankEnd, boolean rankNumber, boolean inputUpdating, String more) {
    return "{\"partitionKeys\": [0], \"order\": " + BY_SCORE_DESC + ", \"rankType\": \"" + type + "\","
        + " \"rankStart\": 1, \"rankEnd\": " + rankEnd + ", \"outputRankNumber\": " + rankNumber + ","
        + " \"generateUpdateBefore\": true, \"inputUpdating\": " + inputUpdating + ", \"insertOnly\": false,"
        + " \"stateTtlMs\": 0, \"stateNames\": [\"rankedRows\"]" + more + "}";
  }

  private static Processors rank(String spec, StructType input) throws ReflectiveOperationException {
    return new Processors(Processors.construct(Rank.class, spec, input, true));
  }

  private static int kept(Processors p, Row key) {
    Row held = p.value("rankedRows", key);
    return held == null ? 0 : held.getList(0).size();
  }

  @Test
  public void rowNumberWithTheRankNumberUpdatesEachPosition() throws ReflectiveOperationException {
    Processors p = rank(spec("ROW_NUMBER", 2, true, false, ""), INPUT);
    Check.equal(rows("[p,a,10,1,+I]"), p.feed(P, row("p", "a", 10L)), "the first row takes position 1");
    Check.equal(rows("[p,a,10,1,-U]", "[p,b,20,1,+U]", "[p,a,10,2,+I]"), p.feed(P, row("p", "b", 20L)),
        "a better row updates position 1 and pushes the old one to position 2");
    Check.equal(rows(), p.feed(P, row("p", "c", 5L)), "a row below the top-2 changes nothing");
    Check.equal(rows("[p,a,10,2,-U]", "[p,d,15,2,+U]"), p.feed(P, row("p", "d", 15L)),
        "only the position that changes rows is updated");
  }

  @Test
  public void appendFastKeepsOnlyRowsThatCanStillRank() throws ReflectiveOperationException {
    Processors p = rank(spec("RANK", 2, false, false, ""), INPUT);
    Check.equal(rows("[p,a,10,+I]", "[p,b,10,+I]"), p.feed(P, row("p", "a", 10L), row("p", "b", 10L),
        row("p", "c", 5L)), "a tie shares rank 1; the third row ranks 3 and stays out");
    Check.equal(2, kept(p, P), "an insert-only input never brings rank 3 back: it is not kept");
  }

  @Test
  public void retractKeepsEveryRowAndARetractionPromotesTheNext() throws ReflectiveOperationException {
    Processors p = rank(spec("RANK", 2, false, true, ""), UPDATING_INPUT);
    p.feed(P, row("p", "a", 10L, "+I"), row("p", "b", 10L, "+I"), row("p", "c", 5L, "+I"));
    Check.equal(3, kept(p, P), "an updating input may retract a top row: every row is kept");
    Check.equal(rows("[p,a,10,-D]", "[p,c,5,+I]"), p.feed(P, row("p", "a", 10L, "-D")),
        "the retracted row leaves and the next one enters");
    Check.equal(rows(), p.feed(P, row("p", "z", 99L, "-D")), "a retraction of a row never held is ignored");
  }

  @Test
  public void updateFastUpdatesARowOfItsUniqueKeyInPlace() throws ReflectiveOperationException {
    Processors p = rank(spec("ROW_NUMBER", 2, false, true,
        ", \"strategy\": \"UPDATE_FAST\", \"uniqueKey\": [1]"), UPDATING_INPUT);
    p.feed(P, row("p", "a", 10L, "+I"), row("p", "b", 5L, "+I"));
    Check.equal(rows("[p,b,5,-U]", "[p,b,20,+U]"), p.feed(P, row("p", "b", 5L, "-U"), row("p", "b", 20L, "+U")),
        "the -U is skipped; the +U replaces b's row, which moves up: one update, not a delete and an insert");
    Check.equal(2, kept(p, P), "b is held once");
  }

  @Test
  public void updateFastNeedsAUniqueKey() {
    Check.raises(IllegalArgumentException.class, "$.uniqueKey is needed by the UPDATE_FAST strategy",
        () -> {
          try {
            rank(spec("ROW_NUMBER", 2, false, true, ", \"strategy\": \"UPDATE_FAST\""), UPDATING_INPUT);
          } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  @Test
  public void aSortLimitIsARowNumberWithoutPartitionKeysOrRankNumber() throws ReflectiveOperationException {
    // ORDER BY score ASC NULLS FIRST OFFSET 1 FETCH 2: ranks 2..3 of all rows, under the constant key.
    String spec = "{\"partitionKeys\": [], \"order\": [{\"field\": 1, \"ascending\": true, \"nullsFirst\": true}],"
        + " \"rankType\": \"ROW_NUMBER\", \"rankStart\": 2, \"rankEnd\": 3, \"outputRankNumber\": false,"
        + " \"generateUpdateBefore\": true, \"inputUpdating\": false, \"insertOnly\": false, \"stateTtlMs\": 0,"
        + " \"stateNames\": [\"rankedRows\"]}";
    StructType input = new StructType().add("id", DataTypes.StringType).add("score", DataTypes.LongType);
    Processors p = rank(spec, input);
    Row all = row(0);
    Check.equal(rows(), p.feed(all, row("x", 5L)), "rank 1 is skipped by the offset");
    Check.equal(rows("[x,5,+I]"), p.feed(all, row("y", 3L)), "x moves to rank 2");
    Check.equal(rows("[z,4,+I]"), p.feed(all, row("z", 4L)), "z takes rank 2, x rank 3");
    Check.equal(rows("[x,5,-D]", "[y,3,+I]"), p.feed(all, row("w", 1L)), "x leaves, y enters");
    Check.equal(rows("[z,4,-D]", "[w,1,+I]"), p.feed(all, row("n", null)), "NULLS FIRST: a NULL ranks first");
  }
}
