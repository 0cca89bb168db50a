package io.planengine.jvm.spec;

import java.util.List;

/**
 * {@code stream-exec-deduplicate}'s spec: the unique key, which of Flink's four functions ({@code keepLastRow},
 * {@code isRowtime} with the rowtime's position {@code orderField}), the changelog flags ({@code insertOnly}: the
 * node's output), state TTL and the state variable's name. Python: {@code specs.DeduplicateSpec}.
 */
public record DeduplicateSpec(int[] uniqueKeys, boolean keepLastRow, boolean isRowtime, int orderField,
    boolean generateUpdateBefore, boolean insertOnly, long stateTtlMs, List<String> stateNames) {

  public static DeduplicateSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static DeduplicateSpec from(Spec spec) {
    return new DeduplicateSpec(spec.ints("uniqueKeys"), spec.bool("keepLastRow", false),
        spec.bool("isRowtime", false), spec.intValue("orderField", -1), spec.bool("generateUpdateBefore", true),
        spec.bool("insertOnly", false), spec.longValue("stateTtlMs", 0L), spec.strings("stateNames"));
  }
}
