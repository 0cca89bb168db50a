package io.planengine.jvm.agg;

import java.math.BigDecimal;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * STDDEV_POP/SAMP and VAR_POP/SAMP from (n, sum, sum of squares) in double precision, as Flink reduces
 * them ({@code (Σx² − (Σx)²/n) / (n or n−1)}, square root for STDDEV); NULL for no values, and for one
 * value in the sample variants. The double is then cast to the result type.
 */
final class Variance extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private static final StructType TYPE = new StructType().add("count", DataTypes.LongType, false)
      .add("sum", DataTypes.DoubleType, false).add("squares", DataTypes.DoubleType, false);
  private final boolean sample;
  private final boolean root;

  Variance(AggCall call, boolean retraction, boolean sample, boolean root) {
    super(call, retraction);
    this.sample = sample;
    this.root = root;
  }

  @Override
  public StructType accumulatorType() {
    return TYPE;
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, 0L, 0.0, 0.0);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(this, state.getLong(0), state.getDouble(1), state.getDouble(2));
  }

  private static final class Acc extends Accumulator {
    private final Variance f;
    private long n;
    private double sum;
    private double squares;

    Acc(Variance f, long n, double sum, double squares) {
      this.f = f;
      this.n = n;
      this.sum = sum;
      this.squares = squares;
    }

    @Override
    public void accumulate(Object value) {
      double v = ((Number) value).doubleValue();
      n++;
      sum += v;
      squares += v * v;
    }

    @Override
    public void retract(Object value) {
      double v = ((Number) value).doubleValue();
      n--;
      sum -= v;
      squares -= v * v;
    }

    @Override
    public void merge(Accumulator other) {
      Acc o = (Acc) other;
      n += o.n;
      sum += o.sum;
      squares += o.squares;
    }

    @Override
    public Object value() {
      if (n <= 0 || (f.sample && n <= 1)) {
        return null;
      }
      double var = Math.max((squares - sum * sum / n) / (f.sample ? n - 1 : n), 0.0);
      double out = f.root ? Math.sqrt(var) : var;
      Numeric.Kind k = Numeric.kind(f.call.resultType);
      if (k == Numeric.Kind.DECIMAL) {
        return Numeric.cast(new BigDecimal(Double.toString(out)), f.call.resultType);
      }
      return Numeric.cast(out, f.call.resultType);
    }

    @Override
    public Row save() {
      return RowFactory.create(n, sum, squares);
    }
  }
}
