package io.planengine.jvm.agg;

import io.planengine.jvm.spec.AggCallSpec;
import io.planengine.jvm.spec.Spec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * One aggregate call of a plan node: function (name, version), argument and FILTER positions in the input
 * row, DISTINCT, the result type and the literal operands (LISTAGG's separator). Serializable: it travels to
 * the executors inside the processor.
 */
public final class AggCall implements Serializable {
  private static final long serialVersionUID = 1L;

  public final String name;
  public final int version;
  public final int[] args;
  public final int filterArg;
  public final boolean distinct;
  public final DataType resultType;
  public final DataType[] argTypes;
  public final List<String> constants;

  public AggCall(String name, int version, int[] args, int filterArg, boolean distinct, DataType resultType,
      DataType[] argTypes, List<String> constants) {
    this.name = name;
    this.version = version;
    this.args = args;
    this.filterArg = filterArg;
    this.distinct = distinct;
    this.resultType = resultType;
    this.argTypes = argTypes;
    this.constants = constants;
  }

  /**
   * {@code call} over {@code input}: its arguments' types read from the input. An argument beyond the input fails
   * with the call's {@code path} in the spec ({@code $.aggCalls[1]}).
   */
  public static AggCall bind(AggCallSpec call, String path, StructType input) {
    int[] args = call.args();
    DataType[] argTypes = new DataType[args.length];
    for (int i = 0; i < args.length; i++) {
      if (args[i] < 0 || args[i] >= input.size()) {
        throw Spec.at(path + ".args", "refers to input field " + args[i] + " of " + input.size());
      }
      argTypes[i] = input.fields()[args[i]].dataType();
    }
    return new AggCall(call.function().toUpperCase(java.util.Locale.ROOT), call.version(), args,
        call.filterArg() == null ? -1 : call.filterArg(), call.distinct(), call.resultType(), argTypes,
        call.constants());
  }

  /** Each of a spec's {@code calls} (its field {@code field}, {@code $.aggCalls}) bound to {@code input}, in order. */
  public static List<AggCall> bindAll(List<AggCallSpec> calls, String field, StructType input) {
    List<AggCall> out = new ArrayList<>(calls.size());
    for (int i = 0; i < calls.size(); i++) {
      out.add(bind(calls.get(i), field + "[" + i + "]", input));
    }
    return out;
  }

  public DataType argType() {
    return argTypes.length > 0 ? argTypes[0] : null;
  }

  @Override
  public String toString() {
    return name + "_" + version + (distinct ? "(DISTINCT " : "(") + java.util.Arrays.toString(args) + ")";
  }
}
