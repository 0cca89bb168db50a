package io.planengine.jvm.ops.rank;

import io.planengine.jvm.core.ChangelogInput;
import io.planengine.jvm.core.Emitter;
import io.planengine.jvm.core.Keyed;
import io.planengine.jvm.core.KeyedOperator;
import io.planengine.jvm.core.KeyedChangelogProcessor;
import io.planengine.jvm.core.RowKind;
import io.planengine.jvm.core.Scala;
import io.planengine.jvm.core.StoredRow;
import io.planengine.jvm.core.Values;
import io.planengine.jvm.spec.RankSpec;
import io.planengine.jvm.spec.SortKeySpec;
import io.planengine.jvm.spec.Spec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Top-N on the JVM (Flink's {@code Rank}: ROW_NUMBER, RANK, DENSE_RANK), keyed by the partition columns.
 *
 * <p>State {@code rankedRows}: {@code (rows ARRAY<STRUCT<seq BIGINT, row STRUCT<the input's fields>>>, seq
 * BIGINT, written BIGINT)}: the partition's rows in sort order, {@code seq} numbering arrivals so rows with
 * equal sort keys keep arrival order (Flink's order among ties). Three strategies, as Flink's planner chooses
 * them ({@code strategy}; without it, as {@code stream-exec-rank_2} plans run: append-fast over insert-only
 * input, retract otherwise):
 *
 * <ul>
 *   <li>{@code APPEND_FAST}, insert-only input ({@code AppendOnlyTopNFunction}): only rows that can still rank
 *       within {@code rankEnd} are kept;
 *   <li>{@code RETRACT}, updating input ({@code RetractableTopNFunction}): every row is kept, so a retraction
 *       promotes the next one; a retraction of a row the state does not hold is ignored;
 *   <li>{@code UPDATE_FAST}, an updating input with a unique key ({@code uniqueKey}, input positions that
 *       determine the partition) whose sort key only moves rows up ({@code UpdatableTopNFunction}): an
 *       accumulate message replaces the row of its unique key, {@code -U} is skipped (its {@code +U} carries
 *       the change), and only rows that can still rank are kept, as rows below the top-N never come back except
 *       through a message of their own. So an update is one change of the top-N instead of a retraction (which
 *       promotes the next row) and an insertion (which demotes it again): fewer messages, less state.
 * </ul>
 *
 * <p>Emission diffs the top-N before and after each record: with the rank number and ROW_NUMBER, per rank
 * position (a position that gains a row {@code +I}, loses it {@code -D}, changes rows {@code -U old} when
 * {@code generateUpdateBefore}, then {@code +U new}); otherwise the rows leaving the top-N {@code -D} and the
 * rows entering it {@code +I} (in rank order), except that update-fast updates the row of a unique key that
 * stays in the top-N in place ({@code -U old}, {@code +U new}, as Flink). The same rules as the Python operator
 * ({@code runtime/operators/rank.py}), which {@code stream-exec-rank_1} plans keep.
 *
 * <p>Spec: {@link RankSpec}.
 */
public final class Rank extends KeyedChangelogProcessor<RankSpec> {
  private static final long serialVersionUID = 1L;

  private enum Type { ROW_NUMBER, RANK, DENSE_RANK }

  private enum Strategy { APPEND_FAST, RETRACT, UPDATE_FAST }

  private transient int width;
  private transient int[] fields;
  private transient boolean[] ascending;
  private transient boolean[] nullsFirst;
  private transient Type type;
  private transient long rankStart;
  private transient long rankEnd;
  private transient boolean outputRank;
  private transient boolean updateBefore;
  private transient Strategy strategy;
  private transient int[] uniqueKey;
  private transient long ttlMs;
  private transient ValueState<Row> state;

  private Rank(String spec, StructType input, boolean updatingOutput) {
    super(spec, input, updatingOutput);
  }

  public static Dataset<Row> apply(Dataset<Row> input, String specJson) {
    return prepare(input, specJson).run();
  }

  public static KeyedOperator prepare(Dataset<Row> input, String specJson) {
    RankSpec spec = RankSpec.parse(specJson);
    List<DataType> types = new ArrayList<>();
    for (org.apache.spark.sql.types.StructField f : StoredRow.dataFields(input.schema()).fields()) {
      types.add(f.dataType());
    }
    if (spec.outputRankNumber()) {
      types.add(DataTypes.LongType);
    }
    boolean updating = !spec.insertOnly();
    return new KeyedOperator(input, spec.partitionKeys(), new Rank(specJson, input.schema(), updating),
        Keyed.outputSchema(types, updating));
  }

  static StructType stateType(StructType rowType) {
    StructType entry = new StructType().add("seq", DataTypes.LongType, false).add("row", rowType, false);
    return new StructType().add("rows", DataTypes.createArrayType(entry, false), false)
        .add("seq", DataTypes.LongType, false).add("written", DataTypes.LongType, false);
  }

  @Override
  protected RankSpec readSpec(Spec json) {
    return RankSpec.from(json);
  }

  @Override
  protected void open(RankSpec spec, StructType inputSchema, StatefulProcessorHandle handle) {
    StructType data = StoredRow.dataFields(inputSchema);
    width = data.size();
    List<SortKeySpec> order = spec.order();
    fields = new int[order.size()];
    ascending = new boolean[order.size()];
    nullsFirst = new boolean[order.size()];
    for (int i = 0; i < order.size(); i++) {
      SortKeySpec key = order.get(i);
      fields[i] = key.field();
      if (fields[i] >= width) {
        throw Spec.at("$.order[" + i + "].field", "refers to input field " + fields[i] + " of " + width);
      }
      ascending[i] = key.ascending();
      nullsFirst[i] = key.nullsFirst();
    }
    type = Type.valueOf(spec.rankType());
    rankStart = spec.rankStart();
    rankEnd = spec.rankEnd();
    outputRank = spec.outputRankNumber();
    updateBefore = spec.generateUpdateBefore();
    strategy = Strategy.valueOf(spec.strategyOrDerived());
    uniqueKey = spec.uniqueKeyOrNone();
    if (strategy == Strategy.UPDATE_FAST && uniqueKey.length == 0) {
      throw Spec.at("$.uniqueKey", "is needed by the UPDATE_FAST strategy");
    }
    for (int k : uniqueKey) {
      if (k >= width) {
        throw Spec.at("$.uniqueKey", "refers to input field " + k + " of " + width);
      }
    }
    ttlMs = spec.stateTtlMs();
    state = handle.getValueState(spec.stateNames().get(0), Encoders.row(stateType(data)),
        TTLConfig.NONE());
  }

  /** One kept row: its arrival number and its fields. */
  private static final class Entry {
    final long seq;
    final Object[] row;

    Entry(long seq, Object[] row) {
      this.seq = seq;
      this.row = row;
    }
  }

  private int compareRows(Object[] a, Object[] b) {
    for (int i = 0; i < fields.length; i++) {
      Object x = a[fields[i]];
      Object y = b[fields[i]];
      int c;
      if (x == null || y == null) {
        c = x == null && y == null ? 0 : (x == null ? (nullsFirst[i] ? -1 : 1) : (nullsFirst[i] ? 1 : -1));
      } else {
        c = Values.compare(x, y);
        if (!ascending[i]) {
          c = -c;
        }
      }
      if (c != 0) {
        return c;
      }
    }
    return 0;
  }

  /** The position a new row goes to: after every row that sorts before it or ties with it. */
  private int insertionPoint(List<Entry> entries, Object[] row) {
    int lo = 0;
    int hi = entries.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (compareRows(entries.get(mid).row, row) <= 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /** The rank of each entry, computed up to the first one ranked past {@code stopAfter} (included). */
  private long[] ranks(List<Entry> entries, int limit, long stopAfter) {
    long[] out = new long[limit];
    long dense = 0;
    for (int i = 0; i < limit; i++) {
      if (type == Type.ROW_NUMBER) {
        out[i] = i + 1;
      } else {
        boolean tie = i > 0 && compareRows(entries.get(i - 1).row, entries.get(i).row) == 0;
        if (type == Type.DENSE_RANK) {
          dense = tie ? dense : dense + 1;
          out[i] = dense;
        } else {
          out[i] = tie ? out[i - 1] : i + 1;
        }
      }
      if (out[i] > stopAfter) {
        return Arrays.copyOf(out, i + 1);
      }
    }
    return out;
  }

  /** The rows ranked within {@code rankStart..rankEnd}, with their rank, in order. */
  private List<Object[]> top(List<Entry> entries) {
    List<Object[]> out = new ArrayList<>();
    // Ranks never decrease along the sort order, so the first rank past rankEnd ends the top-N.
    long[] ranks = ranks(entries, entries.size(), rankEnd);
    for (int i = 0; i < ranks.length; i++) {
      if (ranks[i] > rankEnd) {
        break;
      }
      if (ranks[i] >= rankStart) {
        out.add(withRank(entries.get(i).row, ranks[i]));
      }
    }
    return out;
  }

  private Object[] withRank(Object[] row, long rank) {
    if (!outputRank) {
      return row;
    }
    Object[] out = Arrays.copyOf(row, row.length + 1);
    out[row.length] = rank;
    return out;
  }

  private static Object key(Object[] row) {
    Object[] out = new Object[row.length];
    for (int i = 0; i < row.length; i++) {
      out[i] = Values.hashable(row[i]);
    }
    return Arrays.asList(out);
  }

  private void diff(Emitter out, List<Object[]> before, List<Object[]> after) {
    if (outputRank && type == Type.ROW_NUMBER) {
      Map<Long, Object[]> old = new HashMap<>();
      Map<Long, Object[]> now = new HashMap<>();
      long max = 0;
      for (Object[] r : before) {
        old.put((Long) r[width], r);
        max = Math.max(max, (Long) r[width]);
      }
      for (Object[] r : after) {
        now.put((Long) r[width], r);
        max = Math.max(max, (Long) r[width]);
      }
      for (long rank = 1; rank <= max; rank++) {
        Object[] o = old.get(rank);
        Object[] n = now.get(rank);
        if (o == null && n == null || o != null && n != null && Values.equalRows(o, n)) {
          continue;
        }
        if (o == null) {
          out.emit(RowKind.INSERT, n);
        } else if (n == null) {
          out.emit(RowKind.DELETE, o);
        } else {
          if (updateBefore) {
            out.emit(RowKind.UPDATE_BEFORE, o);
          }
          out.emit(RowKind.UPDATE_AFTER, n);
        }
      }
      return;
    }
    Map<Object, int[]> counts = new LinkedHashMap<>();
    Map<Object, Object[]> rows = new HashMap<>();
    for (Object[] r : before) {
      Object k = key(r);
      counts.computeIfAbsent(k, x -> new int[2])[0]++;
      rows.putIfAbsent(k, r);
    }
    for (Object[] r : after) {
      Object k = key(r);
      counts.computeIfAbsent(k, x -> new int[2])[1]++;
      rows.putIfAbsent(k, r);
    }
    for (Map.Entry<Object, int[]> e : counts.entrySet()) {
      for (int i = e.getValue()[1]; i < e.getValue()[0]; i++) {
        out.emit(RowKind.DELETE, rows.get(e.getKey()));
      }
    }
    java.util.Set<Object> seen = new java.util.HashSet<>();
    for (Object[] r : after) { // entering rows in rank order, each row's copies together
      Object k = key(r);
      int[] c = counts.get(k);
      if (seen.add(k)) {
        for (int i = c[0]; i < c[1]; i++) {
          out.emit(RowKind.INSERT, r);
        }
      }
    }
  }

  /**
   * Update-fast without the rank number ({@code UpdatableTopNFunction.processElementWithoutRowNumber}): the row
   * of a unique key that stays in the top-N is updated in place, {@code -U old} (when {@code
   * generateUpdateBefore}) and {@code +U new} wherever it moved, not a deletion and an insertion; any other change
   * of the top-N (none, as sort keys only move rows up) is diffed as usual.
   */
  private void updateInPlace(
      Emitter out, List<Object[]> before, List<Object[]> after, Object[] replaced, Object[] row) {
    int was = indexOfSame(before, replaced);
    int is = indexOfSame(after, row);
    if (was < 0 || is < 0) {
      diff(out, before, after);
      return;
    }
    if (updateBefore) {
      out.emit(RowKind.UPDATE_BEFORE, replaced);
    }
    out.emit(RowKind.UPDATE_AFTER, row);
    List<Object[]> restBefore = new ArrayList<>(before);
    restBefore.remove(was);
    List<Object[]> restAfter = new ArrayList<>(after);
    restAfter.remove(is);
    diff(out, restBefore, restAfter);
  }

  /** The position of this very array in {@code rows} (kept rows are compared by identity, not content). */
  private static int indexOfSame(List<Object[]> rows, Object[] row) {
    for (int i = 0; i < rows.size(); i++) {
      if (rows.get(i) == row) {
        return i;
      }
    }
    return -1;
  }

  /** Append-fast and update-fast: rows ranked beyond {@code rankEnd} never come back (see the class comment). */
  private void trim(List<Entry> entries) {
    if (strategy == Strategy.RETRACT || entries.size() <= rankEnd) {
      return;
    }
    long[] ranks = ranks(entries, entries.size(), rankEnd);
    int last = ranks.length - 1;
    if (ranks[last] > rankEnd) {
      entries.subList(last, entries.size()).clear();
    }
  }

  private boolean sameKey(Object[] a, Object[] b) {
    for (int k : uniqueKey) {
      if (!Values.equal(a[k], b[k])) {
        return false;
      }
    }
    return true;
  }

  /** The position of the row to replace or retract: its unique key (update-fast), else an equal row. */
  private int held(List<Entry> entries, Object[] row) {
    for (int i = entries.size() - 1; i >= 0; i--) {
      Object[] kept = entries.get(i).row;
      if (strategy == Strategy.UPDATE_FAST ? sameKey(kept, row) : Values.equalRows(kept, row)) {
        return i;
      }
    }
    return -1;
  }

  @Override
  protected void process(Row key, ChangelogInput input, Emitter out) {
    Row stored = state.get();
    List<Entry> entries = new ArrayList<>();
    long seq = 0;
    if (stored != null && !expired(ttlMs, stored.getLong(2))) {
      for (Object o : stored.getList(0)) {
        Row e = (Row) o;
        entries.add(new Entry(e.getLong(0), StoredRow.fields(e.getStruct(1), width)));
      }
      seq = stored.getLong(1);
    }
    List<Object[]> current = top(entries);
    boolean any = false;
    while (input.next()) {
      any = true;
      Object[] row = StoredRow.fields(input.row(), width);
      Object[] replaced = null;
      int touched; // the first position this record changes: positions before it keep their rows
      if (strategy == Strategy.UPDATE_FAST) {
        if (input.kind() == RowKind.UPDATE_BEFORE) {
          continue; // the update's +U replaces the row by its unique key
        }
        int found = held(entries, row);
        touched = found >= 0 ? found : Integer.MAX_VALUE;
        if (found >= 0) {
          replaced = entries.remove(found).row;
        }
        if (input.kind().isAccumulate()) {
          int at = insertionPoint(entries, row);
          entries.add(at, new Entry(seq++, row));
          touched = Math.min(touched, at);
        } else if (found < 0) {
          continue;
        }
      } else if (input.kind().isAccumulate()) {
        touched = insertionPoint(entries, row);
        entries.add(touched, new Entry(seq++, row));
      } else {
        touched = held(entries, row);
        if (touched < 0) {
          continue; // a retraction of a row we do not hold
        }
        entries.remove(touched);
      }
      trim(entries);
      if (type == Type.ROW_NUMBER && touched >= rankEnd) {
        // A ROW_NUMBER is the position, so the top-N (positions below rankEnd) is unchanged: nothing to emit.
        // Over an insert-only input most rows land here (Flink's AppendOnlyTopNFunction returns early too).
        continue;
      }
      List<Object[]> next = top(entries);
      if (replaced != null && !outputRank && input.kind().isAccumulate()) {
        updateInPlace(out, current, next, replaced, row);
      } else {
        diff(out, current, next);
      }
      current = next;
    }
    if (!any) {
      return;
    }
    if (!entries.isEmpty()) {
      List<Object> structs = new ArrayList<>(entries.size());
      for (Entry e : entries) {
        structs.add(RowFactory.create(e.seq, RowFactory.create(e.row)));
      }
      state.update(RowFactory.create(Scala.seq(structs), seq, now));
    } else if (stored != null) {
      state.clear();
    }
  }
}
