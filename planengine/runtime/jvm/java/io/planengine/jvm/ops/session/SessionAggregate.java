package io.planengine.jvm.ops.session;

import io.planengine.jvm.agg.AggCall;
import io.planengine.jvm.agg.Accumulator;
import io.planengine.jvm.agg.AggregateFunction;
import io.planengine.jvm.agg.AggregateFunctions;
import io.planengine.jvm.agg.CallInput;
import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.Layout;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.MemoryBag;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.SessionAggregateSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
import org.apache.spark.sql.types.StructType;

/**
 * Event-time SESSION windows whose sessions span several grouping keys (Flink's SESSION TVF over a partition,
 * or all rows without PARTITION BY, aggregated per grouping key inside each session), with the rules of the
 * Python operator ({@code runtime/operators/window_session.py}) that older node versions keep.
 *
 * <p>A row at {@code t} opens {@code [t, t + gap)} and merges every open session it intersects (touching
 * sessions merge). Lateness is judged on the merged session: a row is dropped when it has closed ({@code end
 * <= watermark}; below a per-record watermark assigner also when the watermark the row met inside its batch
 * reached {@code end - 1}, and such a watermark first fires the sessions it closes). An event-time timer at
 * the earliest open session's end fires the sessions the watermark closed: one row per grouping key (in the order the keys first appear among the
 * session's rows) with the aggregates over that key's rows and the session's bounds. A batch first fires
 * what the earlier batches' watermark closed.
 *
 * <p>State {@code windowAccumulators}: {@code (sessions ARRAY<STRUCT<start BIGINT, end BIGINT, rows
 * ARRAY<STRUCT<the input's fields>>>>, written BIGINT)}: the open sessions with their rows (a merge keeps
 * the rows in the Python operator's order, which order-dependent calls see). Aggregates are computed when a
 * session fires, with the library's accumulators (value multisets for DISTINCT in memory).
 *
 * <p>Spec: {@link SessionAggregateSpec}. Output (insert-only): the grouping fields, one column per call, the
 * session's start and end (epoch ms).
 */
public final class SessionAggregate extends KeyedChangelogProcessor<SessionAggregateSpec> {
  private static final long serialVersionUID = 1L;

  private transient int width;
  private transient int timeField;
  private transient int recordWatermarkField;
  private transient int[] grouping;
  private transient long gap;
  private transient AggregateFunction[] functions;
  private transient CallInput[] inputs;
  private transient long ttlMs;
  private transient ValueState<Row> state;

  private SessionAggregate(String spec, StructType input) {
    super(spec, input, false);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  /** The operator over {@code input}, ready to run or to start from a migration's state. */
  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    SessionAggregateSpec spec = SessionAggregateSpec.parse(specJson);
    StructType data = Layout.dataFields(spec.width(), input.schema());
    List<DataType> types = new ArrayList<>();
    for (int g : groupingFields(spec, data)) {
      types.add(data.fields()[g].dataType());
    }
    for (AggregateFunction f : functions(spec, data)) { // validates the calls on the driver
      types.add(f.resultType());
    }
    types.add(DataTypes.LongType);
    types.add(DataTypes.LongType);
    return new KeyedOperator(input, spec.partitionKeys(), new SessionAggregate(specJson, input.schema()),
        Keyed.outputSchema(types, false), TimeMode.EventTime());
  }

  /**
   * One partition's migrated state (the open sessions with their rows, the Python operator's facts in this
   * processor's layout), with the timer at the earliest session end.
   */
  @Override
  protected void loadInitialState(Row key, Row state) {
    super.loadInitialState(key, state);
    Open o = load();
    o.changed = true;
    armTimer(o);
  }

  private static int[] groupingFields(SessionAggregateSpec spec, StructType data) {
    int[] g = spec.grouping();
    for (int k : g) {
      if (k < 0 || k >= data.size()) {
        throw Spec.at("$.grouping", "refers to input field " + k + " of " + data.size());
      }
    }
    return g;
  }

  static List<AggregateFunction> functions(SessionAggregateSpec spec, StructType data) {
    List<AggregateFunction> out = new ArrayList<>();
    for (AggCall call : AggCall.bindAll(spec.aggCalls(), "$.aggCalls", data)) {
      out.add(AggregateFunctions.create(call, false));
    }
    return out;
  }

  static StructType stateType(StructType data) {
    StructType session = new StructType().add("start", DataTypes.LongType, false)
        .add("end", DataTypes.LongType, false)
        .add("rows", DataTypes.createArrayType(data, false), false);
    return new StructType().add("sessions", DataTypes.createArrayType(session, false), false)
        .add("written", DataTypes.LongType, false);
  }

  @Override
  protected SessionAggregateSpec readSpec(Spec json) {
    return SessionAggregateSpec.from(json);
  }

  @Override
  protected void open(SessionAggregateSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    StructType data = Layout.dataFields(spec.width(), inputSchema);
    width = data.size();
    timeField = spec.timeField();
    recordWatermarkField = spec.recordWatermarkField() == null ? -1 : spec.recordWatermarkField();
    grouping = groupingFields(spec, data);
    gap = spec.gapMs();
    List<AggregateFunction> fs = functions(spec, data);
    functions = fs.toArray(new AggregateFunction[0]);
    inputs = CallInput.of(functions);
    ttlMs = spec.stateTtlMs();
    state = handle.getValueState(spec.stateNames().get(0), Encoders.row(stateType(data)),
        TTLConfig.NONE());
  }

  /** One open session: its bounds and its rows. */
  private static final class Session {
    long start;
    long end;
    List<Row> rows;

    Session(long start, long end, List<Row> rows) {
      this.start = start;
      this.end = end;
      this.rows = rows;
    }
  }

