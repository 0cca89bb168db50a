package io.planengine.jvm.spec;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;

/**
 * One aggregate call as the plan states it: function (name, version), argument and FILTER positions in the
 * operator's input, DISTINCT, the result type and the literal operands (LISTAGG's separator). Shared by the
 * group aggregate, OVER and session families; {@code io.planengine.jvm.agg.AggCall} binds it to an input.
 * Python: {@code specs.AggCallSpec}.
 */
public record AggCallSpec(String function, int version, int[] args, @Nullable Integer filterArg, boolean distinct,
    DataType resultType, List<@Nullable String> constants) {

  public static AggCallSpec from(Spec spec) {
    List<String> constants = new ArrayList<>();
    for (Spec c : spec.list("constants")) {
      JsonNode v = c.json();
      constants.add(v.isNull() ? null : v.asText());
    }
    return new AggCallSpec(spec.string("function"), spec.intValue("version", 1), spec.ints("args"),
        spec.nullableInt("filterArg"), spec.bool("distinct", false), spec.type("resultType"), constants);
  }
}
