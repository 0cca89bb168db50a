package io.planengine.jvm.spec;

import java.util.List;
import org.apache.spark.sql.types.DataType;

/**
 * {@code stream-exec-group-aggregate}'s spec: grouping positions, the calls, the output's Spark types, the
 * changelog flags, mini-batch, state TTL and the state variables' names ({@code [accumulators, distinctValues]}).
 * Python: {@code specs.GroupAggregateSpec}.
 */
public record GroupAggregateSpec(int[] grouping, List<AggCallSpec> aggCalls, List<DataType> outputTypes,
    boolean needRetraction, boolean inputUpdating, boolean generateUpdateBefore, boolean miniBatch, long stateTtlMs,
    List<String> stateNames) {

  public static GroupAggregateSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static GroupAggregateSpec from(Spec spec) {
    return new GroupAggregateSpec(spec.ints("grouping"), spec.list("aggCalls", AggCallSpec::from),
        spec.types("outputTypes"), spec.bool("needRetraction", false), spec.bool("inputUpdating", false),
        spec.bool("generateUpdateBefore", true), spec.bool("miniBatch", false), spec.longValue("stateTtlMs", 0L),
        spec.strings("stateNames"));
  }

  /** Whether the accumulators must retract: the plan asks for it, or the input retracts rows. */
  public boolean retracting() {
    return needRetraction || inputUpdating;
  }
}
