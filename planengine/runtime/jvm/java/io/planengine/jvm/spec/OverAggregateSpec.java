package io.planengine.jvm.spec;

import java.util.List;

/**
 * An event-time OVER window's spec: the data fields' count ({@code width}), the positions of the epoch-ms time
 * and of the per-record watermark (absent without a per-record watermark assigner), the partition keys, the frame
 * ({@code ROWS} | {@code RANGE}, {@code lower} rows or ms; absent = unbounded), the calls, state TTL and the two
 * state variables' names. Python: {@code specs.OverAggregateSpec}.
 */
public record OverAggregateSpec(int width, int timeField, @Nullable Integer recordWatermarkField, int[] partitionKeys,
    String mode, @Nullable Long lower, List<AggCallSpec> aggCalls, long stateTtlMs, List<String> stateNames) {

  public static OverAggregateSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static OverAggregateSpec from(Spec spec) {
    return new OverAggregateSpec(spec.intValue("width", -1), spec.index("timeField"),
        spec.nullableInt("recordWatermarkField"), spec.ints("partitionKeys"), spec.string("mode"),
        spec.nullableLong("lower"), spec.list("aggCalls", AggCallSpec::from), spec.longValue("stateTtlMs", 0L),
        spec.strings("stateNames"));
  }

  /** A bounded frame ({@code lower} PRECEDING) rather than an unbounded one. */
  public boolean bounded() {
    return lower != null;
  }
}
