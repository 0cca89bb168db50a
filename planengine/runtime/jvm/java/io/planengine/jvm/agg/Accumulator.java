package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;

/**
 * One aggregate's running state for one group: accumulate and retract non-null (and FILTER-passing)
 * values, merge another partial, give the result in the result type's external representation, and save
 * itself as a row of the function's {@link AggregateFunction#accumulatorType()}.
 */
public abstract class Accumulator {
  public abstract void accumulate(Object value);

  public void retract(Object value) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot retract");
  }

  public void merge(Accumulator other) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot merge");
  }

  public abstract Object value();

  public abstract Row save();
}
