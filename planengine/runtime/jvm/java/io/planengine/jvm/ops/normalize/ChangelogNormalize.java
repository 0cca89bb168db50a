package io.planengine.jvm.ops.normalize;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.ChangelogNormalizeSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code stream-exec-changelog-normalize} on the JVM (Flink's {@code ProcTimeDeduplicateKeepLastRowFunction}
 * over a changelog): an upsert input ({@code +I}/{@code +U} by unique key, {@code -D} possibly carrying only
 * the key) becomes a full changelog with before-images.
 *
 * <p>State {@code latestRow}: {@link StoredRow}, the key's current row.
 *
 * <ul>
 *   <li>{@code +I}/{@code +U}: unknown key: {@code +I row}; a row equal to the stored one: nothing (unless
 *       state TTL is on); else {@code -U old} (when {@code generateUpdateBefore}) and {@code +U row};
 *   <li>{@code -D}: known key: {@code -D old} (the stored full row, so key-only deletes work); unknown: nothing;
 *   <li>{@code -U} is dropped: a retract source with duplicate events sends {@code -U old, +U new}, and the
 *       {@code +U} alone produces the right pair from state.
 * </ul>
 *
 * <p>Spec: {@link ChangelogNormalizeSpec}.
 */
public final class ChangelogNormalize extends KeyedChangelogProcessor<ChangelogNormalizeSpec> {
  private static final long serialVersionUID = 1L;

  private transient boolean generateUpdateBefore;
  private transient long ttlMs;
  private transient int width;
  private transient StoredRow latest;

  private ChangelogNormalize(String spec, StructType input) {
    super(spec, input, true);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    ChangelogNormalizeSpec spec = ChangelogNormalizeSpec.parse(specJson);
    List<DataType> types = new ArrayList<>();
    for (StructField f : StoredRow.dataFields(input.schema()).fields()) {
      types.add(f.dataType());
    }
    return new KeyedOperator(input, spec.uniqueKeys(), new ChangelogNormalize(specJson, input.schema()),
        Keyed.outputSchema(types, true));
  }

  @Override
  protected ChangelogNormalizeSpec readSpec(Spec json) {
    return ChangelogNormalizeSpec.from(json);
  }

  @Override
  protected void open(ChangelogNormalizeSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    generateUpdateBefore = spec.generateUpdateBefore();
    ttlMs = spec.stateTtlMs();
    StructType data = StoredRow.dataFields(inputSchema);
    width = data.size();
    latest = StoredRow.open(handle, spec.stateNames().get(0), data);
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    boolean existed = latest.exists();
    Object[] prev = latest.get(ttlMs, now);
    Object[] start = prev;
    boolean emitted = false;
    while (input.next()) {
      RowKind kind = input.kind();
      if (kind == RowKind.UPDATE_BEFORE) {
        continue;
      }
      if (kind == RowKind.DELETE) {
        if (prev != null) {
          out.emit(RowKind.DELETE, prev);
          emitted = true;
          prev = null;
        }
        continue;
      }
      Object[] row = StoredRow.fields(input.row(), width);
      if (prev == null) {
        out.emit(RowKind.INSERT, row);
        emitted = true;
      } else if (ttlMs > 0 || !Values.equalRows(prev, row)) {
        if (generateUpdateBefore) {
          out.emit(RowKind.UPDATE_BEFORE, prev);
        }
        out.emit(RowKind.UPDATE_AFTER, row);
        emitted = true;
      }
      prev = row;
    }
    if (prev == null) {
      if (existed) {
        latest.clear();
      }
    } else if (prev != start || !existed || emitted) {
      latest.put(prev, now);
    }
  }
}
