package io.planengine.jvm.ops.materialize;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.Spec;
import io.planengine.jvm.spec.UpsertMaterializeSpec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The sink's upsert materializer on the JVM (Flink's {@code SinkUpsertMaterializer}): when a changelog reaches
 * an upsert sink keyed differently from the changelog's own unique key, several rows can be alive for one sink
 * key, and retracting one that is not the latest must not delete the key.
 *
 * <p>State {@code materializedRows}: {@code (rows ARRAY<STRUCT<the input's fields>>, written BIGINT)}, the
 * rows alive for the sink key, oldest first.
 *
 * <ul>
 *   <li>{@code +I}/{@code +U}: an identical row is replaced in place, otherwise appended; emitted as {@code +I}
 *       when it is the only one, else {@code +U};
 *   <li>{@code -U}/{@code -D}: the first identical row is removed; none left: {@code -D row}; the latest row
 *       removed: {@code +U} the new latest; an older one: nothing. A retraction of an unknown row is ignored.
 * </ul>
 *
 * <p>Spec: {@link UpsertMaterializeSpec}.
 */
public final class UpsertMaterializer extends KeyedChangelogProcessor<UpsertMaterializeSpec> {
  private static final long serialVersionUID = 1L;

  private transient long ttlMs;
  private transient int width;
  private transient ValueState<Row> state;

  private UpsertMaterializer(String spec, StructType input) {
    super(spec, input, true);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    UpsertMaterializeSpec spec = UpsertMaterializeSpec.parse(specJson);
    List<DataType> types = new ArrayList<>();
    for (StructField f : StoredRow.dataFields(input.schema()).fields()) {
      types.add(f.dataType());
    }
    return new KeyedOperator(input, spec.upsertKeys(), new UpsertMaterializer(specJson, input.schema()),
        Keyed.outputSchema(types, true));
  }

  static StructType stateType(StructType rowType) {
    return new StructType().add("rows", DataTypes.createArrayType(rowType, false), false)
        .add("written", DataTypes.LongType, false);
  }

  @Override
  protected UpsertMaterializeSpec readSpec(Spec json) {
    return UpsertMaterializeSpec.from(json);
  }

  @Override
  protected void open(UpsertMaterializeSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    ttlMs = spec.stateTtlMs();
    StructType data = StoredRow.dataFields(inputSchema);
    width = data.size();
    state = handle.getValueState(spec.stateNames().get(0), Encoders.row(stateType(data)),
        TTLConfig.NONE());
  }

  private static int indexOf(List<Object[]> rows, Object[] row) {
    for (int i = 0; i < rows.size(); i++) {
      if (Values.equalRows(rows.get(i), row)) {
        return i;
      }
    }
    return -1;
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    Row stored = state.get();
    List<Object[]> rows = new ArrayList<>();
    if (stored != null && !expired(ttlMs, stored.getLong(1))) {
      for (Object r : stored.getList(0)) {
        rows.add(StoredRow.fields((Row) r, width));
      }
    }
    while (input.next()) {
      Object[] row = StoredRow.fields(input.row(), width);
      int index = indexOf(rows, row);
      if (input.kind().isAccumulate()) {
        if (index >= 0) {
          rows.set(index, row);
        } else {
          rows.add(row);
        }
        out.emit(rows.size() == 1 ? RowKind.INSERT : RowKind.UPDATE_AFTER, row);
        continue;
      }
      if (index < 0) {
        continue; // already gone (state expired or never seen)
      }
      int last = rows.size() - 1;
      rows.remove(index);
      if (rows.isEmpty()) {
        out.emit(RowKind.DELETE, row);
      } else if (index == last) {
        out.emit(RowKind.UPDATE_AFTER, rows.get(rows.size() - 1));
      }
    }
    if (!rows.isEmpty()) {
      List<Object> structs = new ArrayList<>();
      for (Object[] r : rows) {
        structs.add(RowFactory.create(r));
      }
      state.update(RowFactory.create(Scala.seq(structs), now));
    } else if (stored != null) {
      state.clear();
    }
  }
}
