package io.planengine.jvm.agg;

import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.Values;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * FIRST_VALUE / LAST_VALUE of the non-null values in arrival order. Under retraction the accumulator keeps
 * every value in order, and a retraction removes the most recent equal one.
 */
final class FirstLast extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final boolean last;

  FirstLast(AggCall call, boolean retraction, boolean last) {
    super(call, retraction);
    this.last = last;
  }

  @Override
  public StructType accumulatorType() {
    if (retraction) {
      return new StructType().add("values", DataTypes.createArrayType(call.argType(), true), false);
    }
    return new StructType().add("value", call.argType(), true);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return retraction ? new Listed(this, new ArrayList<>()) : new Single(this, null);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return retraction ? new Listed(this, new ArrayList<>(state.getList(0))) : new Single(this, state.get(0));
  }

  private static final class Single extends Accumulator {
    private final FirstLast f;
    private Object value;

    Single(FirstLast f, Object value) {
      this.f = f;
      this.value = value;
    }

    @Override
    public void accumulate(Object v) {
      if (f.last || value == null) {
        value = v;
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

  private static final class Listed extends Accumulator {
    private final FirstLast f;
    private final List<Object> values;

    Listed(FirstLast f, List<Object> values) {
      this.f = f;
      this.values = values;
    }

    @Override
    public void accumulate(Object v) {
      values.add(v);
    }

    @Override
    public void retract(Object v) {
      for (int i = values.size() - 1; i >= 0; i--) {
        if (Values.equal(values.get(i), v)) {
          values.remove(i);
          return;
        }
      }
    }

    @Override
    public Object value() {
      if (values.isEmpty()) {
        return null;
      }
      return f.last ? values.get(values.size() - 1) : values.get(0);
    }

    @Override
    public Row save() {
      return RowFactory.create(Scala.seq(values));
    }
  }
}
