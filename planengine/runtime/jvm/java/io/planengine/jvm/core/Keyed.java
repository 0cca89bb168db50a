package io.planengine.jvm.core;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Groups a changelog by key columns for {@code transformWithState}: the key is a row of the key columns
 * (one constant key when there are none: a global operator), the values are whole input rows.
 */
public final class Keyed {
  /** The name of the constant key of a global operator. */
  public static final String GLOBAL_KEY = "_key";

  private Keyed() {}

  public static KeyValueGroupedDataset<Row, Row> by(Dataset<Row> input, int[] keyFields) {
    StructType schema = input.schema();
    List<Column> columns = new ArrayList<>();
    StructType keySchema = new StructType();
    if (keyFields.length == 0) {
      columns.add(functions.lit(0).as(GLOBAL_KEY));
      keySchema = keySchema.add(GLOBAL_KEY, DataTypes.IntegerType, false);
    }
    for (int k : keyFields) {
      StructField f = schema.fields()[k];
      columns.add(input.col("`" + f.name().replace("`", "``") + "`"));
      keySchema = keySchema.add(f.name(), f.dataType(), true);
    }
    return input.groupBy(columns.toArray(new Column[0])).as(Encoders.row(keySchema), Encoders.row(schema));
  }

  /** {@code f0 .. f(n-1)} of the given types, then {@code _rowkind STRING} when the output is updating. */
  public static StructType outputSchema(List<DataType> types, boolean updating) {
    StructType out = new StructType();
    for (int i = 0; i < types.size(); i++) {
      out = out.add("f" + i, types.get(i), true);
    }
    if (updating) {
      out = out.add(Layout.ROWKIND, DataTypes.StringType, false);
    }
    return out;
  }
}
