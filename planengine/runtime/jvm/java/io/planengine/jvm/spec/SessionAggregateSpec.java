package io.planengine.jvm.spec;

import java.util.List;

/**
 * The spec of SESSION windows over other keys than the grouping: the data fields' count, the positions of the
 * epoch-ms time and of the per-record watermark (absent without a per-record watermark assigner), the partition
 * keys the sessions are per, the grouping fields aggregated inside a session, the gap, the calls, state TTL and the
 * state variable's name. Python: {@code specs.SessionAggregateSpec}.
 */
public record SessionAggregateSpec(int width, int timeField, @Nullable Integer recordWatermarkField,
    int[] partitionKeys, int[] grouping, long gapMs, List<AggCallSpec> aggCalls, long stateTtlMs,
    List<String> stateNames) {

  public static SessionAggregateSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static SessionAggregateSpec from(Spec spec) {
    return new SessionAggregateSpec(spec.intValue("width", -1), spec.index("timeField"),
        spec.nullableInt("recordWatermarkField"), spec.ints("partitionKeys"), spec.ints("grouping"),
        spec.longValue("gapMs", 0L), spec.list("aggCalls", AggCallSpec::from), spec.longValue("stateTtlMs", 0L),
        spec.strings("stateNames"));
  }
}
