package io.planengine.jvm.spec;

/**
 * One sort key of a Top-N: the field's position, its direction and Flink's NULL ordering (default: NULLs first
 * when ascending). Python: {@code specs.SortKeySpec}.
 */
public record SortKeySpec(int field, boolean ascending, boolean nullsFirst) {

  public static SortKeySpec from(Spec spec) {
    boolean ascending = spec.bool("ascending", true);
    return new SortKeySpec(spec.index("field"), ascending, spec.bool("nullsFirst", ascending));
  }
}
