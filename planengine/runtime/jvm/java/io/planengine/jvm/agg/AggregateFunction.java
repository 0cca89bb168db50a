package io.planengine.jvm.agg;

import java.io.Serializable;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A built-in aggregate function bound to its call: the layout of its accumulator in state and the
 * accumulators themselves. Instances are made by {@link AggregateFunctions} from the call's (name, version).
 */
public abstract class AggregateFunction implements Serializable {
  private static final long serialVersionUID = 1L;

  protected final AggCall call;
  /** Whether the input may retract (the accumulator must then support {@code retract}). */
  protected final boolean retraction;

  protected AggregateFunction(AggCall call, boolean retraction) {
    this.call = call;
    this.retraction = retraction;
  }

  public AggCall call() {
    return call;
  }

  /** The accumulator as state keeps it (a STRUCT, readable with Spark's state data source). */
  public abstract StructType accumulatorType();

  /** Whether accumulators need a {@link ValueBag} (DISTINCT, MIN/MAX under retraction). */
  public boolean usesBag() {
    return false;
  }

  /** The type of the values a bag holds (the argument, or a STRUCT of the arguments). */
  public DataType bagValueType() {
    return call.argType();
  }

  public abstract Accumulator create(ValueBag bag);

  public abstract Accumulator restore(Row state, ValueBag bag);

  public DataType resultType() {
    return call.resultType;
  }
}
