package io.planengine.jvm.spec;

/**
 * The per-record watermark pass's spec: the rowtime column's name, the assigner's delay and emit interval (ms) and
 * the name of the column it adds. Python: {@code specs.RecordWatermarkSpec}.
 */
public record RecordWatermarkSpec(String rowtime, long delayMs, long intervalMs, String column) {

  public static RecordWatermarkSpec parse(String json) {
    return from(Spec.parse(json));
  }

  public static RecordWatermarkSpec from(Spec spec) {
    return new RecordWatermarkSpec(spec.string("rowtime"), spec.longValue("delayMs", 0L),
        spec.longValue("intervalMs", 0L), spec.string("column"));
  }
}
