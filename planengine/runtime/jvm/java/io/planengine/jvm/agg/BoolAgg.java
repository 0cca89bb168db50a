package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** BOOL_AND / BOOL_OR from the counts of TRUE and FALSE values (retractable); NULL when empty. */
final class BoolAgg extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private static final StructType TYPE = new StructType().add("trues", DataTypes.LongType, false)
      .add("falses", DataTypes.LongType, false);
  private final boolean and;

  BoolAgg(AggCall call, boolean retraction, boolean and) {
    super(call, retraction);
    this.and = and;
  }

  @Override
  public StructType accumulatorType() {
    return TYPE;
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(and, 0L, 0L);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(and, state.getLong(0), state.getLong(1));
  }

  private static final class Acc extends Accumulator {
    private final boolean and;
    private long trues;
    private long falses;

    Acc(boolean and, long trues, long falses) {
      this.and = and;
      this.trues = trues;
      this.falses = falses;
    }

    @Override
    public void accumulate(Object v) {
      if ((Boolean) v) {
        trues++;
      } else {
        falses++;
      }
    }

    @Override
    public void retract(Object v) {
      if ((Boolean) v) {
        trues--;
      } else {
        falses--;
      }
    }

    @Override
    public void merge(Accumulator other) {
      trues += ((Acc) other).trues;
      falses += ((Acc) other).falses;
    }

    @Override
    public Object value() {
      if (trues + falses <= 0) {
        return null;
      }
      return and ? falses == 0 : trues > 0;
    }

    @Override
    public Row save() {
      return RowFactory.create(trues, falses);
    }
  }
}
