package io.planengine.jvm.agg;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The built-in aggregate functions with a JVM accumulator, keyed by (name, version) as plans reference
 * them. A call to anything else is an error naming the function: the engine decides before translation
 * (from the plan alone) which calls run here, so reaching this error is a planengine bug.
 */
public final class AggregateFunctions {
  private AggregateFunctions() {}

  /** Names of version 1 of every function this library implements (the engine mirrors this list). */
  public static final String[] VERSION_1 = {
    "COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "COLLECT",
    "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "STDDEV", "VARIANCE", "BOOL_AND", "BOOL_OR"
  };

  /**
   * Version 1 of the functions only an OVER window calls (no group aggregate has them): the engine mirrors this
   * list for {@code stream-exec-over-aggregate_4}, the first version that runs them here.
   */
  public static final String[] OVER_ONLY = {"LAG"};

  public static AggregateFunction create(AggCall call, boolean retraction) {
    if (call.version != 1) {
      throw new IllegalArgumentException("aggregate " + call.name + " version " + call.version
          + " has no JVM accumulator in this planengine-jvm");
    }
    AggregateFunction f = plain(call, retraction && !(call.distinct && isExtreme(call.name)));
    if (!call.distinct) {
      return f;
    }
    return new Distinct(f, bagType(call));
  }

  private static boolean isExtreme(String name) {
    return name.equals("MIN") || name.equals("MAX");
  }

  private static DataType bagType(AggCall call) {
    if (call.argTypes.length == 1) {
      return call.argTypes[0];
    }
    StructType t = new StructType();
    for (int i = 0; i < call.argTypes.length; i++) {
      t = t.add("a" + i, call.argTypes[i], true);
    }
    return t;
  }

  private static AggregateFunction plain(AggCall call, boolean retraction) {
    switch (call.name) {
      case "COUNT":
        return new Count(call, retraction);
      case "SUM":
        return new Sum(call, retraction, false);
      case "SUM0":
      case "$SUM0":
        return new Sum(call, retraction, true);
      case "AVG":
        return new Avg(call, retraction);
      case "MIN":
        return new MinMax(call, retraction, false);
      case "MAX":
        return new MinMax(call, retraction, true);
      case "FIRST_VALUE":
        return new FirstLast(call, retraction, false);
      case "LAST_VALUE":
        return new FirstLast(call, retraction, true);
      case "LISTAGG":
        return new ListAgg(call, retraction);
      case "COLLECT":
        return new Collect(call, retraction);
      case "STDDEV_POP":
        return new Variance(call, retraction, false, true);
      case "STDDEV_SAMP":
      case "STDDEV":
        return new Variance(call, retraction, true, true);
      case "VAR_POP":
        return new Variance(call, retraction, false, false);
      case "VAR_SAMP":
      case "VARIANCE":
        return new Variance(call, retraction, true, false);
      case "BOOL_AND":
        return new BoolAgg(call, retraction, true);
      case "BOOL_OR":
        return new BoolAgg(call, retraction, false);
      case "LAG":
        return new Lag(call);
      default:
        throw new IllegalArgumentException("aggregate " + call.name + " has no JVM accumulator");
    }
  }
}
