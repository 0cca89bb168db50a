package io.planengine.jvm.ops.session;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link SessionAggregate}: SESSION windows per partition key, merged as rows arrive, fired by an event-time timer
 * when the watermark passes their end with one row per grouping key.
 */
public final class SessionAggregateTest {
  /** (k STRING, g STRING, v BIGINT, _t_ms BIGINT): sessions per {@code k}, {@code COUNT(*), SUM(v)} per {@code g}. */
  private static final StructType INPUT = new StructType().add("k", DataTypes.StringType)
      .add("g", DataTypes.StringType).add("v", DataTypes.LongType).add("_t_ms", DataTypes.LongType);
  private static final Row K = row("k");
  private static final String SPEC = "{\"width\": 3, \"timeField\": 3, \"recordWatermarkField\": null,"
      + " \"partitionKeys\": [0], \"grouping\": [1], \"gapMs\": 1000, \"aggCalls\": ["
      + "{\"function\": \"COUNT\", \"version\": 1, \"args\": [], \"filterArg\": null, \"distinct\": false,"
      + " \"resultType\": \"BIGINT\", \"constants\": []},"
      + " {\"function\": \"SUM\", \"version\": 1, \"args\": [2], \"filterArg\": null, \"distinct\": false,"
      + " \"resultType\": \"BIGINT\", \"constants\": []}],"
      + " \"stateTtlMs\": 0, \"stateNames\": [\"windowAccumulators\"]}";

  private static Processors sessions() throws ReflectiveOperationException {
    return new Processors(Processors.construct(SessionAggregate.class, SPEC, INPUT), true);
  }

  private static int open(Processors p) {
    Row held = p.value("windowAccumulators", K);
    return held == null ? 0 : held.getList(0).size();
  }

  @Test
  public void aRowTouchingTwoSessionsMergesThem() throws ReflectiveOperationException {
    Processors p = sessions();
    p.feed(K, row("k", "x", 1L, 1000L), row("k", "y", 2L, 2500L));
    Check.equal(2, open(p), "[1000, 2000) and [2500, 3500) do not touch");
    p.feed(K, row("k", "x", 4L, 1800L));
    Check.equal(1, open(p), "[1800, 2800) touches both: one session [1000, 3500)");
  }

  @Test
  public void theTimerFiresASessionWhenTheWatermarkPassesItsEnd() throws ReflectiveOperationException {
    Processors p = sessions();
    p.feed(K, row("k", "x", 1L, 1000L), row("k", "y", 2L, 2500L), row("k", "x", 4L, 1800L));
    Check.equal(rows(), p.watermark(3499), "the session ends at 3500: still open");
    Check.equal(rows("[y,1,2,1000,3500]", "[x,2,5,1000,3500]"), p.watermark(3500),
        "one row per grouping key, in the order the keys first appear in the merged session (the later one's "
            + "rows first), with COUNT(*), SUM(v) and the bounds");
    Check.equal(0, open(p), "the fired session is forgotten");
  }

  @Test
  public void aRowWhoseSessionHasClosedIsLate() throws ReflectiveOperationException {
    Processors p = sessions();
    p.feed(K, row("k", "x", 1L, 1000L));
    p.watermark(2000);
    Check.equal(rows(), p.feed(K, row("k", "x", 1L, 900L)), "[900, 1900) ended before the watermark: dropped");
    Check.equal(0, open(p), "and it opens nothing");
    p.feed(K, row("k", "x", 5L, 1500L));
    Check.equal(rows("[x,1,5,1500,2500]"), p.watermark(2500), "[1500, 2500) was still open at 2000");
  }
}
