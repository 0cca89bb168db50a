package io.planengine.jvm.core;

import io.planengine.jvm.spec.Spec;
import java.util.Arrays;
import org.apache.spark.sql.types.StructType;

/** Layout facts shared by the processors and the facade. */
public final class Layout {
  /** The hidden changelog column of updating edges (DESIGN §6). */
  public static final String ROWKIND = "_rowkind";

  private Layout() {}

  /** Position of {@code _rowkind} in {@code schema}, or -1 on an insert-only edge. */
  public static int kindIndex(StructType schema) {
    return Arrays.asList(schema.fieldNames()).indexOf(ROWKIND);
  }

  /**
   * The first {@code width} (the spec's {@code $.width}) input fields, nullable: the row as the plan sees it. The
   * event-time operators' translators append the time and per-record watermark columns after them.
   */
  public static StructType dataFields(int width, StructType input) {
    if (width < 0 || width > input.size()) {
      throw Spec.at("$.width", "must be between 0 and the input's " + input.size() + " fields");
    }
    StructType out = new StructType();
    for (int i = 0; i < width; i++) {
      out = out.add(input.fields()[i].name(), input.fields()[i].dataType(), true);
    }
    return out;
  }
}
