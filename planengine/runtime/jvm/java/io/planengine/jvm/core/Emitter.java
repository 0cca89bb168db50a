package io.planengine.jvm.core;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Collects the changelog one key's input produced, as output rows {@code fields ++ _rowkind} (or just the
 * fields on an insert-only output edge), in emission order.
 */
public final class Emitter {
  private final boolean withKind;
  private List<Row> rows = new ArrayList<>();

  public Emitter(boolean withKind) {
    this.withKind = withKind;
  }

  public void emit(RowKind kind, Object[] fields) {
    if (!withKind) {
      rows.add(RowFactory.create(fields));
      return;
    }
    Object[] out = new Object[fields.length + 1];
    System.arraycopy(fields, 0, out, 0, fields.length);
    out[fields.length] = kind.text();
    rows.add(RowFactory.create(out));
  }

  public boolean isEmpty() {
    return rows.isEmpty();
  }

  scala.collection.Iterator<Row> drain() {
    if (rows.isEmpty()) {
      return scala.collection.Iterator$.MODULE$.empty();
    }
    // Hand the list itself to Spark and start a new one of the same size: one allocation per key, no copy and
    // no regrowing (keys of one batch tend to emit alike).
    List<Row> out = rows;
    rows = new ArrayList<>(out.size());
    return CollectionConverters.asScala(out.iterator());
  }
}
