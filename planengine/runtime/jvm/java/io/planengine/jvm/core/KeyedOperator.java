package io.planengine.jvm.core;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A keyed processor over its input, ready to run: the input, its key fields, the processor and its output
 * schema. Each family's {@code prepare} builds one; {@link #run} is the operator, {@link #runFrom} the same
 * operator started from a migration's initial state (see {@link StateVariables}), so every family is
 * migratable through these two methods rather than its own copy of them.
 */
public final class KeyedOperator {
  private final Dataset<Row> input;
  private final int[] keyFields;
  private final KeyedChangelogProcessor<?> processor;
  private final StructType output;
  private final TimeMode timeMode;

  public KeyedOperator(Dataset<Row> input, int[] keyFields, KeyedChangelogProcessor<?> processor, StructType output) {
    this(input, keyFields, processor, output, TimeMode.None());
  }

  /** An operator with timers: {@code timeMode} as {@code transformWithState} takes it (event-time operators). */
  public KeyedOperator(Dataset<Row> input, int[] keyFields, KeyedChangelogProcessor<?> processor, StructType output,
      TimeMode timeMode) {
    this.input = input;
    this.keyFields = keyFields;
    this.processor = processor;
    this.output = output;
    this.timeMode = timeMode;
  }

  public Dataset<Row> run() {
    return Keyed.by(input, keyFields).transformWithState(processor, timeMode, OutputMode.Append(),
        Encoders.row(output));
  }

  /** The type of the initial state's {@code state} column (the processor's variables). */
  public StructType initialStateType() {
    return processor.initialStateType();
  }

  /**
   * As {@link #run}, starting from {@code initial}: one row per key, the key columns (named as the input's key
   * fields) and {@code state} of {@link #initialStateType}. Spark applies initial state in a query's first batch
   * only, so this is for a query starting without a checkpoint (a migration's seed query).
   */
  public Dataset<Row> runFrom(Dataset<Row> initial) {
    StructType expected = initialStateType();
    DataType given = initial.schema().apply(StateVariables.STATE).dataType();
    if (!given.sameType(expected)) {
      throw new IllegalArgumentException("the initial state of " + processor.getClass().getSimpleName()
          + " has type " + given.simpleString() + "; the processor needs " + expected.simpleString());
    }
    int[] initialKeys = new int[keyFields.length];
    for (int i = 0; i < keyFields.length; i++) {
      initialKeys[i] = initial.schema().fieldIndex(input.schema().fields()[keyFields[i]].name());
    }
    return Keyed.by(input, keyFields).transformWithState(processor, timeMode, OutputMode.Append(),
        Keyed.by(initial, initialKeys), Encoders.row(output), Encoders.row(initial.schema()));
  }
}
