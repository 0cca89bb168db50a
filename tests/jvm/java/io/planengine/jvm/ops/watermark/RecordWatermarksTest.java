package io.planengine.jvm.ops.watermark;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Test;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link RecordWatermarks}' rule, the per-task assigner behind {@code _record_wm}: the UDF over a Dataset needs a
 * SparkSession, the rule does not. The expected values are the Python reference's ({@code emitted_before} in
 * {@code runtime/operators/record_watermark.py}, whose doctests state the same sequences).
 */
public final class RecordWatermarksTest {
  private static List<Long> emittedBefore(long delay, long interval, Long... rowtimesMs) {
    RecordWatermarks.Rule rule = new RecordWatermarks.Rule(delay, interval);
    List<Long> out = new ArrayList<>();
    for (Long ms : rowtimesMs) {
      out.add(rule.call(ms == null ? null : ms * 1000L));
    }
    return out;
  }

  @Test
  public void eachRowMeetsTheWatermarkEmittedBeforeIt() {
    Check.equal(Arrays.asList(null, null, 2000L, 2000L, 7000L),
        emittedBefore(1000, 200, 1000L, 3000L, 2000L, 8000L, 4000L),
        "rowtime - delay raises the watermark, emitted once it passes the last by more than the interval");
    Check.equal(Arrays.asList(null, 1000L, 1000L, 1300L), emittedBefore(0, 200, 1000L, 1100L, 1300L, 1500L),
        "a rise of no more than the interval is not emitted");
    Check.equal(Arrays.asList(null, 1000L, 1000L), emittedBefore(0, 200, 1000L, 1200L, 1300L),
        "a rise of exactly the interval is not emitted either");
  }

  @Test
  public void aRowWithoutRowtimeMovesNothing() {
    Check.equal(Arrays.asList(null, 1000L, 1000L, 1300L), emittedBefore(0, 200, 1000L, null, 1300L, 1400L),
        "the NULL row meets the watermark so far and changes none");
  }
}
