package io.planengine.jvm.agg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * What one aggregate call takes from an input row, with Flink's rules: FILTER keeps rows where the condition
 * is TRUE, {@code COUNT(*)} counts rows, NULL arguments are skipped (a multi-argument call skips a row when any
 * argument is NULL), LISTAGG's second operand is its separator literal, and LAG takes every row's operands as
 * one row with NULLs kept (a NULL value is a value LAG returns; its offset and default are operands). Shared by
 * every operator that feeds the library's accumulators, so they skip and combine arguments the same way.
 */
public final class CallInput {
  /** The value {@link #argument} answers when the row does not reach the accumulator. */
  public static final Object SKIP = new Object();

  private final int[] args;
  private final int filter;
  private final boolean countStar;
  private final boolean keepsNulls;

  public CallInput(AggCall call) {
    this.args = call.name.equals("LISTAGG") && call.args.length > 1 ? new int[] {call.args[0]} : call.args;
    this.filter = call.filterArg;
    this.countStar = call.name.equals("COUNT") && call.args.length == 0;
    this.keepsNulls = call.name.equals("LAG");
  }

  /** The value to accumulate or retract for {@code row}, or {@link #SKIP}. */
  public Object argument(Row row) {
    if (filter >= 0 && !Boolean.TRUE.equals(row.get(filter))) {
      return SKIP;
    }
    if (countStar) {
      return Boolean.TRUE;
    }
    if (keepsNulls) {
      Object[] vs = new Object[args.length];
      for (int i = 0; i < args.length; i++) {
        vs[i] = row.get(args[i]);
      }
      return RowFactory.create(vs);
    }
    if (args.length == 1) {
      Object v = row.get(args[0]);
      return v == null ? SKIP : v;
    }
    Object[] vs = new Object[args.length];
    for (int i = 0; i < args.length; i++) {
      vs[i] = row.get(args[i]);
      if (vs[i] == null) {
        return SKIP;
      }
    }
    return RowFactory.create(vs);
  }

  /** One input per function, in order: what the event-time processors keep beside their functions. */
  public static CallInput[] of(AggregateFunction[] functions) {
    CallInput[] out = new CallInput[functions.length];
    for (int i = 0; i < functions.length; i++) {
      out[i] = new CallInput(functions[i].call());
    }
    return out;
  }
}
