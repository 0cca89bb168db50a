package io.planengine.jvm.ops.dedup;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.DeduplicateSpec;
import io.planengine.jvm.spec.Spec;
import java.util.Arrays;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.types.StructType;

/**
 * {@code stream-exec-deduplicate} on the JVM: Flink's four deduplicate functions in one processor.
 *
 * <p>State {@code keptRow}: {@link StoredRow} (the row currently emitted for the key, typed, and its write
 * time).
 *
 * <ul>
 *   <li>proctime keep-first: the first row wins, later rows are dropped; the output is insert-only;
 *   <li>proctime keep-last: every row replaces the kept one: {@code +I} first, then {@code -U old} (when
 *       {@code generateUpdateBefore}) and {@code +U new};
 *   <li>rowtime keep-first / keep-last: a row replaces the kept one when its rowtime ({@code orderField}) is
 *       smaller (keep-first) or not smaller (keep-last), as Flink's {@code RowTimeDeduplicateFunction}; a row
 *       with a NULL rowtime never replaces a kept row.
 * </ul>
 *
 * <p>Spec: {@link DeduplicateSpec}.
 */
public final class Deduplicate extends KeyedChangelogProcessor<DeduplicateSpec> {
  private static final long serialVersionUID = 1L;

  private transient boolean keepLast;
  private transient boolean rowtime;
  private transient int orderField;
  private transient boolean generateUpdateBefore;
  private transient long ttlMs;
  private transient int width;
  private transient StoredRow kept;

  private Deduplicate(String spec, StructType input, boolean updatingOutput) {
    super(spec, input, updatingOutput);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    DeduplicateSpec spec = DeduplicateSpec.parse(specJson);
    boolean insertOnly = spec.insertOnly();
    StructType data = StoredRow.dataFields(input.schema());
    return new KeyedOperator(input, spec.uniqueKeys(), new Deduplicate(specJson, input.schema(), !insertOnly),
        Keyed.outputSchema(Arrays.asList(fieldTypes(data)), !insertOnly));
  }

  static org.apache.spark.sql.types.DataType[] fieldTypes(StructType t) {
    org.apache.spark.sql.types.DataType[] out = new org.apache.spark.sql.types.DataType[t.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = t.fields()[i].dataType();
    }
    return out;
  }

  @Override
  protected DeduplicateSpec readSpec(Spec json) {
    return DeduplicateSpec.from(json);
  }

  @Override
  protected void open(DeduplicateSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    keepLast = spec.keepLastRow();
    rowtime = spec.isRowtime();
    orderField = spec.orderField();
    generateUpdateBefore = spec.generateUpdateBefore();
    ttlMs = spec.stateTtlMs();
    StructType data = StoredRow.dataFields(inputSchema);
    width = data.size();
    kept = StoredRow.open(handle, spec.stateNames().get(0), data);
  }

  private boolean replaces(Object[] prev, Object[] row) {
    if (!rowtime) {
      return keepLast;
    }
    Object fresh = row[orderField];
    Object old = prev[orderField];
    if (fresh == null) {
      return false;
    }
    if (old == null) {
      return true;
    }
    int c = Values.compare(fresh, old);
    return keepLast ? c >= 0 : c < 0;
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    Object[] prev = kept.get(ttlMs, now);
    boolean changed = false;
    while (input.next()) {
      if (!input.kind().isAccumulate()) {
        continue; // Flink's deduplicate takes insert-only input
      }
      Object[] row = StoredRow.fields(input.row(), width);
      if (prev == null) {
        out.emit(RowKind.INSERT, row);
      } else if (replaces(prev, row)) {
        if (generateUpdateBefore) {
          out.emit(RowKind.UPDATE_BEFORE, prev);
        }
        out.emit(RowKind.UPDATE_AFTER, row);
      } else {
        continue;
      }
      prev = row;
      changed = true;
    }
    if (prev != null && (changed || ttlMs > 0)) {
      kept.put(prev, now);
    }
  }
}
