package io.planengine.jvm.spec;

import java.util.List;

/**
 * The sink's upsert materializer's spec: the sink key's positions in its input, state TTL and the state
 * variable's name. Python: {@code specs.UpsertMaterializeSpec}.
 */
public record UpsertMaterializeSpec(int[] upsertKeys, long stateTtlMs, List<String> stateNames) {

  public static UpsertMaterializeSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static UpsertMaterializeSpec from(Spec spec) {
    return new UpsertMaterializeSpec(spec.ints("upsertKeys"), spec.longValue("stateTtlMs", 0L),
        spec.strings("stateNames"));
  }
}
