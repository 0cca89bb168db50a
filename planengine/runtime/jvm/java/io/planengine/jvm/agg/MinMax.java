package io.planengine.jvm.agg;

import io.planengine.jvm.core.Values;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * MIN and MAX. Without retraction the accumulator is the extreme. Under retraction every input value is
 * counted in the bag (Flink's {@code MinWithRetractAggFunction} map view) and the extreme is cached: only
 * retracting the last copy of the current extreme rescans the bag.
 */
final class MinMax extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final boolean max;

  MinMax(AggCall call, boolean retraction, boolean max) {
    super(call, retraction);
    this.max = max;
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("value", call.argType(), true);
  }

  @Override
  public boolean usesBag() {
    return retraction;
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, bag, null);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(this, bag, state.get(0));
  }

  /**
   * Whether {@code a} replaces {@code b}. Flink's MIN/MAX without retraction compare FLOAT/DOUBLE with the
   * primitive operators (a NaN never replaces, -0.0 and 0.0 tie); the retracting versions, and every other
   * type, use {@code compareTo} ({@link Values#compare}).
   */
  boolean better(Object a, Object b) {
    if (!retraction && a instanceof Double && b instanceof Double) {
      return max ? (Double) a > (Double) b : (Double) a < (Double) b;
    }
    if (!retraction && a instanceof Float && b instanceof Float) {
      return max ? (Float) a > (Float) b : (Float) a < (Float) b;
    }
    int c = Values.compare(a, b);
    return max ? c > 0 : c < 0;
  }

  private static final class Acc extends Accumulator {
    private final MinMax f;
    private final ValueBag bag;
    private Object value;

    Acc(MinMax f, ValueBag bag, Object value) {
      this.f = f;
      this.bag = bag;
      this.value = value;
    }

    @Override
    public void accumulate(Object v) {
      if (bag != null) {
        bag.add(v, 1);
      }
      if (value == null || f.better(v, value)) {
        value = v;
      }
    }

    @Override
    public void retract(Object v) {
      if (bag == null) {
        super.retract(v);
      }
      long left = bag.add(v, -1);
      if (left > 0 || value == null || !Values.equal(v, value)) {
        return;
      }
      Object best = null;
      for (Object candidate : bag.values()) {
        if (best == null || f.better(candidate, best)) {
          best = candidate;
        }
      }
      value = best;
    }

    @Override
    public void merge(Accumulator other) {
      Object o = ((Acc) other).value;
      if (o != null && (value == null || f.better(o, value))) {
        value = o;
      }
    }

    @Override
    public Object value() {
      return value;
    }

    @Override
    public Row save() {
      return RowFactory.create(value);
    }
  }
}
