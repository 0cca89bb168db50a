package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** COUNT(*), COUNT(x), COUNT(x, y): rows whose arguments are all non-null (the caller skips the others). */
final class Count extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private static final StructType TYPE = new StructType().add("count", DataTypes.LongType, false);

  Count(AggCall call, boolean retraction) {
    super(call, retraction);
  }

  @Override
  public StructType accumulatorType() {
    return TYPE;
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(0L);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(state.getLong(0));
  }

  private static final class Acc extends Accumulator {
    private long count;

    Acc(long count) {
      this.count = count;
    }

    @Override
    public void accumulate(Object value) {
      count++;
    }

    @Override
    public void retract(Object value) {
      count--;
    }

    @Override
    public void merge(Accumulator other) {
      count += ((Acc) other).count;
    }

    @Override
    public Object value() {
      return count;
    }

    @Override
    public Row save() {
      return RowFactory.create(count);
    }
  }
}
