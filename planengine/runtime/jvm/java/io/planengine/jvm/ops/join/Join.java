package io.planengine.jvm.ops.join;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.spec.JoinSpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code stream-exec-join} on the JVM: Flink's {@code StreamingJoinOperator} (inner, left, right, full) and
 * {@code StreamingSemiAntiJoinOperator} on one keyed processor over both sides.
 *
 * <p>Input (built by the engine): {@code _k0.. } (the equi-key values), {@code _side} (0 left, 1 right),
 * {@code _rowkind}, then the left fields {@code l0..} and the right fields {@code r0..} (the other side's
 * columns NULL). State per join key: {@code leftRows} and {@code rightRows} ({@link SideRows}).
 *
 * <p>Row kinds as Flink emits them: an accumulating input row on a non-outer side keeps its kind ({@code +I}/
 * {@code +U}) in the joined rows, a retracting one ({@code -U}/{@code -D}) too; outer sides emit {@code +I} and
 * {@code -D}. A row whose key is NULL in a column with {@code filterNulls} never matches (an outer side still
 * emits it padded). A non-equi condition ({@code condition}, {@link PairCondition}) decides which rows of the
 * other side with the same key are matches: only pairs that satisfy it join and count as associations of an
 * outer (or semi/anti left) row, as in Flink's operators.
 *
 * <p>Spec: {@link JoinSpec}.
 */
public final class Join extends KeyedChangelogProcessor<JoinSpec> {
  private static final long serialVersionUID = 1L;

  private transient int nl;
  private transient int nr;
  private transient int[][] keys;
  private transient boolean[] filterNulls;
  private transient boolean[] outer;
  private transient boolean semiAnti;
  private transient boolean anti;
  private transient long ttlMs;
  private transient SideRows[] sides;
  private transient int sideIndex;
  /** The non-equi condition, resolved on the driver; null when the join has none. */
  private final PairCondition condition;

  private Join(String spec, StructType input, boolean updatingOutput, PairCondition condition) {
    super(spec, input, updatingOutput);
    this.condition = condition;
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    JoinSpec spec = JoinSpec.parse(specJson);
    StructType schema = input.schema();
    int nl = spec.leftWidth();
    int nr = spec.rightWidth();
    int first = schema.fieldIndex("l0");
    List<DataType> out = new ArrayList<>();
    int width = spec.semiOrAnti() ? nl : nl + nr;
    for (int i = 0; i < width; i++) {
      out.add(schema.fields()[first + i].dataType());
    }
    int keyCount = spec.leftKeys().length;
    int[] keyColumns = new int[keyCount];
    for (int i = 0; i < keyCount; i++) {
      keyColumns[i] = schema.fieldIndex("_k" + i);
    }
    boolean insertOnly = spec.insertOnly();
    String sql = spec.condition() == null ? "" : spec.condition();
    PairCondition condition = sql.isEmpty() ? null
        : PairCondition.resolve(input.sparkSession(), sql, sideFields(schema, "l", nl), sideFields(schema, "r", nr));
    return new KeyedOperator(input, keyColumns, new Join(specJson, schema, !insertOnly, condition),
        Keyed.outputSchema(out, !insertOnly));
  }

  private static StructType sideFields(StructType input, String prefix, int width) {
    StructType out = new StructType();
    for (int i = 0; i < width; i++) {
      StructField f = input.apply(prefix + i);
      out = out.add(f.name(), f.dataType(), true);
    }
    return out;
  }

  @Override
  protected JoinSpec readSpec(Spec json) {
    return JoinSpec.from(json);
  }

  @Override
  protected void open(JoinSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    String type = spec.joinType();
    nl = spec.leftWidth();
    nr = spec.rightWidth();
    keys = new int[][] {spec.leftKeys(), spec.rightKeys()};
    int[] nulls = spec.filterNulls();
    filterNulls = new boolean[keys[0].length];
    for (int i = 0; i < filterNulls.length; i++) {
      filterNulls[i] = nulls.length == 0 || nulls[i] != 0;
    }
    outer = new boolean[] {type.equals("LEFT") || type.equals("FULL"), type.equals("RIGHT") || type.equals("FULL")};
    semiAnti = spec.semiOrAnti();
    anti = type.equals("ANTI");
    ttlMs = spec.stateTtlMs();
    List<String> names = spec.stateNames();
    sides = new SideRows[2];
    StructType[] fields = {sideFields(inputSchema, "l", nl), sideFields(inputSchema, "r", nr)};
    for (int s = 0; s < 2; s++) {
      MapState<Row, Row> map = handle.getMapState(names.get(s), Encoders.row(SideRows.keyType(fields[s])),
          Encoders.row(SideRows.VALUE), TTLConfig.NONE());
      sides[s] = new SideRows(map);
    }
    sideIndex = inputSchema.fieldIndex("_side");
    if (condition != null) {
      condition.open();
    }
  }

  /** The rows of the other side that join with {@code row}: all of them, or those the condition accepts. */
  private List<SideRows.Entry> matches(Object[] row, int side) {
    List<SideRows.Entry> all = sides[1 - side].entries();
    if (condition == null || all.isEmpty()) {
      return all;
    }
    org.apache.spark.sql.catalyst.InternalRow mine = condition.internal(row, side);
    List<SideRows.Entry> out = new ArrayList<>();
    for (SideRows.Entry e : all) {
      if (e.internal == null) {
        e.internal = condition.internal(e.fields, 1 - side);
      }
      if (side == 0 ? condition.test(mine, e.internal) : condition.test(e.internal, mine)) {
        out.add(e);
      }
    }
    return out;
  }

