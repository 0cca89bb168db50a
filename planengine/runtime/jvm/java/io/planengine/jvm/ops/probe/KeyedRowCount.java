package io.planengine.jvm.ops.probe;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.spec.KeyedRowCountSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The smallest keyed changelog operator: the running count of rows per key, as an upsert changelog
 * ({@code +I} first, {@code +U} after). Spec: {@link KeyedRowCountSpec}. Used to check that the library
 * loads and that a processor keeps state across micro-batches and restarts.
 */
public final class KeyedRowCount extends KeyedChangelogProcessor<KeyedRowCountSpec> {
  private static final long serialVersionUID = 1L;
  private transient ValueState<Long> count;
  private transient int keyCount;

  private KeyedRowCount(String spec, StructType input) {
    super(spec, input, true);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    int[] keys = KeyedRowCountSpec.parse(specJson).keys();
    List<DataType> types = new ArrayList<>();
    for (int k : keys) {
      types.add(input.schema().fields()[k].dataType());
    }
    types.add(DataTypes.LongType);
    return Keyed.by(input, keys).transformWithState(new KeyedRowCount(specJson, input.schema()),
        TimeMode.None(), OutputMode.Append(), Encoders.row(Keyed.outputSchema(types, true)));
  }

  @Override
  protected KeyedRowCountSpec readSpec(Spec json) {
    return KeyedRowCountSpec.from(json);
  }

  @Override
  protected void open(KeyedRowCountSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    keyCount = spec.keys().length;
    count = handle.getValueState("count", Encoders.LONG(), TTLConfig.NONE());
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    Long stored = count.get();
    long n = stored == null ? 0L : stored;
    long before = n;
    while (input.next()) {
      n += input.kind().isAccumulate() ? 1 : -1;
    }
    count.update(n);
    Object[] row = new Object[keyCount + 1];
    for (int i = 0; i < keyCount; i++) {
      row[i] = key.get(i);
    }
    row[keyCount] = n;
    out.emit(stored == null ? RowKind.INSERT : RowKind.UPDATE_AFTER, row);
  }
}
