package io.planengine.jvm.agg;

import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.Values;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * LISTAGG(x [, separator]): the non-null values in arrival order joined by the separator (default ",");
 * the list is kept so a retraction can remove the first equal value; NULL when empty.
 */
final class ListAgg extends AggregateFunction {
  private static final long serialVersionUID = 1L;
  private final String separator;

  ListAgg(AggCall call, boolean retraction) {
    super(call, retraction);
    if (!call.constants.isEmpty()) {
      separator = call.constants.get(0);
    } else if (call.args.length > 1) {
      throw new IllegalArgumentException("LISTAGG's separator must be a literal");
    } else {
      separator = ",";
    }
  }

  @Override
  public StructType accumulatorType() {
    return new StructType().add("values", DataTypes.createArrayType(DataTypes.StringType, true), false);
  }

  @Override
  public Accumulator create(ValueBag bag) {
    return new Acc(this, new ArrayList<>());
  }

  @Override
  public Accumulator restore(Row state, ValueBag bag) {
    return new Acc(this, new ArrayList<>(state.getList(0)));
  }

  private static final class Acc extends Accumulator {
    private final ListAgg f;
    private final List<Object> values;

    Acc(ListAgg f, List<Object> values) {
      this.f = f;
      this.values = values;
    }

    @Override
    public void accumulate(Object v) {
      values.add(String.valueOf(v));
    }

    @Override
    public void retract(Object v) {
      String s = String.valueOf(v);
      for (int i = 0; i < values.size(); i++) {
        if (Values.equal(values.get(i), s)) {
          values.remove(i);
          return;
        }
      }
    }

    @Override
    public void merge(Accumulator other) {
      values.addAll(((Acc) other).values);
    }

    @Override
    public Object value() {
      if (values.isEmpty()) {
        return null;
      }
      StringBuilder out = new StringBuilder();
      for (int i = 0; i < values.size(); i++) {
        if (i > 0) {
          out.append(f.separator);
        }
        out.append(values.get(i));
      }
      return out.toString();
    }

    @Override
    public Row save() {
      return RowFactory.create(Scala.seq(values));
    }
  }
}
