package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * SUM and SUM0 in the result type (Flink's {@code SumWithRetractAggFunction} / {@code Sum0AggFunction}):
 * integers wrap like Java's, FLOAT adds in float precision, DECIMAL(38, s) overflows to NULL. The count
 * of non-null values decides emptiness: SUM of nothing is NULL, SUM0 of nothing is 0.
 *
 * <p>Flink's declarative sum {@code IF(ISNULL(sum), x, sum + x)} restarts from the next value after a
 * DECIMAL overflow made the sum NULL; this does the same.
 */
final class Sum extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final boolean zeroWhenEmpty;

  Sum(AggCall call, boolean retraction, boolean zeroWhenEmpty) {
    super(call, retraction);
    this.zeroWhenEmpty = zeroWhenEmpty;
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("sum", call.resultType, true).add("count", DataTypes.LongType, false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(call.resultType, zeroWhenEmpty, null, 0L);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(call.resultType, zeroWhenEmpty, state.get(0), state.getLong(1));
  }

  private static final class Acc extends Accumulator {
    private final DataType type;
    private final boolean zeroWhenEmpty;
    private Object sum;
    private long count;

    Acc(DataType type, boolean zeroWhenEmpty, Object sum, long count) {
      this.type = type;
      this.zeroWhenEmpty = zeroWhenEmpty;
      this.sum = sum;
      this.count = count;
    }

    @Override
    public void accumulate(Object value) {
      Object v = Numeric.cast(value, type);
      sum = sum == null ? v : Numeric.add(sum, v, type);
      count++;
    }

    @Override
    public void retract(Object value) {
      Object v = Numeric.cast(value, type);
      sum = Numeric.subtract(sum == null ? Numeric.zero(type) : sum, v, type);
      count--;
    }

    @Override
    public void merge(Accumulator other) {
      Acc o = (Acc) other;
      if (o.sum != null) {
        sum = sum == null ? o.sum : Numeric.add(sum, o.sum, type);
      }
      count += o.count;
    }

    @Override
    public Object value() {
      if (count <= 0) {
        return zeroWhenEmpty ? Numeric.zero(type) : null;
      }
      return sum;
    }

    @Override
    public Row save() {
      return RowFactory.create(sum, count);
    }
  }
}
