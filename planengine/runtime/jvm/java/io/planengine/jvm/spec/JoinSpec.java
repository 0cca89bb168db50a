package io.planengine.jvm.spec;

import java.util.List;
import java.util.Locale;

/**
 * {@code stream-exec-join}'s spec: the join type, each side's width and equi-key positions (within the side),
 * which key columns never match NULL ({@code filterNulls}, 1 or 0 per key), the output changelog, state TTL, the
 * two state variables' names and the optional non-equi condition (Spark SQL over {@code l0..}/{@code r0..}).
 * Python: {@code specs.JoinSpec}.
 */
public record JoinSpec(String joinType, int leftWidth, int rightWidth, int[] leftKeys, int[] rightKeys,
    int[] filterNulls, boolean insertOnly, long stateTtlMs, List<String> stateNames, @Nullable String condition) {

  public static JoinSpec parse(String json) {
    return from(Spec.parse(json));
  }

  /** The join type upper-cased ({@code INNER}, {@code LEFT}, ...), as every reader compares it. */
  public static JoinSpec from(Spec spec) {
    return new JoinSpec(spec.string("joinType").toUpperCase(Locale.ROOT), spec.intValue("leftWidth", 0),
        spec.intValue("rightWidth", 0), spec.ints("leftKeys"), spec.ints("rightKeys"), spec.ints("filterNulls"),
        spec.bool("insertOnly", false), spec.longValue("stateTtlMs", 0L), spec.strings("stateNames"),
        spec.nullableString("condition"));
  }

  /** Semi and anti joins emit the left row only. */
  public boolean semiOrAnti() {
    return joinType.equals("SEMI") || joinType.equals("ANTI");
  }
}
