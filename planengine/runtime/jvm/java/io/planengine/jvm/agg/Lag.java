package io.planengine.jvm.agg;

import io.planengine.jvm.core.Scala;
import java.math.BigDecimal;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;

/**
 * {@code LAG(x [, offset [, default]])} in an OVER window (OVER only: {@code stream-exec-over-aggregate_4} and
 * later), with Flink's {@code LagAggFunction} semantics: the accumulator keeps the last {@code offset + 1}
 * values of {@code x} in processing order (NULLs included: a NULL {@code x} is a value LAG returns), and the
 * result is the oldest of them once there are {@code offset + 1}, else the default (NULL without one). The
 * offset and default are taken from the latest accumulated row, as Flink's accumulator does (literals in
 * practice); a NULL offset is 1. It has no retraction (Flink's neither): a bounded frame recomputes it over the
 * frame's rows, which gives the value {@code offset} rows before the frame's last row within the frame.
 *
 * <p>The caller hands each row's operands as one row {@code (x, offset?, default?)}, NULLs kept ({@link
 * CallInput}). State: {@code (offset INT, defaultValue, buffer ARRAY<x>)}.
 */
final class Lag extends AggregateFunction {
  private static final long serialVersionUID = 1L;

  Lag(AggCall call) {
    super(call, false);
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("offset", DataTypes.IntegerType, false)
        .add("defaultValue", call.resultType, true)
        .add("buffer", DataTypes.createArrayType(call.resultType, true), false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, 1, null, new ArrayDeque<>());
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    ArrayDeque<Object> buffer = new ArrayDeque<>();
    for (Object v : state.getList(2)) {
      buffer.addLast(v == null ? NULL : v);
    }
    return new Acc(this, state.getInt(0), state.get(1), buffer);
  }

  /** The default in the result's representation: an INT literal default of a BIGINT {@code x} is a Long. */
  private Object asResult(Object v) {
    if (!(v instanceof Number) || !(call.resultType instanceof NumericType)
        || v instanceof BigDecimal && call.resultType instanceof DecimalType) {
      return v;
    }
    return Numeric.cast(v, call.resultType);
  }

  private static final class Acc extends Accumulator {
    private final Lag f;
    private int offset;
    private Object defaultValue;
    private final ArrayDeque<Object> buffer;

    Acc(Lag f, int offset, Object defaultValue, ArrayDeque<Object> buffer) {
      this.f = f;
      this.offset = offset;
      this.defaultValue = defaultValue;
      this.buffer = buffer;
    }

    @Override
    public void accumulate(Object operands) {
      Row r = (Row) operands;
      if (r.length() > 1) {
        offset = r.isNullAt(1) ? 1 : ((Number) r.get(1)).intValue();
        if (offset < 0) {
          throw new IllegalArgumentException("LAG offset " + offset + " is negative: it must be 0 or more");
        }
      }
      if (r.length() > 2) {
        defaultValue = f.asResult(r.get(2));
      }
      buffer.addLast(r.get(0) == null ? NULL : r.get(0));
      while (buffer.size() > offset + 1) {
        buffer.removeFirst();
      }
    }

    @Override
    public Object value() {
      if (buffer.size() < offset + 1) {
        return defaultValue;
      }
      Object v = buffer.peekFirst();
      return v == NULL ? null : v;
    }

    @Override
    public Row save() {
      List<Object> values = new ArrayList<>(buffer.size());
      for (Object v : buffer) {
        values.add(v == NULL ? null : v);
      }
      return RowFactory.create(offset, defaultValue, Scala.seq(values));
    }
  }

  /** A NULL value in the buffer ({@link ArrayDeque} holds no nulls). */
  private static final Object NULL = new Object();
}
