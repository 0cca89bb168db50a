package io.planengine.jvm.agg;

import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.Values;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** COLLECT: the MULTISET of non-null values (Spark: MAP value -> INT multiplicity). */
final class Collect extends AggregateFunction {
  private static final long serialVersionUID = 1L;

  Collect(AggCall call, boolean retraction) {
    super(call, retraction);
  }

  @Override
  public StructType accumulatorType() {
    StructType entry = new StructType().add("value", call.argType(), true).add("count", DataTypes.LongType, false);
    return new StructType().add("entries", DataTypes.createArrayType(entry, false), false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(new LinkedHashMap<>());
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    Map<Object, Object[]> entries = new LinkedHashMap<>();
    for (Object e : state.getList(0)) {
      Row r = (Row) e;
      entries.put(Values.hashable(r.get(0)), new Object[] {r.get(0), r.getLong(1)});
    }
    return new Acc(entries);
  }

  private static final class Acc extends Accumulator {
    /** hashable value -> [value, count]. */
    private final Map<Object, Object[]> entries;

    Acc(Map<Object, Object[]> entries) {
      this.entries = entries;
    }

    private void change(Object v, long delta) {
      Object k = Values.hashable(v);
      Object[] e = entries.get(k);
      long c = (e == null ? 0L : (Long) e[1]) + delta;
      if (c > 0) {
        entries.put(k, new Object[] {v, c});
      } else {
        entries.remove(k);
      }
    }

    @Override
    public void accumulate(Object v) {
      change(v, 1);
    }

    @Override
    public void retract(Object v) {
      change(v, -1);
    }

    @Override
    public void merge(Accumulator other) {
      for (Object[] e : ((Acc) other).entries.values()) {
        change(e[0], (Long) e[1]);
      }
    }

    @Override
    public Object value() {
      Map<Object, Object> out = new LinkedHashMap<>();
      for (Object[] e : entries.values()) {
        out.put(e[0], (int) (long) (Long) e[1]);
      }
      return Scala.map(out);
    }

    @Override
    public Row save() {
      List<Object> rows = new ArrayList<>();
      for (Object[] e : entries.values()) {
        rows.add(RowFactory.create(e[0], e[1]));
      }
      return RowFactory.create(Scala.seq(rows));
    }
  }
}
