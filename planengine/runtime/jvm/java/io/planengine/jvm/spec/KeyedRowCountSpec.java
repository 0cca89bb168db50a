package io.planengine.jvm.spec;

/** The diagnostic row counter's spec: the key positions. Python: {@code specs.KeyedRowCountSpec}. */
public record KeyedRowCountSpec(int[] keys) {

  public static KeyedRowCountSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static KeyedRowCountSpec from(Spec spec) {
    return new KeyedRowCountSpec(spec.ints("keys"));
  }
}
