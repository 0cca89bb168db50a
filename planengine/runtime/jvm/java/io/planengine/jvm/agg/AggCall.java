package io.planengine.jvm.agg;

import com.fasterxml.jackson.databind.JsonNode;
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

  /** {@code {"function", "version", "args", "filterArg", "distinct", "resultType", "constants"}}. */
  public static AggCall parse(Spec spec, StructType input) {
    int[] args = spec.ints("args");
    DataType[] argTypes = new DataType[args.length];
    for (int i = 0; i < args.length; i++) {
      if (args[i] < 0 || args[i] >= input.size()) {
        throw spec.error("args", "refers to input field " + args[i] + " of " + input.size());
      }
      argTypes[i] = input.fields()[args[i]].dataType();
    }
    List<String> constants = new ArrayList<>();
    for (Spec c : spec.list("constants")) {
      JsonNode v = c.json();
      constants.add(v.isNull() ? null : v.asText());
    }
    return new AggCall(spec.string("function").toUpperCase(java.util.Locale.ROOT), spec.intValue("version", 1),
        args, spec.index("filterArg"), spec.bool("distinct", false), spec.type("resultType"), argTypes,
        constants);
  }

  public DataType argType() {
    return argTypes.length > 0 ? argTypes[0] : null;
  }

  @Override
  public String toString() {
    return name + "_" + version + (distinct ? "(DISTINCT " : "(") + java.util.Arrays.toString(args) + ")";
  }
}
