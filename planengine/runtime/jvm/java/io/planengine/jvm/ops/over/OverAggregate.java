package io.planengine.jvm.ops.over;

import io.planengine.jvm.agg.AggCall;
import io.planengine.jvm.agg.Accumulator;
import io.planengine.jvm.agg.AggregateFunction;
import io.planengine.jvm.agg.AggregateFunctions;
import io.planengine.jvm.agg.CallInput;
import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.MemoryBag;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.Layout;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.spec.OverAggregateSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Event-time OVER aggregates (Flink's {@code RowTime{Rows,Range}{Bounded,Unbounded}PrecedingFunction}) on the
 * JVM, keyed by the partition columns, with the rules of the Python operator ({@code
 * runtime/operators/over_aggregate.py}) that {@code stream-exec-over-aggregate_1} plans keep.
 *
 * <p>Each row waits in {@code pendingRows} until the watermark passes its timestamp (an event-time timer at the
 * earliest pending timestamp); then the due rows are processed in timestamp order, equal timestamps in arrival order, and each
 * is emitted with its aggregate values: ROWS frames over the row and the {@code lower} rows before it, RANGE
 * frames over the rows within {@code [t - lower, t]} (all rows of one timestamp get the same values), or
 * everything so far when unbounded. A row whose timestamp is not after the last processed one ({@code last},
 * Flink's {@code lastTriggeringTs}) is late and dropped. A batch first processes what its watermark (that of
 * the earlier batches) made due, then takes its rows; a row carrying the watermark it met inside its batch
 * (a per-record watermark assigner upstream) first fires what that watermark made due.
 *
 * <p>State per partition:
 *
 * <ul>
 *   <li>{@code pendingRows}: {@code (rows ARRAY<STRUCT<ts BIGINT, row STRUCT<the input's fields>>>, written
 *       BIGINT)}, by timestamp, arrival order among equal ones;
 *   <li>{@code accumulators}: {@code (last BIGINT, written BIGINT, rows ARRAY<STRUCT<ts, row>>, a0 STRUCT<..>,
 *       ..., b<i> ARRAY<STRUCT<value, count>> per DISTINCT call)}: unbounded frames keep each call's
 *       accumulator (in the library's layout) and each DISTINCT call's values seen so far, and no rows; bounded
 *       frames keep the rows the frame may still reach and rebuild retracting accumulators from them (value
 *       multisets in memory, also DISTINCT's), or, when a call depends on arrival order, sums floating point
 *       (where retracting is not recomputing) or is a DISTINCT MIN/MAX, recompute each value over the frame as
 *       the Python operator does. Version 2 plans have no DISTINCT call (the engine keeps those on Python), so
 *       their layout has no {@code b<i>}. {@code LAG} (version 4 plans; versions 1-3 keep it on Python) is an
 *       accumulator of the library ({@code agg.Lag}: the last {@code offset + 1} values): kept in {@code a<i>}
 *       for unbounded frames, recomputed over the frame's rows for bounded ones (Flink allows no frame with LAG,
 *       so only a migrated plan has one).
 * </ul>
 *
 * <p>Spec: {@link OverAggregateSpec}. The output is insert-only: the data fields, then one column per call.
 */
public final class OverAggregate extends KeyedChangelogProcessor<OverAggregateSpec> {
  private static final long serialVersionUID = 1L;

  private transient int width;
  private transient int timeField;
  private transient int recordWatermarkField;
  private transient boolean rowsMode;
  private transient boolean bounded;
  private transient long lower;
  private transient boolean recompute;
  private transient AggregateFunction[] functions;
  private transient CallInput[] inputs;
  private transient long ttlMs;
  private transient ValueState<Row> pendingState;
  private transient ValueState<Row> accState;

  private OverAggregate(String spec, StructType input) {
    super(spec, input, false);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  /** The operator over {@code input}, ready to run or to start from a migration's state. */
  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    OverAggregateSpec spec = OverAggregateSpec.parse(specJson);
    StructType data = Layout.dataFields(spec.width(), input.schema());
    List<DataType> types = new ArrayList<>();
    for (StructField f : data.fields()) {
      types.add(f.dataType());
    }
    for (AggregateFunction f : functions(spec, data)) { // validates the calls on the driver
      types.add(f.resultType());
    }
    return new KeyedOperator(input, spec.partitionKeys(), new OverAggregate(specJson, input.schema()),
        Keyed.outputSchema(types, false), TimeMode.EventTime());
  }

  /**
   * A migration gives what the Python operator kept: the pending rows and the frame's history {@code (last,
   * written, rows)}, without accumulators (the Python operator keeps rows, not accumulators, also for
   * unbounded frames). {@link #loadInitialState} derives this processor's state from them.
   */
  @Override
  public StructType initialStateType() {
    StructType generic = super.initialStateType();
    if (bounded) {
      return generic; // bounded frames keep rows only, as the Python operator does
    }
    StructField[] fields = generic.fields().clone();
    StructType acc = (StructType) fields[1].dataType();
    fields[1] = new StructField(fields[1].name(), new StructType(java.util.Arrays.copyOf(acc.fields(), 3)),
        fields[1].nullable(), fields[1].metadata());
    return new StructType(fields);
  }

  /**
   * One partition's migrated state: the pending rows as they are, with the timer at the earliest pending
   * timestamp; the history's rows kept (bounded frames) or folded into the accumulators in their processing
   * order (unbounded frames: the values are those of the same rows accumulated as they fired).
   */
  @Override
  protected void loadInitialState(Row key, Row state) {
    Partition p = new Partition();
    Row pending = state.isNullAt(0) ? null : state.getStruct(0);
    if (pending != null) {
      for (Object o : pending.getList(0)) {
        Row e = (Row) o;
        p.pending.computeIfAbsent(e.getLong(0), t -> new ArrayList<>()).add(e.getStruct(1));
      }
    }
    p.pendingChanged = !p.pending.isEmpty();
    Row acc = state.isNullAt(1) ? null : state.getStruct(1);
    p.accLoaded = true;
    p.bags = new MemoryBag[functions.length];
    p.accs = bounded ? (recompute ? null : fresh(null)) : fresh(p.bags);
    if (acc != null) {
      p.last = acc.getLong(0);
      for (Object o : acc.getList(2)) {
        Row e = (Row) o;
        add(p, e.getLong(0), e.getStruct(1));
      }
      p.accChanged = true;
    }
    armTimer(p);
    save(p);
  }

  /** Whether a bounded frame recomputes values instead of retracting (arrival order, LAG, floating point). */
  private static boolean needsRecompute(List<AggregateFunction> functions) {
    for (AggregateFunction f : functions) {
      AggCall call = f.call();
      if (call.name.equals("FIRST_VALUE") || call.name.equals("LAST_VALUE") || call.name.equals("LAG")) {
        return true; // arrival order (LAG has no retraction at all: Flink's neither)
      }
      if (call.distinct && (call.name.equals("MIN") || call.name.equals("MAX"))) {
        return true; // the library's DISTINCT MIN/MAX does not retract
      }
      for (DataType t : call.argTypes) {
        if (t instanceof DoubleType || t instanceof FloatType) {
          return true;
        }
      }
    }
    return false;
  }

  static List<AggregateFunction> functions(OverAggregateSpec spec, StructType data) {
    List<AggCall> calls = AggCall.bindAll(spec.aggCalls(), "$.aggCalls", data);
    List<AggregateFunction> plain = new ArrayList<>();
    for (AggCall c : calls) {
      plain.add(AggregateFunctions.create(c, false));
    }
    if (!spec.bounded() || needsRecompute(plain)) {
      return plain;
    }
    List<AggregateFunction> retracting = new ArrayList<>();
    for (AggCall c : calls) {
      retracting.add(AggregateFunctions.create(c, true));
    }
    return retracting;
  }

  static StructType entryType(StructType data) {
    return new StructType().add("ts", DataTypes.LongType, false).add("row", data, false);
  }

  static StructType pendingType(StructType data) {
    return new StructType().add("rows", DataTypes.createArrayType(entryType(data), false), false)
        .add("written", DataTypes.LongType, false);
  }

  static StructType accumulatorsType(StructType data, List<AggregateFunction> functions, boolean bounded) {
    StructType t = new StructType().add("last", DataTypes.LongType, false)
        .add("written", DataTypes.LongType, false)
        .add("rows", DataTypes.createArrayType(entryType(data), false), false);
    if (!bounded) {
      for (int i = 0; i < functions.size(); i++) {
        t = t.add("a" + i, functions.get(i).accumulatorType(), false);
      }
      for (int i = 0; i < functions.size(); i++) {
        if (functions.get(i).usesBag()) { // DISTINCT (over-aggregate_3): the values seen so far, with counts
          StructType entry = new StructType().add("value", functions.get(i).bagValueType(), false)
              .add("count", DataTypes.LongType, false);
          t = t.add("b" + i, DataTypes.createArrayType(entry, false), false);
        }
      }
    }
    return t;
  }

  @Override
  protected OverAggregateSpec readSpec(Spec json) {
    return OverAggregateSpec.from(json);
  }

  @Override
  protected void open(OverAggregateSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    StructType data = Layout.dataFields(spec.width(), inputSchema);
    width = data.size();
    timeField = spec.timeField();
    recordWatermarkField = spec.recordWatermarkField() == null ? -1 : spec.recordWatermarkField();
    rowsMode = spec.mode().equalsIgnoreCase("ROWS");
    bounded = spec.bounded();
    lower = bounded ? spec.lower() : 0L;
    List<AggregateFunction> fs = functions(spec, data);
    recompute = bounded && needsRecompute(fs);
    functions = fs.toArray(new AggregateFunction[0]);
    inputs = CallInput.of(functions);
    ttlMs = spec.stateTtlMs();
    List<String> names = spec.stateNames();
    pendingState = handle.getValueState(names.get(0), Encoders.row(pendingType(data)), TTLConfig.NONE());
    accState = handle.getValueState(names.get(1), Encoders.row(accumulatorsType(data, fs, bounded)),
        TTLConfig.NONE());
  }

  /** One row of the frame's history: its timestamp and fields. */
  private static final class Entry {
    final long ts;
    final Row row;

    Entry(long ts, Row row) {
      this.ts = ts;
      this.row = row;
    }
  }

  /** One partition's state while a call works on it. */
  private final class Partition {
    final TreeMap<Long, List<Row>> pending = new TreeMap<>();
    final ArrayDeque<Entry> history = new ArrayDeque<>();
    long last = Long.MIN_VALUE;
    Accumulator[] accs;
    MemoryBag[] bags; // unbounded frames: each DISTINCT call's values, saved with the accumulators
    boolean accLoaded;
    boolean hadPending;
    boolean pendingChanged;
    boolean accChanged;
  }

  /**
   * The partition's pending rows; its accumulators are read only when something fires or a row arrives
   * ({@link #loadAccumulators}): most timers of a partition find their rows already processed by an earlier
   * one (one timer per timestamp, all due rows fire together), and must stay cheap.
   */
  private Partition load() {
    Partition p = new Partition();
    Row pending = pendingState.get();
    p.hadPending = pending != null;
    if (pending != null && !expired(ttlMs, pending.getLong(1))) {
      for (Object o : pending.getList(0)) {
        Row e = (Row) o;
        p.pending.computeIfAbsent(e.getLong(0), t -> new ArrayList<>()).add(e.getStruct(1));
      }
    }
    return p;
  }

  private void loadAccumulators(Partition p) {
    if (p.accLoaded) {
      return;
    }
    p.accLoaded = true;
    Row acc = accState.get();
    if (acc != null && expired(ttlMs, acc.getLong(1))) {
      acc = null;
    }
    if (acc != null) {
      p.last = acc.getLong(0);
      for (Object o : acc.getList(2)) {
        Row e = (Row) o;
        p.history.addLast(new Entry(e.getLong(0), e.getStruct(1)));
      }
    }
    if (!bounded) {
      p.accs = new Accumulator[functions.length];
      p.bags = new MemoryBag[functions.length];
      for (int i = 0; i < functions.length; i++) {
        p.bags[i] = functions[i].usesBag() ? restoredBag(acc, i) : null;
        p.accs[i] = acc == null ? functions[i].create(p.bags[i])
            : functions[i].restore(acc.getStruct(3 + i), p.bags[i]);
      }
    } else if (!recompute) {
      p.accs = fresh(null);
      for (Entry e : p.history) {
        accumulate(p.accs, e.row, true);
      }
    }
  }

  /** New accumulators, a value multiset in memory for each that needs one (noted in {@code bags} if given). */
  private Accumulator[] fresh(MemoryBag[] bags) {
    Accumulator[] accs = new Accumulator[functions.length];
    for (int i = 0; i < functions.length; i++) {
      MemoryBag bag = functions[i].usesBag() ? new MemoryBag() : null;
      if (bags != null) {
        bags[i] = bag;
      }
      accs[i] = functions[i].create(bag);
    }
    return accs;
  }

  /** The field of call {@code i}'s saved values in the accumulators row (after every call's accumulator). */
  private int bagField(int i) {
    int field = 3 + functions.length;
    for (int j = 0; j < i; j++) {
      field += functions[j].usesBag() ? 1 : 0;
    }
    return field;
  }

  private MemoryBag restoredBag(Row acc, int i) {
    MemoryBag bag = new MemoryBag();
    if (acc != null) {
      for (Object o : acc.getList(bagField(i))) {
        Row e = (Row) o;
        bag.add(e.get(0), e.getLong(1));
      }
    }
    return bag;
  }

  private void accumulate(Accumulator[] accs, Row row, boolean add) {
    for (int i = 0; i < accs.length; i++) {
      Object v = inputs[i].argument(row);
      if (v == CallInput.SKIP) {
        continue;
      }
      if (add) {
        accs[i].accumulate(v);
      } else {
        accs[i].retract(v);
      }
    }
  }

  private void save(Partition p) {
    if (p.pendingChanged) {
      if (p.pending.isEmpty()) {
        if (p.hadPending) {
          pendingState.clear();
        }
      } else {
        List<Object> entries = new ArrayList<>();
        for (Map.Entry<Long, List<Row>> e : p.pending.entrySet()) {
          for (Row r : e.getValue()) {
            entries.add(RowFactory.create(e.getKey(), r));
          }
        }
        pendingState.update(RowFactory.create(Scala.seq(entries), now));
      }
    }
    if (!p.accChanged) {
      return;
    }
    List<Object> rows = new ArrayList<>(p.history.size());
    for (Entry e : p.history) {
      rows.add(RowFactory.create(e.ts, e.row));
    }
    Object[] fields = new Object[bounded ? 3 : bagField(functions.length)];
    fields[0] = p.last;
    fields[1] = now;
    fields[2] = Scala.seq(rows);
    if (!bounded) {
      for (int i = 0; i < functions.length; i++) {
        fields[3 + i] = p.accs[i].save();
        if (p.bags[i] != null) {
          List<Object> entries = new ArrayList<>();
          for (Object v : p.bags[i].values()) {
            entries.add(RowFactory.create(v, p.bags[i].count(v)));
          }
          fields[bagField(i)] = Scala.seq(entries);
        }
      }
    }
    accState.update(RowFactory.create(fields));
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    long watermark = timerValues.getCurrentWatermarkInMs();
    Partition p = load();
    loadAccumulators(p); // the lateness of each row is judged on the last processed timestamp
    fire(p, watermark, out); // the earlier batches' watermark comes before this batch's rows
    while (input.next()) {
      Row r = input.row();
      if (recordWatermarkField >= 0 && !r.isNullAt(recordWatermarkField)) {
        long met = r.getLong(recordWatermarkField);
        if (met > watermark && !p.pending.isEmpty() && p.pending.firstKey() <= met) {
          fire(p, met, out); // the watermark this row met inside its batch fires the rows it passed first
        }
      }
      if (r.isNullAt(timeField)) {
        continue;
      }
      long t = r.getLong(timeField);
      if (t <= p.last) {
        continue; // late: its timestamp's rows were already emitted
      }
      p.pending.computeIfAbsent(t, k -> new ArrayList<>()).add(RowFactory.create(StoredRow.fields(r, width)));
      p.pendingChanged = true;
    }
    fire(p, watermark, out);
    armTimer(p);
    save(p);
  }

  /**
   * One event-time timer at the earliest pending timestamp (instead of one per timestamp): when it fires,
   * every timestamp the watermark passed is processed, and the next earliest one gets the timer. A timer left
   * at a later timestamp by an earlier row fires later with nothing due.
   */
  private void armTimer(Partition p) {
    if (p.pendingChanged && !p.pending.isEmpty()) {
      getHandle().registerTimer(p.pending.firstKey());
    }
  }

  @Override
  protected void onTimer(Row key, TimerValues values, long expiryMs, Emitter out) {
    Partition p = load();
    fire(p, Math.max(values.getCurrentWatermarkInMs(), expiryMs), out);
    armTimer(p);
    save(p);
  }

  /** Processes every pending timestamp up to {@code watermark}, in order. */
  private void fire(Partition p, long watermark, Emitter out) {
    if (!p.pending.isEmpty() && p.pending.firstKey() <= watermark) {
      loadAccumulators(p);
    }
    while (!p.pending.isEmpty() && p.pending.firstKey() <= watermark) {
      Map.Entry<Long, List<Row>> due = p.pending.pollFirstEntry();
      long t = due.getKey();
      if (rowsMode) {
        for (Row row : due.getValue()) {
          add(p, t, row);
          while (bounded && p.history.size() > lower + 1) {
            evict(p);
          }
          emit(out, row, values(p));
        }
      } else {
        for (Row row : due.getValue()) {
          add(p, t, row);
        }
        while (bounded && p.history.peekFirst().ts < t - lower) {
          evict(p);
        }
        Object[] values = values(p);
        for (Row row : due.getValue()) {
          emit(out, row, values);
        }
      }
      p.last = Math.max(p.last, t); // Flink's lastTriggeringTs
      p.pendingChanged = true;
      p.accChanged = true;
    }
  }

  private void add(Partition p, long t, Row row) {
    if (bounded) {
      p.history.addLast(new Entry(t, row));
    }
    if (p.accs != null) {
      accumulate(p.accs, row, true);
    }
  }

  private void evict(Partition p) {
    Entry e = p.history.pollFirst();
    if (p.accs != null) {
      accumulate(p.accs, e.row, false);
    }
  }

  private Object[] values(Partition p) {
    Accumulator[] accs = p.accs;
    if (recompute) {
      accs = fresh(null);
      for (Entry e : p.history) {
        accumulate(accs, e.row, true);
      }
    }
    Object[] out = new Object[accs.length];
    for (int i = 0; i < accs.length; i++) {
      out[i] = accs[i].value();
    }
    return out;
  }

  private void emit(Emitter out, Row row, Object[] values) {
    Object[] fields = new Object[width + values.length];
    for (int i = 0; i < width; i++) {
      fields[i] = row.get(i);
    }
    System.arraycopy(values, 0, fields, width, values.length);
    out.emit(RowKind.INSERT, fields);
  }
}
