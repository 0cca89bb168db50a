package io.planengine.jvm.ops.over;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link OverAggregate}, Flink's {@code RowTime{Rows,Range}{Bounded,Unbounded}PrecedingFunction}: rows wait for the
 * watermark, fire in timestamp order with their frame's aggregates, and a row not after the last fired one is late.
 */
public final class OverAggregateTest {
  /** (p STRING, v BIGINT, _t_ms BIGINT): {@code SUM(v) OVER (PARTITION BY p ORDER BY rowtime ...)}. */
  private static final StructType INPUT = new StructType().add("p", DataTypes.StringType)
      .add("v", DataTypes.LongType).add("_t_ms", DataTypes.LongType);
  private static final Row P = row("p");

  private static String spec(String mode, String lower, String recordWatermarkField) {
    return "{\"width\": 2, \"timeField\": 2, \"recordWatermarkField\": " + recordWatermarkField
        + ", \"partitionKeys\": [0], \"mode\": \"" + mode + "\", \"lower\": " + lower + ", \"aggCalls\":"
        + " [{\"function\": \"SUM\", \"version\": 1, \"args\": [1], \"filterArg\": null, \"distinct\": false,"
        + " \"resultType\": \"BIGINT\", \"constants\": []}], \"stateTtlMs\": 0,"
        + " \"stateNames\": [\"pendingRows\", \"accumulators\"]}";
  }

  private static Processors over(String spec, StructType input) throws ReflectiveOperationException {
    return new Processors(Processors.construct(OverAggregate.class, spec, input), true);
  }

  @Test
  public void rowsWaitForTheWatermarkAndFireInTimestampOrder() throws ReflectiveOperationException {
    Processors p = over(spec("ROWS", "1", "null"), INPUT);
    Check.equal(rows(), p.feed(P, row("p", 1L, 1000L), row("p", 3L, 3000L), row("p", 2L, 2000L)),
        "nothing is due before the watermark passes");
    Check.equal(3, p.value("pendingRows", P).getList(0).size(), "the rows wait in pendingRows");
    Check.equal(rows("[p,1,1]", "[p,2,3]"), p.watermark(2500),
        "the timer fires the due rows by timestamp: ROWS 1 PRECEDING sums the row and the one before it");
    Check.equal(rows("[p,3,5]"), p.watermark(3000), "the re-armed timer fires the next timestamp");
  }

  @Test
  public void aRowNotAfterTheLastFiredTimestampIsLate() throws ReflectiveOperationException {
    Processors p = over(spec("ROWS", null, "null"), INPUT);
    p.feed(P, row("p", 1L, 1000L), row("p", 2L, 2000L));
    Check.equal(rows("[p,1,1]", "[p,2,3]"), p.watermark(2000), "an unbounded frame sums every row so far");
    p.feed(P, row("p", 9L, 2000L), row("p", 4L, 2500L));
    Check.equal(rows("[p,4,7]"), p.watermark(3000), "the row at 2000 was late and never counts");
    Check.equal(2000L + 500L, p.value("accumulators", P).getLong(0), "the last fired timestamp");
  }

  @Test
  public void aRangeFrameGivesRowsOfOneTimestampTheSameValues() throws ReflectiveOperationException {
    Processors p = over(spec("RANGE", "1000", "null"), INPUT);
    p.feed(P, row("p", 1L, 1000L), row("p", 2L, 2000L), row("p", 4L, 2000L), row("p", 8L, 3500L));
    Check.equal(rows("[p,1,1]", "[p,2,7]", "[p,4,7]", "[p,8,8]"), p.watermark(5000),
        "RANGE 1 SECOND PRECEDING: [t - 1000, t], both rows at 2000 see each other, 3500 sees only itself");
    Check.equal(1, p.value("accumulators", P).getList(2).size(), "only rows the frame can still reach are kept");
  }

  @Test
  public void aRowFiresWhatTheWatermarkItMetInsideItsBatchMadeDue() throws ReflectiveOperationException {
    StructType input = INPUT.add("_record_wm", DataTypes.LongType);
    Processors p = over(spec("ROWS", null, "3"), input);
    Check.equal(rows("[p,1,1]"), p.feed(P, row("p", 1L, 1000L, null), row("p", 2L, 3000L, 1500L)),
        "the second row met watermark 1500, which fires the row at 1000 before it arrives");
    Check.equal(rows("[p,2,3]"), p.watermark(3000), "the second row waits for the batch watermark");
  }
}
