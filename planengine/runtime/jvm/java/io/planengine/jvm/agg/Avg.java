package io.planengine.jvm.agg;

import java.math.BigDecimal;
import java.math.RoundingMode;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructType;

/**
 * AVG as Flink's {@code AvgAggFunction}: a sum (BIGINT for integer arguments, wrapping; DOUBLE for
 * floating point; DECIMAL(38, s) for DECIMAL(p, s)) and a count; the result is {@code sum / count} cast to
 * the result type: integer division truncating toward zero, DECIMAL division rounded HALF_UP to
 * {@code max(6, s)} digits (Flink's division type for DECIMAL(38, s) / BIGINT), then to the result scale.
 */
final class Avg extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final DataType sumType;

  Avg(AggCall call, boolean retraction) {
    super(call, retraction);
    Numeric.Kind k = Numeric.kind(call.argType());
    if (k == null) {
      throw new IllegalArgumentException("AVG over " + call.argType() + " is not numeric");
    }
    if (Numeric.isIntegral(k)) {
      sumType = DataTypes.LongType;
    } else if (k == Numeric.Kind.DECIMAL) {
      sumType = DataTypes.createDecimalType(38, ((DecimalType) call.argType()).scale());
    } else {
      sumType = DataTypes.DoubleType;
    }
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("sum", sumType, true).add("count", DataTypes.LongType, false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, Numeric.zero(sumType), 0L);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(this, state.get(0), state.getLong(1));
  }

  private static final class Acc extends Accumulator {
    private final Avg f;
    private Object sum;
    private long count;

    Acc(Avg f, Object sum, long count) {
      this.f = f;
      this.sum = sum;
      this.count = count;
    }

    @Override
    public void accumulate(Object value) {
      Object v = Numeric.cast(value, f.sumType);
      sum = sum == null ? null : Numeric.add(sum, v, f.sumType); // an overflowed DECIMAL sum stays NULL
      count++;
    }

    @Override
    public void retract(Object value) {
      Object v = Numeric.cast(value, f.sumType);
      sum = sum == null ? null : Numeric.subtract(sum, v, f.sumType);
      count--;
    }

    @Override
    public void merge(Accumulator other) {
      Acc o = (Acc) other;
      sum = sum == null || o.sum == null ? null : Numeric.add(sum, o.sum, f.sumType);
      count += o.count;
    }

    @Override
    public Object value() {
      if (count == 0 || sum == null) {
        return null;
      }
      DataType result = f.call.resultType;
      if (sum instanceof Long) {
        long s = (Long) sum;
        return Numeric.cast(s / count, result); // Java's division truncates toward zero
      }
      if (sum instanceof BigDecimal) {
        int scale = Math.max(6, ((DecimalType) f.sumType).scale());
        BigDecimal q = ((BigDecimal) sum).divide(BigDecimal.valueOf(count), scale, RoundingMode.HALF_UP);
        return Numeric.cast(q, result);
      }
      return Numeric.cast(((Number) sum).doubleValue() / count, result);
    }

    @Override
    public Row save() {
      return RowFactory.create(sum, count);
    }
  }
}
