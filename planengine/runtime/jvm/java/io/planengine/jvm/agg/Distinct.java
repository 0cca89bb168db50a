package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/** DISTINCT: the bag counts each value; the inner aggregate sees it on 0 -> 1 and retracts it on 1 -> 0. */
final class Distinct extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final AggregateFunction inner;
  private final DataType bagType;

  Distinct(AggregateFunction inner, DataType bagType) {
    super(inner.call, inner.retraction);
    this.inner = inner;
    this.bagType = bagType;
  }

  @Override
  public StructType accumulatorType() {
    return inner.accumulatorType();
  }

  @Override
  public boolean usesBag() {
    return true;
  }

  @Override
  public DataType bagValueType() {
    return bagType;
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(inner.create(null), bag);
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(inner.restore(state, null), bag);
  }

  private static final class Acc extends Accumulator {
    private final Accumulator inner;
    private final ValueBag bag;

    Acc(Accumulator inner, ValueBag bag) {
      this.inner = inner;
      this.bag = bag;
    }

    @Override
    public void accumulate(Object v) {
      if (bag.add(v, 1) == 1) {
        inner.accumulate(v);
      }
    }

    @Override
    public void retract(Object v) {
      if (bag.count(v) > 0 && bag.add(v, -1) == 0) { // a value never seen retracts nothing
        inner.retract(v);
      }
    }

    @Override
    public Object value() {
      return inner.value();
    }

    @Override
    public Row save() {
      return inner.save();
    }
  }
}
