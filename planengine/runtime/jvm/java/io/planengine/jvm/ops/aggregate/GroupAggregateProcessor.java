package io.planengine.jvm.ops.aggregate;

import io.planengine.jvm.agg.AggCall;
import io.planengine.jvm.agg.Accumulator;
import io.planengine.jvm.agg.AggregateFunction;
import io.planengine.jvm.agg.AggregateFunctions;
import io.planengine.jvm.agg.CallInput;
import io.planengine.jvm.agg.ValueBag;
import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.GroupAggregateSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Flink's {@code GroupAggFunction} (and {@code MiniBatchGroupAggFunction}) on the JVM.
 *
 * <p>State per group key:
 *
 * <ul>
 *   <li>{@code accumulators}: ValueState {@code (records BIGINT, written BIGINT, a0 STRUCT<..>, a1 ...)}:
 *       accumulated minus retracted rows (0 deletes the group), the last write time (state TTL) and each
 *       aggregate's accumulator in its function's typed layout;
 *   <li>{@code distinctValues}: MapState {@code (agg INT, v<i> .., v<j> ..) -> BIGINT}, opened only when a
 *       DISTINCT aggregate or a MIN/MAX under retraction needs a value multiset (see {@link Bags}).
 * </ul>
 *
 * <p>Emission per record (Flink without mini-batch): a group's first row {@code +I}; a changed result
 * {@code -U old} (when {@code generateUpdateBefore}) and {@code +U new}; the last row retracted {@code -D
 * old}; an unchanged result nothing, unless state TTL is on (Flink then re-emits so downstream TTL is
 * refreshed). A retraction for a group without state is ignored. With mini-batch the key's rows of a
 * micro-batch fold into one change, as Flink does per bundle.
 */
public final class GroupAggregateProcessor extends KeyedChangelogProcessor<GroupAggregateSpec> {
  private static final long serialVersionUID = 1L;

  private transient Bound[] aggs;
  private transient int keyCount;
  private transient boolean generateUpdateBefore;
  private transient boolean miniBatch;
  private transient long ttlMs;
  private transient ValueState<Row> accState;
  private transient Bags bags;
  private transient MapState<Row, Long> bagState;

  public GroupAggregateProcessor(String specJson, StructType inputSchema) {
    super(specJson, inputSchema, true);
  }

  /** An aggregate with where its argument comes from and its bag slot (-1 = none). */
  static final class Bound {
    final AggregateFunction function;
    final CallInput input;
    final int slot;

    Bound(AggregateFunction function, int slot) {
      this.function = function;
      this.input = new CallInput(function.call());
      this.slot = slot;
    }

    Object argument(Row row) {
      return input.argument(row);
    }
  }

  /** The functions of a spec, validated: used on the driver (to fail before the query starts) and here. */
  static List<AggregateFunction> functions(GroupAggregateSpec spec, StructType input) {
    List<AggregateFunction> out = new ArrayList<>();
    for (AggCall call : AggCall.bindAll(spec.aggCalls(), "$.aggCalls", input)) {
      out.add(AggregateFunctions.create(call, spec.retracting()));
    }
    return out;
  }

  /** The {@code accumulators} value layout. */
  static StructType accumulatorsType(List<AggregateFunction> functions) {
    StructType t = new StructType().add("records", DataTypes.LongType, false)
        .add("written", DataTypes.LongType, false);
    for (int i = 0; i < functions.size(); i++) {
      t = t.add("a" + i, functions.get(i).accumulatorType(), false);
    }
    return t;
  }

  @Override
  protected GroupAggregateSpec readSpec(Spec json) {
    return GroupAggregateSpec.from(json);
  }

  @Override
  protected void open(GroupAggregateSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    List<AggregateFunction> functions = functions(spec, inputSchema);
    keyCount = spec.grouping().length;
    generateUpdateBefore = spec.generateUpdateBefore();
    miniBatch = spec.miniBatch();
    ttlMs = spec.stateTtlMs();
    List<String> names = spec.stateNames();
    List<DataType> slotTypes = new ArrayList<>();
    List<Integer> slotAggs = new ArrayList<>();
    aggs = new Bound[functions.size()];
    for (int i = 0; i < aggs.length; i++) {
      AggregateFunction f = functions.get(i);
      int slot = -1;
      if (f.usesBag()) {
        slot = slotTypes.size();
        slotTypes.add(f.bagValueType());
        slotAggs.add(i);
      }
      aggs[i] = new Bound(f, slot);
    }
    accState = handle.getValueState(names.get(0), Encoders.row(accumulatorsType(functions)), TTLConfig.NONE());
    if (!slotTypes.isEmpty()) {
      bagState = handle.getMapState(names.get(1), Encoders.row(Bags.keyType(slotAggs, slotTypes)),
          Encoders.LONG(), TTLConfig.NONE());
      bags = new Bags(bagState, slotTypes.size());
    }
  }

