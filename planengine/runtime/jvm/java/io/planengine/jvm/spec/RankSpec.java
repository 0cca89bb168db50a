package io.planengine.jvm.spec;

import java.util.List;
import java.util.Locale;

/**
 * The Top-N spec of {@code stream-exec-rank} and of a sort-limit (a ROW_NUMBER without partition keys or rank
 * number): partition keys, sort keys, the rank function and range, the changelog flags, Flink's strategy with
 * the unique key it needs ({@code rank_3}; absent in {@code rank_2}, which derives the strategy from
 * {@code inputUpdating}), state TTL and the state variable's name. Python: {@code specs.RankSpec}.
 */
public record RankSpec(int[] partitionKeys, List<SortKeySpec> order, String rankType, long rankStart, long rankEnd,
    boolean outputRankNumber, boolean generateUpdateBefore, boolean inputUpdating, boolean insertOnly,
    @Nullable String strategy, int @Nullable [] uniqueKey, long stateTtlMs, List<String> stateNames) {

  public static RankSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static RankSpec from(Spec spec) {
    return new RankSpec(spec.ints("partitionKeys"), spec.list("order", SortKeySpec::from),
        spec.string("rankType").toUpperCase(Locale.ROOT), spec.longValue("rankStart", 1L),
        spec.longValue("rankEnd", Long.MAX_VALUE), spec.bool("outputRankNumber", false),
        spec.bool("generateUpdateBefore", true), spec.bool("inputUpdating", true), spec.bool("insertOnly", false),
        spec.nullableString("strategy"), spec.nullableInts("uniqueKey"), spec.longValue("stateTtlMs", 0L),
        spec.strings("stateNames"));
  }

  /** The strategy the plan recorded, else the one a {@code rank_2} plan runs: append-fast over insert-only input. */
  public String strategyOrDerived() {
    return strategy != null ? strategy : inputUpdating ? "RETRACT" : "APPEND_FAST";
  }

  /** The unique key's positions (none when the plan states no strategy). */
  public int[] uniqueKeyOrNone() {
    return uniqueKey != null ? uniqueKey : new int[0];
  }
}
