package io.planengine.jvm.ops.join;

import io.planengine.jvm.core.Values;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * One side's rows of one join key: the MapState {@code (row STRUCT<the side's fields>) -> (count BIGINT,
 * associations BIGINT, written BIGINT)}, loaded once per key and micro-batch and written back at its end.
 * {@code associations} is Flink's {@code numOfAssociations}: for a row of an outer (or semi/anti left) side,
 * how many rows of the other side it joins with now, which decides when its NULL-padded row is retracted or
 * re-emitted.
 */
final class SideRows {
  static final StructType VALUE = new StructType().add("count", DataTypes.LongType, false)
      .add("associations", DataTypes.LongType, false).add("written", DataTypes.LongType, false);

  static final class Entry {
    final Row key;
    final Object[] fields;
    long count;
    long associations;
    boolean dirty;
    /** {@link #fields} as Catalyst values, for a non-equi condition; converted on first use. */
    org.apache.spark.sql.catalyst.InternalRow internal;

    Entry(Row key, Object[] fields, long count, long associations) {
      this.key = key;
      this.fields = fields;
      this.count = count;
      this.associations = associations;
    }
  }

  private final MapState<Row, Row> state;
  private final Map<Object, Entry> rows = new LinkedHashMap<>();

  SideRows(MapState<Row, Row> state) {
    this.state = state;
  }

  static StructType keyType(StructType sideFields) {
    return new StructType().add("row", sideFields, false);
  }

  private static Object hashKey(Object[] fields) {
    Object[] h = new Object[fields.length];
    for (int i = 0; i < h.length; i++) {
      h[i] = Values.hashable(fields[i]);
    }
    return Arrays.asList(h);
  }

  /** Loads the key's rows; rows whose write time is older than {@code ttlMs} are dropped. */
  void load(long ttlMs, long now) {
    rows.clear();
    scala.collection.Iterator<Tuple2<Row, Row>> it = state.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> kv = it.next();
      Row row = kv._1().getStruct(0);
      Object[] fields = new Object[row.length()];
      for (int i = 0; i < fields.length; i++) {
        fields[i] = row.get(i);
      }
      Row v = kv._2();
      Entry e = new Entry(kv._1(), fields, v.getLong(0), v.getLong(1));
      if (ttlMs > 0 && now - v.getLong(2) > ttlMs) {
        e.count = 0;
        e.dirty = true;
      }
      rows.put(hashKey(fields), e);
    }
  }

  /** Rows present (count > 0), in load order. */
  List<Entry> entries() {
    List<Entry> out = new ArrayList<>();
    for (Entry e : rows.values()) {
      if (e.count > 0) {
        out.add(e);
      }
    }
    return out;
  }

  void add(Object[] fields, long associations) {
    Object h = hashKey(fields);
    Entry e = rows.get(h);
    if (e == null || e.count <= 0) {
      e = new Entry(RowFactory.create(RowFactory.create(fields)), fields, 1, associations);
      rows.put(h, e);
    } else {
      e.count++;
      e.associations = associations;
    }
    e.dirty = true;
  }

  void retract(Object[] fields) {
    Entry e = rows.get(hashKey(fields));
    if (e != null && e.count > 0) {
      e.count--;
      e.dirty = true;
    }
  }

  void setAssociations(Entry e, long associations) {
    e.associations = associations;
    e.dirty = true;
  }

  void flush(long now) {
    for (Entry e : rows.values()) {
      if (!e.dirty) {
        continue;
      }
      if (e.count > 0) {
        state.updateValue(e.key, RowFactory.create(e.count, e.associations, now));
      } else {
        state.removeKey(e.key);
      }
      e.dirty = false;
    }
  }
}
