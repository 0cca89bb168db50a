package io.planengine.jvm.spec;

import java.util.List;

/**
 * {@code stream-exec-changelog-normalize}'s spec: the unique key, whether updates carry their before-image, state
 * TTL and the state variable's name. Python: {@code specs.ChangelogNormalizeSpec}.
 */
public record ChangelogNormalizeSpec(int[] uniqueKeys, boolean generateUpdateBefore, long stateTtlMs,
    List<String> stateNames) {

  public static ChangelogNormalizeSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static ChangelogNormalizeSpec from(Spec spec) {
    return new ChangelogNormalizeSpec(spec.ints("uniqueKeys"), spec.bool("generateUpdateBefore", true),
        spec.longValue("stateTtlMs", 0L), spec.strings("stateNames"));
  }
}
