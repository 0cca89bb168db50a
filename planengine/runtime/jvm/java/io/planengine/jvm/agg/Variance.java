package io.planengine.jvm.agg;

import java.math.BigDecimal;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * STDDEV_POP/SAMP and VAR_POP/SAMP as Flink computes them: the planner (Calcite's
 * {@code AggregateReduceFunctionsRule}) rewrites them into {@code SUM(x * x)}, {@code SUM(x)} and
 * {@code COUNT(x)} with the argument cast to the result type, then evaluates
 * {@code (SUM(x*x) - SUM(x) * SUM(x) / COUNT(x)) / (COUNT(x) or COUNT(x) - 1)} and, for STDDEV,
 * {@code POWER(.., 0.5)}, cast back to the result type.
 *
 * <p>So for an integer result type every step is integer arithmetic: the squares and the sums wrap at the
 * result type's width, the divisions truncate (a BIGINT quotient), the square root of a negative (wrapped)
 * variance is NaN, which casts to 0. For FLOAT, DOUBLE and DECIMAL results the steps run in double
 * precision (Flink's DECIMAL steps round to its decimal precisions in between; this is the double
 * approximation) and the result is cast. SAMP of one value is NULL (its denominator is NULL), of none NULL.
 */
final class Variance extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final boolean sample;
  private final boolean root;
  private final boolean integral;
  private final DataType sumType;

  Variance(AggCall call, boolean retraction, boolean sample, boolean root) {
    super(call, retraction);
    this.sample = sample;
    this.root = root;
    Numeric.Kind k = Numeric.kind(call.resultType);
    this.integral = k != null && Numeric.isIntegral(k);
    this.sumType = integral ? call.resultType : DataTypes.DoubleType;
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("count", DataTypes.LongType, false).add("sum", sumType, false)
        .add("squares", sumType, false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, 0L, Numeric.zero(sumType), Numeric.zero(sumType));
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(this, state.getLong(0), state.get(1), state.get(2));
  }

  private static final class Acc extends Accumulator {
    private final Variance f;
    private long n;
    private Object sum;
    private Object squares;

    Acc(Variance f, long n, Object sum, Object squares) {
      this.f = f;
      this.n = n;
      this.sum = sum;
      this.squares = squares;
    }

    private Object[] terms(Object value) {
      Object v = f.integral ? Numeric.cast(value, f.sumType) : (Object) ((Number) value).doubleValue();
      Object square = f.integral ? Numeric.multiply(v, v, f.sumType) : (Object) ((Double) v * (Double) v);
      return new Object[] {v, square};
    }

    @Override
    public void accumulate(Object value) {
      Object[] t = terms(value);
      n++;
      sum = Numeric.add(sum, t[0], f.sumType);
      squares = Numeric.add(squares, t[1], f.sumType);
    }

    @Override
    public void retract(Object value) {
      Object[] t = terms(value);
      n--;
      sum = Numeric.subtract(sum, t[0], f.sumType);
      squares = Numeric.subtract(squares, t[1], f.sumType);
    }

    @Override
    public void merge(Accumulator other) {
      Acc o = (Acc) other;
      n += o.n;
      sum = Numeric.add(sum, o.sum, f.sumType);
      squares = Numeric.add(squares, o.squares, f.sumType);
    }

    @Override
    public Object value() {
      if (n <= 0 || (f.sample && n == 1)) {
        return null;
      }
      long denominator = f.sample ? n - 1 : n;
      DataType result = f.call.resultType;
      if (f.integral) {
        long squareOfSum = ((Number) Numeric.multiply(sum, sum, f.sumType)).longValue();
        long variance = (((Number) squares).longValue() - squareOfSum / n) / denominator;
        if (!f.root) {
          return Numeric.cast(variance, result);
        }
        return Numeric.cast((long) Math.pow(variance, 0.5), result); // NaN (negative) casts to 0
      }
      double s = (Double) sum;
      double variance = ((Double) squares - s * s / n) / denominator;
      double out = f.root ? Math.pow(variance, 0.5) : variance;
      if (Numeric.kind(result) == Numeric.Kind.DECIMAL) {
        return Double.isNaN(out) || Double.isInfinite(out) ? null
            : Numeric.cast(new BigDecimal(Double.toString(out)), result);
      }
      return Numeric.cast(out, result);
    }

    @Override
    public Row save() {
      return RowFactory.create(n, sum, squares);
    }
  }
}
