package io.planengine.jvm.ops.aggregate;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link GroupAggregateProcessor}, Flink's {@code GroupAggFunction}: {@code SELECT k, COUNT(*), SUM(v) ... GROUP
 * BY k} over an insert-only or an updating input, with and without mini-batch, one key's batches at a time.
 */
public final class GroupAggregateProcessorTest {
  private static final StructType INPUT = new StructType().add("k", DataTypes.StringType)
      .add("v", DataTypes.LongType);
  private static final StructType UPDATING_INPUT = INPUT.add("_rowkind", DataTypes.StringType, false);
  private static final Row A = row("a");
  private static final String CALLS = "[{\"function\": \"COUNT\", \"args\": [], \"resultType\": \"bigint\"},"
      + " {\"function\": \"SUM\", \"args\": [1], \"resultType\": \"bigint\"}]";

  private static String spec(boolean inputUpdating, boolean updateBefore, boolean miniBatch) {
    return "{\"grouping\": [0], \"aggCalls\": " + CALLS + ", \"outputTypes\": [\"string\", \"bigint\", \"bigint\"],"
        + " \"needRetraction\": " + inputUpdating + ", \"inputUpdating\": " + inputUpdating
        + ", \"generateUpdateBefore\": " + updateBefore + ", \"miniBatch\": " + miniBatch
        + ", \"stateTtlMs\": 0, \"stateNames\": [\"accumulators\", \"distinctValues\"]}";
  }

  private static Processors aggregate(String spec, StructType input) {
    return new Processors(new GroupAggregateProcessor(spec, input));
  }

  @Test
  public void eachRowUpdatesTheGroupsResult() {
    Processors p = aggregate(spec(false, true, false), INPUT);
    Check.equal(rows("[a,1,5,+I]"), p.feed(A, row("a", 5L)), "a group's first row inserts its result");
    Check.equal(rows("[a,1,5,-U]", "[a,2,7,+U]", "[a,2,7,-U]", "[a,3,8,+U]"), p.feed(A, row("a", 2L), row("a", 1L)),
        "each later row retracts the old result and emits the new one");
    Check.equal(rows("[b,1,null,+I]"), p.feed(row("b"), row("b", null)), "SUM over NULL only is NULL");
  }

  @Test
  public void theAccumulatorsStateCountsRecordsAndHoldsEachAggregate() {
    Processors p = aggregate(spec(false, true, false), INPUT);
    p.feed(A, row("a", 5L), row("a", 2L));
    Row held = p.value("accumulators", A);
    Check.equal(2L, held.getLong(0), "records in the group (the value's first field)");
    Check.equal(7L, held.getStruct(3).get(0), "SUM's accumulator (after records, written and COUNT's)");
    Check.isTrue(p.value("accumulators", row("b")) == null, "a group without rows has no state");
  }

  @Test
  public void withoutUpdateBeforeOnlyTheNewResultIsEmitted() {
    Processors p = aggregate(spec(false, false, false), INPUT);
    p.feed(A, row("a", 5L));
    Check.equal(rows("[a,2,7,+U]"), p.feed(A, row("a", 2L)), "no -U");
  }

  @Test
  public void miniBatchFoldsAKeysRowsOfABatchIntoOneChange() {
    Processors p = aggregate(spec(false, true, true), INPUT);
    Check.equal(rows("[a,2,7,+I]"), p.feed(A, row("a", 5L), row("a", 2L)), "one insert for the batch");
    Check.equal(rows("[a,2,7,-U]", "[a,4,10,+U]"), p.feed(A, row("a", 1L), row("a", 2L)), "one update");
  }

  @Test
  public void retractionsUndoRowsAndTheLastOneDeletesTheGroup() {
    Processors p = aggregate(spec(true, true, false), UPDATING_INPUT);
    p.feed(A, row("a", 5L, "+I"), row("a", 2L, "+I"));
    Check.equal(rows("[a,2,7,-U]", "[a,1,2,+U]"), p.feed(A, row("a", 5L, "-D")), "a retraction updates");
    Check.equal(rows("[a,1,2,-D]"), p.feed(A, row("a", 2L, "-U")), "the last row's retraction deletes");
    Check.isTrue(p.value("accumulators", A) == null, "and clears the group's state");
    Check.equal(rows(), p.feed(A, row("a", 9L, "-D")), "a retraction for a group without state is ignored");
  }

  @Test
  public void aSpecNamingAFieldTheInputLacksFailsWithItsPath() {
    String bad = spec(false, true, false).replace("\"args\": [1]", "\"args\": [7]");
    Check.raises(IllegalArgumentException.class, "aggCalls[1].args", () -> aggregate(bad, INPUT));
  }
}
