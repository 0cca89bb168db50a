package io.planengine.jvm.ops.dedup;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import java.lang.reflect.Constructor;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** {@link Deduplicate}'s four Flink functions, one key's micro-batches at a time, and the row it keeps. */
public final class DeduplicateTest {
  /** (user STRING, seq INT, ts BIGINT): deduplicated per user; {@code ts} is the rowtime of the rowtime cases. */
  private static final StructType INPUT = new StructType().add("user", DataTypes.StringType)
      .add("seq", DataTypes.IntegerType).add("ts", DataTypes.LongType);
  private static final StructType UPDATING_INPUT = INPUT.add("_rowkind", DataTypes.StringType, false);
  private static final Row ANN = row("ann");

  private static String spec(boolean keepLast, boolean rowtime, boolean updateBefore, boolean insertOnly) {
    return "{\"uniqueKeys\": [0], \"keepLastRow\": " + keepLast + ", \"isRowtime\": " + rowtime
        + ", \"orderField\": 2, \"generateUpdateBefore\": " + updateBefore + ", \"insertOnly\": " + insertOnly
        + ", \"stateTtlMs\": 0, \"stateNames\": [\"keptRow\"]}";
  }

  /**
   * The processor alone. Its constructor is private because the engine builds it only through
   * {@code Deduplicate.prepare(Dataset, spec)}, whose Dataset needs a SparkSession; the unit test needs neither.
   */
  private static Processors dedup(String spec, StructType input) throws ReflectiveOperationException {
    Constructor<Deduplicate> constructor =
        Deduplicate.class.getDeclaredConstructor(String.class, StructType.class, boolean.class);
    constructor.setAccessible(true);
    boolean updatingOutput = !spec.contains("\"insertOnly\": true");
    return new Processors(constructor.newInstance(spec, input, updatingOutput));
  }

  @Test
  public void proctimeKeepLastUpdatesTheKeptRowWithBeforeAndAfter() throws ReflectiveOperationException {
    Processors p = dedup(spec(true, false, true, false), INPUT);
    Check.equal(rows("[ann,1,10,+I]"), p.feed(ANN, row("ann", 1, 10L)), "first row of a key");
    Check.equal(rows("[ann,1,10,-U]", "[ann,2,5,+U]", "[ann,2,5,-U]", "[ann,3,7,+U]"),
        p.feed(ANN, row("ann", 2, 5L), row("ann", 3, 7L)), "every later row replaces the kept one, in order");
    Check.equal(row("ann", 3, 7L), p.value("keptRow", ANN).getStruct(0), "the kept row");
  }

  @Test
  public void withoutUpdateBeforeOnlyTheAfterImageIsEmitted() throws ReflectiveOperationException {
    Processors p = dedup(spec(true, false, false, false), INPUT);
    p.feed(ANN, row("ann", 1, 10L));
    Check.equal(rows("[ann,2,5,+U]"), p.feed(ANN, row("ann", 2, 5L)), "no -U");
  }

  @Test
  public void proctimeKeepFirstDropsLaterRowsAndEmitsInsertsOnly() throws ReflectiveOperationException {
    Processors p = dedup(spec(false, false, true, true), INPUT);
    Check.equal(rows("[ann,1,10]"), p.feed(ANN, row("ann", 1, 10L), row("ann", 2, 5L)), "first row only");
    Check.equal(rows(), p.feed(ANN, row("ann", 3, 1L)), "a later batch changes nothing");
    Check.equal(rows("[bob,4,4]"), p.feed(row("bob"), row("bob", 4, 4L)), "another key has its own state");
  }

  @Test
  public void rowtimeKeepFirstTakesAnEarlierRowAndIgnoresNullTimes() throws ReflectiveOperationException {
    Processors p = dedup(spec(false, true, true, false), INPUT);
    p.feed(ANN, row("ann", 1, 10L));
    Check.equal(rows(), p.feed(ANN, row("ann", 2, 10L), row("ann", 3, null)), "not earlier, or no time");
    Check.equal(rows("[ann,1,10,-U]", "[ann,4,3,+U]"), p.feed(ANN, row("ann", 4, 3L)), "earlier rowtime wins");
  }

  @Test
  public void rowtimeKeepLastTakesANotEarlierRow() throws ReflectiveOperationException {
    Processors p = dedup(spec(true, true, true, false), INPUT);
    p.feed(ANN, row("ann", 1, 10L));
    Check.equal(rows(), p.feed(ANN, row("ann", 2, 9L)), "an earlier rowtime does not replace");
    Check.equal(rows("[ann,1,10,-U]", "[ann,3,10,+U]"), p.feed(ANN, row("ann", 3, 10L)), "an equal one does");
  }

  @Test
  public void retractionsOfAnUpdatingInputAreIgnored() throws ReflectiveOperationException {
    Processors p = dedup(spec(true, false, true, false), UPDATING_INPUT);
    Check.equal(rows("[ann,1,10,+I]"), p.feed(ANN, row("ann", 1, 10L, "+I"), row("ann", 1, 10L, "-D")),
        "a -D neither emits nor clears");
    Check.isTrue(p.value("keptRow", ANN) != null, "the row is still kept");
  }
}