  private Object[] sideRow(Row input, int side) {
    int first = input.fieldIndex(side == 0 ? "l0" : "r0");
    Object[] out = new Object[side == 0 ? nl : nr];
    for (int i = 0; i < out.length; i++) {
      out[i] = input.get(first + i);
    }
    return out;
  }

  private boolean unmatchable(Object[] row, int side) {
    for (int i = 0; i < keys[side].length; i++) {
      if (filterNulls[i] && row[keys[side][i]] == null) {
        return true;
      }
    }
    return false;
  }

  private Object[] joined(Object[] row, Object[] other, int side) {
    if (semiAnti) {
      return side == 0 ? row : other;
    }
    Object[] left = side == 0 ? row : other;
    Object[] right = side == 0 ? other : row;
    Object[] out = new Object[nl + nr];
    if (left != null) {
      System.arraycopy(left, 0, out, 0, nl);
    }
    if (right != null) {
      System.arraycopy(right, 0, out, nl, nr);
    }
    return out;
  }

  private static void emit(Emitter out, RowKind kind, Object[] row, long times) {
    for (long i = 0; i < times; i++) {
      out.emit(kind, row);
    }
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    for (SideRows s : sides) {
      s.load(ttlMs, now);
    }
    while (input.next()) {
      Row r = input.row();
      int side = r.getInt(sideIndex);
      Object[] row = sideRow(r, side);
      if (semiAnti) {
        semiAnti(out, input.kind(), row, side);
      } else {
        join(out, input.kind(), row, side);
      }
    }
    for (SideRows s : sides) {
      s.flush(now);
    }
  }

  private void join(Emitter out, RowKind kind, Object[] row, int side) {
    boolean inputOuter = outer[side];
    boolean otherOuter = outer[1 - side];
    boolean accumulate = kind.isAccumulate();
    if (unmatchable(row, side)) {
      if (inputOuter) {
        out.emit(accumulate ? RowKind.INSERT : RowKind.DELETE, joined(row, null, side));
      }
      return;
    }
    SideRows state = sides[side];
    SideRows other = sides[1 - side];
    List<SideRows.Entry> matches = matches(row, side);
    long matched = 0;
    for (SideRows.Entry e : matches) {
      matched += e.count;
    }
    if (accumulate) {
      if (inputOuter && matches.isEmpty()) {
        out.emit(RowKind.INSERT, joined(row, null, side));
        state.add(row, 0);
        return;
      }
      if (otherOuter) {
        for (SideRows.Entry e : matches) {
          if (e.associations == 0) {
            emit(out, RowKind.DELETE, joined(e.fields, null, 1 - side), e.count);
          }
          other.setAssociations(e, e.associations + 1);
        }
      }
      RowKind outKind = inputOuter || otherOuter ? RowKind.INSERT : kind;
      for (SideRows.Entry e : matches) {
        emit(out, outKind, joined(row, e.fields, side), e.count);
      }
      state.add(row, inputOuter ? matched : 0);
      return;
    }
    state.retract(row);
    if (matches.isEmpty()) {
      if (inputOuter) {
        out.emit(RowKind.DELETE, joined(row, null, side));
      }
      return;
    }
    RowKind outKind = inputOuter ? RowKind.DELETE : kind;
    for (SideRows.Entry e : matches) {
      emit(out, outKind, joined(row, e.fields, side), e.count);
    }
    if (otherOuter) {
      for (SideRows.Entry e : matches) {
        if (e.associations == 1) {
          emit(out, RowKind.INSERT, joined(e.fields, null, 1 - side), e.count);
        }
        other.setAssociations(e, e.associations - 1);
      }
    }
  }

  private void semiAnti(Emitter out, RowKind kind, Object[] row, int side) {
    boolean accumulate = kind.isAccumulate();
    if (unmatchable(row, side)) {
      if (side == 0 && anti) {
        out.emit(kind, row);
      }
      return;
    }
    List<SideRows.Entry> matches = matches(row, side);
    if (side == 0) {
      if (!matches.isEmpty() != anti) {
        out.emit(kind, row);
      }
      long matched = 0;
      for (SideRows.Entry e : matches) {
        matched += e.count;
      }
      if (accumulate) {
        sides[0].add(row, matched);
      } else {
        sides[0].retract(row);
      }
      return;
    }
    SideRows left = sides[0];
    if (accumulate) {
      sides[1].add(row, 0);
      for (SideRows.Entry e : matches) {
        if (e.associations == 0) {
          emit(out, anti ? RowKind.DELETE : kind, e.fields, e.count);
        }
        left.setAssociations(e, e.associations + 1);
      }
    } else {
      sides[1].retract(row);
      for (SideRows.Entry e : matches) {
        if (e.associations == 1) {
          emit(out, anti ? RowKind.INSERT : kind, e.fields, e.count);
        }
        left.setAssociations(e, e.associations - 1);
      }
    }
  }
}
