package io.planengine.jvm.core;

import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A ValueState holding one typed row of the operator's input and its last write time: {@code (row STRUCT<the
 * input's fields>, written BIGINT)}. The row's fields are the input's own types, so the state data source
 * shows them as they are; {@code written} implements state TTL (see {@link KeyedChangelogProcessor}).
 */
public final class StoredRow {
  private final ValueState<Row> state;
  private final int width;

  private StoredRow(ValueState<Row> state, int width) {
    this.state = state;
    this.width = width;
  }

  /** The input's fields without the hidden {@code _rowkind} column. */
  public static StructType dataFields(StructType input) {
    StructType out = new StructType();
    for (StructField f : input.fields()) {
      if (!f.name().equals(Layout.ROWKIND)) {
        out = out.add(f.name(), f.dataType(), true);
      }
    }
    return out;
  }

  public static StructType stateType(StructType rowType) {
    return new StructType().add("row", rowType, false).add("written", DataTypes.LongType, false);
  }

  public static StoredRow open(StatefulProcessorHandle handle, String name, StructType rowType) {
    return new StoredRow(handle.getValueState(name, Encoders.row(stateType(rowType)), TTLConfig.NONE()),
        rowType.size());
  }

  /** The stored row's fields, or null when there is none or it outlived {@code ttlMs} at {@code now}. */
  public Object[] get(long ttlMs, long now) {
    Row stored = state.get();
    if (stored == null || (ttlMs > 0 && now - stored.getLong(1) > ttlMs)) {
      return null;
    }
    Row row = stored.getStruct(0);
    Object[] out = new Object[width];
    for (int i = 0; i < width; i++) {
      out[i] = row.get(i);
    }
    return out;
  }

  public void put(Object[] fields, long now) {
    state.update(RowFactory.create(RowFactory.create(fields), now));
  }

  public boolean exists() {
    return state.exists();
  }

  public void clear() {
    state.clear();
  }

  /** The data fields of an input row (the {@code _rowkind} column, last when present, left out). */
  public static Object[] fields(Row input, int width) {
    Object[] out = new Object[width];
    for (int i = 0; i < width; i++) {
      out[i] = input.get(i);
    }
    return out;
  }
}
