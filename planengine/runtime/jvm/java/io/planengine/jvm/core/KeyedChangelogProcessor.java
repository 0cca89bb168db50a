package io.planengine.jvm.core;

import io.planengine.jvm.spec.Spec;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.StatefulProcessorWithInitialState;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.types.StructType;

/**
 * The base of every keyed changelog operator: a {@code transformWithState} processor over rows grouped by
 * key, reading the hidden {@code _rowkind} column and emitting a changelog.
 *
 * <p>A subclass gets its node's plan spec as its typed record {@code S} (a record of {@code io.planengine.jvm.spec},
 * read from the JSON by {@link #readSpec} on each executor, so the processor travels as the JSON text), opens its
 * named state variables in {@link #open}, and implements {@link #process} for one key's rows of a micro-batch. Spark groups a micro-batch by
 * key with a stable sort, so a key's rows arrive in the order the input partition produced them.
 *
 * <p>State TTL: Spark only expires state variables in {@code ProcessingTime} mode, which never goes idle (a
 * run {@code --until-idle} would not end). Operators therefore keep their state's last write time (wall clock,
 * ms) in the state value and treat an older value as absent ({@link #expired}), Flink's
 * {@code NeverReturnExpired} visibility with {@code OnCreateAndWrite} updates, as the Python operators do.
 *
 * <p>Migration: {@link #handleInitialState} receives one row per key of the state a previous operator
 * version kept (read with Spark's state data source and converted by the engine) in the shape
 * {@link StateVariables} derives from the variables {@code open} opens, and writes it into them; a processor
 * whose state needs more than that overrides it.
 */
public abstract class KeyedChangelogProcessor<S>
    extends StatefulProcessorWithInitialState<Row, Row, Row, Row> {
  private static final long serialVersionUID = 1L;

  private final String specJson;
  private final StructType inputSchema;
  private final boolean outputKind;
  private transient Emitter emitter;
  private transient int kindIndex;
  private transient StateVariables variables;
  /** Wall-clock time of the current call (ms), for state TTL. */
  protected transient long now;
  /** The current call's timer values (the batch's event-time watermark), for event-time operators. */
  protected transient TimerValues timerValues;

  protected KeyedChangelogProcessor(String specJson, StructType inputSchema, boolean outputKind) {
    this.specJson = specJson;
    this.inputSchema = inputSchema;
    this.outputKind = outputKind;
  }

  @Override
  public final void init(OutputMode outputMode, TimeMode timeMode) {
    emitter = new Emitter(outputKind);
    kindIndex = Layout.kindIndex(inputSchema);
    variables = new StateVariables();
    open(readSpec(Spec.parse(specJson)), inputSchema, variables.recording(getHandle()));
  }

  @Override
  public final scala.collection.Iterator<Row> handleInputRows(
      Row key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
    now = System.currentTimeMillis();
    this.timerValues = timerValues;
    process(key, new ChangelogInput(rows, kindIndex), emitter);
    return emitter.drain();
  }

  @Override
  public final scala.collection.Iterator<Row> handleExpiredTimer(
      Row key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    now = System.currentTimeMillis();
    this.timerValues = timerValues;
    onTimer(key, timerValues, expiredTimerInfo.getExpiryTimeInMs(), emitter);
    return emitter.drain();
  }

  @Override
  public final void handleInitialState(Row key, Row initialState, TimerValues timerValues) {
    now = System.currentTimeMillis();
    this.timerValues = timerValues;
    loadInitialState(key, initialState.getStruct(initialState.fieldIndex(StateVariables.STATE)));
  }

  /**
   * Write one key's migrated {@code state} (of {@link #initialStateType}) into the state variables. A processor
   * whose state is more than the rows it is given (event-time timers, accumulators derived from rows) overrides
   * it, and {@link #initialStateType} where the given facts differ from what it keeps.
   */
  protected void loadInitialState(Row key, Row state) {
    variables.load(state, now);
  }

  /**
   * The type of the {@code state} column of this processor's initial state, learnt on the driver by opening
   * it on a recording handle (see {@link StateVariables}). Throws for state that has no such form.
   */
  public StructType initialStateType() {
    StateVariables opened = new StateVariables();
    open(readSpec(Spec.parse(specJson)), inputSchema, opened.recording(null));
    return opened.initialStateType(getClass().getSimpleName());
  }

  /** The family's typed spec ({@code XSpec.from}): the one place its JSON is read. */
  protected abstract S readSpec(Spec json);

  /** Take the node's spec and open the named state variables. */
  protected abstract void open(S spec, StructType inputSchema, StatefulProcessorHandle handle);

  /** One key's rows of a micro-batch; emit the changelog they cause. */
  protected abstract void process(Row key, ChangelogInput input, Emitter out);

  /** An event-time or processing-time timer of {@code key} fired. */
  protected void onTimer(Row key, TimerValues timerValues, long expiryMs, Emitter out) {}

  /** Whether state last written at {@code writtenMs} has outlived {@code ttlMs} (0 = never expires). */
  protected final boolean expired(long ttlMs, long writtenMs) {
    return ttlMs > 0 && now - writtenMs > ttlMs;
  }
}
