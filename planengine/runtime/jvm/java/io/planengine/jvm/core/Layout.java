package io.planengine.jvm.core;

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
}