  /** One partition's open sessions while a call works on them. */
  private final class Open {
    List<Session> sessions = new ArrayList<>();
    boolean existed;
    boolean changed;
  }

  private Open load() {
    Open o = new Open();
    Row stored = state.get();
    o.existed = stored != null;
    if (stored != null && !expired(ttlMs, stored.getLong(1))) {
      for (Object s : stored.getList(0)) {
        Row r = (Row) s;
        List<Row> rows = new ArrayList<>();
        for (Object m : r.getList(2)) {
          rows.add((Row) m);
        }
        o.sessions.add(new Session(r.getLong(0), r.getLong(1), rows));
      }
    }
    return o;
  }

  private void save(Open o) {
    if (!o.changed) {
      return;
    }
    if (o.sessions.isEmpty()) {
      if (o.existed) {
        state.clear();
      }
      return;
    }
    List<Object> sessions = new ArrayList<>(o.sessions.size());
    for (Session s : o.sessions) {
      sessions.add(RowFactory.create(s.start, s.end, Scala.seq(s.rows)));
    }
    state.update(RowFactory.create(Scala.seq(sessions), now));
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    long watermark = timerValues.getCurrentWatermarkInMs();
    Open o = load();
    fire(o, watermark, out); // the earlier batches' watermark comes first
    while (input.next()) {
      Row r = input.row();
      if (r.isNullAt(timeField)) {
        continue;
      }
      long t = r.getLong(timeField);
      boolean hasMet = recordWatermarkField >= 0 && !r.isNullAt(recordWatermarkField);
      long met = hasMet ? r.getLong(recordWatermarkField) : Long.MIN_VALUE;
      if (hasMet && met > watermark && closesAny(o, met)) {
        fire(o, met + 1, out); // the watermark this row met inside the batch fires (end - 1 <= met) first
      }
      long start = t;
      long end = t + gap;
      Row row = RowFactory.create(StoredRow.fields(r, width));
      List<Row> members = null; // the merged session's rows: each intersecting session's, then the row
      List<Session> keep = new ArrayList<>();
      for (Session s : o.sessions) {
        if (s.start <= end && s.end >= start) {
          start = Math.min(start, s.start);
          end = Math.max(end, s.end);
          if (members == null) {
            members = s.rows; // appended to in place: no copy while a row extends one session
          } else {
            List<Row> merged = new ArrayList<>(s.rows.size() + members.size() + 1);
            merged.addAll(s.rows); // a later session's rows come first, as in the Python operator
            merged.addAll(members);
            members = merged;
          }
        } else {
          keep.add(s);
        }
      }
      if (end <= watermark || (hasMet && end - 1 <= met)) {
        continue; // late: the (merged) session has closed
      }
      if (members == null) {
        members = new ArrayList<>();
      }
      members.add(row);
      keep.add(new Session(start, end, members));
      o.sessions = keep;
      o.changed = true;
    }
    fire(o, watermark, out);
    armTimer(o);
    save(o);
  }

  /**
   * One event-time timer at the earliest open session's end (instead of one per session): when it fires,
   * every session the watermark closed fires, and the next earliest end gets the timer. A timer left at an
   * end a merge moved fires later with nothing due.
   */
  private void armTimer(Open o) {
    if (!o.changed || o.sessions.isEmpty()) {
      return;
    }
    long first = Long.MAX_VALUE;
    for (Session s : o.sessions) {
      first = Math.min(first, s.end);
    }
    getHandle().registerTimer(first);
  }

  private static boolean closesAny(Open o, long met) {
    for (Session s : o.sessions) {
      if (s.end - 1 <= met) {
        return true;
      }
    }
    return false;
  }

  @Override
  protected void onTimer(Row key, TimerValues values, long expiryMs, Emitter out) {
    Open o = load();
    fire(o, Math.max(values.getCurrentWatermarkInMs(), expiryMs), out);
    armTimer(o);
    save(o);
  }

  /** Emits and forgets every session ending at or before {@code watermark}, earliest first. */
  private void fire(Open o, long watermark, Emitter out) {
    List<Session> due = new ArrayList<>();
    List<Session> rest = new ArrayList<>();
    for (Session s : o.sessions) {
      (s.end <= watermark ? due : rest).add(s);
    }
    if (due.isEmpty()) {
      return;
    }
    o.sessions = rest;
    o.changed = true;
    due.sort((a, b) -> a.start != b.start ? Long.compare(a.start, b.start) : Long.compare(a.end, b.end));
    for (Session s : due) {
      Map<Object, List<Row>> groups = new LinkedHashMap<>();
      for (Row m : s.rows) {
        Object[] k = new Object[grouping.length];
        for (int i = 0; i < k.length; i++) {
          k[i] = Values.hashable(m.get(grouping[i]));
        }
        groups.computeIfAbsent(Arrays.asList(k), x -> new ArrayList<>()).add(m);
      }
      for (List<Row> group : groups.values()) {
        Object[] fields = new Object[grouping.length + functions.length + 2];
        Row first = group.get(0);
        for (int i = 0; i < grouping.length; i++) {
          fields[i] = first.get(grouping[i]);
        }
        for (int i = 0; i < functions.length; i++) {
          Accumulator acc = functions[i].create(functions[i].usesBag() ? new MemoryBag() : null);
          for (Row m : group) {
            Object v = inputs[i].argument(m);
            if (v != CallInput.SKIP) {
              acc.accumulate(v);
            }
          }
          fields[grouping.length + i] = acc.value();
        }
        fields[fields.length - 2] = s.start;
        fields[fields.length - 1] = s.end;
        out.emit(RowKind.INSERT, fields);
      }
    }
  }
}
