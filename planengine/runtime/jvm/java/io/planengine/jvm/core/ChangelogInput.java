package io.planengine.jvm.core;

import org.apache.spark.sql.Row;

/**
 * One key's input rows of a micro-batch in arrival order, each with its row kind: read from the hidden
 * {@code _rowkind} column on an updating edge, INSERT on an insert-only one.
 */
public final class ChangelogInput {
  private final scala.collection.Iterator<Row> rows;
  private final int kindIndex;
  private Row row;
  private RowKind kind;

  ChangelogInput(scala.collection.Iterator<Row> rows, int kindIndex) {
    this.rows = rows;
    this.kindIndex = kindIndex;
  }

  /** Moves to the next row; false at the end. */
  public boolean next() {
    if (!rows.hasNext()) {
      row = null;
      return false;
    }
    row = rows.next();
    kind = kindIndex < 0 ? RowKind.INSERT : RowKind.parse(row.getString(kindIndex));
    return true;
  }

  public Row row() {
    return row;
  }

  public RowKind kind() {
    return kind;
  }
}