  /**
   * The row a migration hands each key (see {@code initialStateType}): the {@code accumulators} value and the
   * key's {@code distinctValues} entries; written as they are, with this run's write time.
   */
  @Override
  protected void loadInitialState(Row key, Row state) {
    Row acc = state.getStruct(0);
    Object[] fields = new Object[acc.length()];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = acc.get(i);
    }
    fields[1] = now;
    accState.update(RowFactory.create(fields));
    if (bagState != null && state.length() > 1 && !state.isNullAt(1)) {
      for (Object entry : state.getList(1)) {
        Row e = (Row) entry;
        bagState.updateValue(e.getStruct(0), e.getLong(1));
      }
    }
  }

  /**
   * The initial state a migration provides per key: {@code state STRUCT<accumulators, bags ARRAY<STRUCT<key,
   * count>>>} (bags only when an aggregate keeps a value multiset), in exactly this processor's layouts.
   */
  static StructType initialStateType(GroupAggregateSpec spec, StructType input) {
    List<AggregateFunction> functions = functions(spec, input);
    List<DataType> slotTypes = new ArrayList<>();
    List<Integer> slotAggs = new ArrayList<>();
    for (int i = 0; i < functions.size(); i++) {
      if (functions.get(i).usesBag()) {
        slotTypes.add(functions.get(i).bagValueType());
        slotAggs.add(i);
      }
    }
    StructType state = new StructType().add("accumulators", accumulatorsType(functions), false);
    if (!slotTypes.isEmpty()) {
      StructType entry = new StructType().add("key", Bags.keyType(slotAggs, slotTypes), false)
          .add("count", DataTypes.LongType, false);
      state = state.add("bags", DataTypes.createArrayType(entry, false), true);
    }
    return state;
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    if (bags != null) {
      bags.reset();
    }
    Row stored = accState.get();
    boolean hadState = stored != null;
    if (stored != null && expired(ttlMs, stored.getLong(1))) {
      stored = null;
      if (bags != null) {
        bags.clear();
      }
    }
    long records = stored == null ? 0L : stored.getLong(0);
    Accumulator[] accs = stored == null ? null : restore(stored);
    Object[] prev = accs == null ? null : result(key, accs);
    Object[] before = prev;
    boolean touched = false;
    while (input.next()) {
      boolean accumulate = input.kind().isAccumulate();
      if (!accumulate && records <= 0) {
        continue; // a retraction for a group we do not know: Flink ignores it
      }
      boolean firstRow = accs == null;
      if (firstRow) {
        accs = create();
      }
      Row row = input.row();
      for (int i = 0; i < aggs.length; i++) {
        Object v = aggs[i].argument(row);
        if (v == CallInput.SKIP) {
          continue;
        }
        if (accumulate) {
          accs[i].accumulate(v);
        } else {
          accs[i].retract(v);
        }
      }
      records += accumulate ? 1 : -1;
      touched = true;
      if (miniBatch) {
        continue;
      }
      if (records > 0) {
        Object[] now = result(key, accs);
        emitChange(out, firstRow ? null : prev, now);
        prev = now;
      } else {
        out.emit(RowKind.DELETE, prev);
        prev = null;
        accs = null;
        if (bags != null) {
          bags.clear();
        }
      }
    }
    if (miniBatch && touched) {
      if (records > 0) {
        emitChange(out, before, result(key, accs));
      } else if (before != null) {
        out.emit(RowKind.DELETE, before);
      }
    }
    if (accs == null || records <= 0) {
      if (hadState || touched) {
        accState.clear();
        if (bags != null) {
          bags.clear();
          bags.flush();
        }
      }
      return;
    }
    accState.update(save(records, accs));
    if (bags != null) {
      bags.flush();
    }
  }

  private void emitChange(Emitter out, Object[] prev, Object[] now) {
    if (prev == null) {
      out.emit(RowKind.INSERT, now);
      return;
    }
    if (ttlMs <= 0 && Values.equalRows(prev, now)) {
      return;
    }
    if (generateUpdateBefore) {
      out.emit(RowKind.UPDATE_BEFORE, prev);
    }
    out.emit(RowKind.UPDATE_AFTER, now);
  }

  private ValueBag bag(int i) {
    return aggs[i].slot < 0 ? null : bags.bag(i, aggs[i].slot);
  }

  private Accumulator[] create() {
    Accumulator[] accs = new Accumulator[aggs.length];
    for (int i = 0; i < aggs.length; i++) {
      accs[i] = aggs[i].function.create(bag(i));
    }
    return accs;
  }

  private Accumulator[] restore(Row stored) {
    Accumulator[] accs = new Accumulator[aggs.length];
    for (int i = 0; i < aggs.length; i++) {
      accs[i] = aggs[i].function.restore(stored.getStruct(2 + i), bag(i));
    }
    return accs;
  }

  private Row save(long records, Accumulator[] accs) {
    Object[] fields = new Object[2 + accs.length];
    fields[0] = records;
    fields[1] = now;
    for (int i = 0; i < accs.length; i++) {
      fields[2 + i] = accs[i].save();
    }
    return RowFactory.create(fields);
  }

  private Object[] result(Row key, Accumulator[] accs) {
    Object[] out = new Object[keyCount + accs.length];
    for (int i = 0; i < keyCount; i++) {
      out[i] = key.get(i);
    }
    for (int i = 0; i < accs.length; i++) {
      out[keyCount + i] = accs[i].value();
    }
    return out;
  }
}
