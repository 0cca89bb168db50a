package io.planengine.jvm.ops.aggregate;

import io.planengine.jvm.agg.ValueBag;
import io.planengine.jvm.core.Values;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * The {@code distinctValues} map state of one key seen through a write-back cache, one {@link ValueBag} per
 * aggregate that needs one. The state key is {@code (agg INT, v<slot> ...)}: the aggregate's index and its
 * value in that aggregate's own typed column (the others NULL), so one state variable holds every bag with
 * exact types ({@code distinctValues} keeps one state variable, as the plan declares). A key's entries are read at most once per micro-batch and written back once.
 */
final class Bags {
  private final MapState<Row, Long> state;
  private final int width;
  private final Map<Object, Entry> cache = new HashMap<>();
  private boolean loadedAll;
  private boolean clearState;

  private static final class Entry {
    final Row key;
    final int agg;
    final Object value;
    long count;
    boolean dirty;

    Entry(Row key, int agg, Object value, long count) {
      this.key = key;
      this.agg = agg;
      this.value = value;
      this.count = count;
    }
  }

  Bags(MapState<Row, Long> state, int width) {
    this.state = state;
    this.width = width;
  }

  /**
   * The state key schema: the aggregate index, then per aggregate with a bag (in slot order) its value
   * column {@code v<aggregate index>}.
   */
  static StructType keyType(List<Integer> slotAggs, List<DataType> slotTypes) {
    StructType t = new StructType().add("agg", DataTypes.IntegerType, false);
    for (int i = 0; i < slotTypes.size(); i++) {
      t = t.add("v" + slotAggs.get(i), slotTypes.get(i), true);
    }
    return t;
  }

  void reset() {
    cache.clear();
    loadedAll = false;
    clearState = false;
  }

  /** Forget every entry of the key (its group was deleted). */
  void clear() {
    cache.clear();
    loadedAll = true;
    clearState = true;
  }

  ValueBag bag(int agg, int slot) {
    return new View(agg, slot);
  }

  void flush() {
    if (clearState) {
      state.clear();
    }
    for (Entry e : cache.values()) {
      if (!e.dirty) {
        continue;
      }
      if (e.count > 0) {
        state.updateValue(e.key, e.count);
      } else if (!clearState) {
        state.removeKey(e.key);
      }
      e.dirty = false;
    }
    clearState = false;
  }

  private void loadAll() {
    if (loadedAll) {
      return;
    }
    scala.collection.Iterator<Tuple2<Row, Long>> it = state.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Long> kv = it.next();
      Row key = kv._1();
      int agg = key.getInt(0);
      Object value = null;
      for (int i = 1; i < key.length(); i++) {
        if (!key.isNullAt(i)) {
          value = key.get(i);
          break;
        }
      }
      Object h = hashKey(agg, value);
      if (!cache.containsKey(h)) {
        cache.put(h, new Entry(key, agg, value, kv._2()));
      }
    }
    loadedAll = true;
  }

  private static Object hashKey(int agg, Object value) {
    return List.of(agg, Values.hashable(value));
  }

  private final class View implements ValueBag {
    private final int agg;
    private final int slot;

    View(int agg, int slot) {
      this.agg = agg;
      this.slot = slot;
    }

    private Entry entry(Object value) {
      Object h = hashKey(agg, value);
      Entry e = cache.get(h);
      if (e == null) {
        Object[] fields = new Object[width + 1];
        fields[0] = agg;
        fields[slot + 1] = value;
        Row key = RowFactory.create(fields);
        Long stored = loadedAll ? null : state.getValue(key);
        e = new Entry(key, agg, value, stored == null ? 0L : stored);
        cache.put(h, e);
      }
      return e;
    }

    @Override
    public long add(Object value, long delta) {
      Entry e = entry(value);
      e.count = Math.max(e.count + delta, 0L);
      e.dirty = true;
      return e.count;
    }

    @Override
    public long count(Object value) {
      return entry(value).count;
    }

    @Override
    public Iterable<Object> values() {
      loadAll();
      List<Object> out = new ArrayList<>();
      for (Entry e : cache.values()) {
        if (e.agg == agg && e.count > 0) {
          out.add(e.value);
        }
      }
      return out;
    }
  }
}
