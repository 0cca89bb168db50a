package io.planengine.jvm.ops.aggregate;

import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.Layout;
import io.planengine.jvm.spec.GroupAggregateSpec;
import io.planengine.jvm.spec.Spec;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * {@code stream-exec-group-aggregate} on the JVM: the input grouped by the grouping fields, one
 * {@link GroupAggregateProcessor} per key, output {@code f0..fn ++ _rowkind}.
 *
 * <p>Spec: {@link GroupAggregateSpec}.
 */
public final class GroupAggregate {
  private GroupAggregate() {}

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    GroupAggregateSpec spec = GroupAggregateSpec.parse(specJson);
    StructType schema = input.schema();
    boolean updating = Layout.kindIndex(schema) >= 0;
    if (updating != spec.inputUpdating()) {
      throw Spec.at("$.inputUpdating", "says " + spec.inputUpdating() + " but the input "
          + (updating ? "has" : "has no") + " _rowkind column");
    }
    GroupAggregateProcessor.functions(spec, schema); // fails here, on the driver, for a bad spec
    StructType out = Keyed.outputSchema(spec.outputTypes(), true);
    return Keyed.by(input, spec.grouping()).transformWithState(
        new GroupAggregateProcessor(specJson, schema), TimeMode.None(), OutputMode.Append(), Encoders.row(out));
  }

  /** The Spark type (JSON) of the {@code state} column a migration's initial state must have. */
  public static String initialStateType(Dataset<Row> input, String specJson) {
    return GroupAggregateProcessor.initialStateType(GroupAggregateSpec.parse(specJson), input.schema()).json();
  }

  /**
   * As {@link #apply}, starting from {@code initial}: one row per group, the group's key columns (named and
   * typed as the input's grouping columns) and {@code state} (see {@link #initialStateType}). Spark applies
   * initial state in a query's first batch only, so this is for a query starting without a checkpoint.
   */
  public static Dataset<Row> applyWithInitialState(Dataset<Row> input, String specJson, Dataset<Row> initial) {
    GroupAggregateSpec spec = GroupAggregateSpec.parse(specJson);
    StructType schema = input.schema();
    StructType expected = GroupAggregateProcessor.initialStateType(spec, schema);
    DataType given = initial.schema().apply("state").dataType();
    if (!given.sameType(expected)) {
      throw Spec.at("$.(initial state)", "has type " + given.simpleString() + "; the processor needs "
          + expected.simpleString());
    }
    List<DataType> types = spec.outputTypes();
    int[] grouping = spec.grouping();
    int[] initialKeys = new int[grouping.length];
    for (int i = 0; i < grouping.length; i++) {
      initialKeys[i] = initial.schema().fieldIndex(schema.fields()[grouping[i]].name());
    }
    return Keyed.by(input, grouping).transformWithState(
        new GroupAggregateProcessor(specJson, schema), TimeMode.None(), OutputMode.Append(),
        Keyed.by(initial, initialKeys), Encoders.row(Keyed.outputSchema(types, true)),
        Encoders.row(initial.schema()));
  }
}
