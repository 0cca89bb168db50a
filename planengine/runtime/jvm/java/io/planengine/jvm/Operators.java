package io.planengine.jvm;

import io.planengine.jvm.ops.aggregate.GroupAggregate;
import io.planengine.jvm.ops.dedup.Deduplicate;
import io.planengine.jvm.ops.join.Join;
import io.planengine.jvm.ops.materialize.UpsertMaterializer;
import io.planengine.jvm.ops.rank.Rank;
import io.planengine.jvm.ops.normalize.ChangelogNormalize;
import io.planengine.jvm.ops.over.OverAggregate;
import io.planengine.jvm.ops.session.SessionAggregate;
import io.planengine.jvm.ops.probe.KeyedRowCount;
import io.planengine.jvm.ops.watermark.RecordWatermarks;
import io.planengine.jvm.core.KeyedOperator;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * The entry points the engine calls through the session's Py4J gateway: each takes the input Dataset and
 * the node's spec as JSON and returns the operator's output Dataset. One static method per operator
 * family; the family's code lives in its own package under {@code ops}.
 */
public final class Operators {
  private Operators() {}

  /** The families a migration can start from converted state, by entry point name (see {@link #withInitialState}). */
  private static final Map<String, BiFunction<Dataset<Row>, String, KeyedOperator>> MOVABLE = Map.of(
      "deduplicate", Deduplicate::prepare,
      "changelogNormalize", ChangelogNormalize::prepare,
      "upsertMaterialize", UpsertMaterializer::prepare,
      "join", Join::prepare,
      "rank", Rank::prepare,
      "overAggregate", OverAggregate::prepare,
      "sessionAggregate", SessionAggregate::prepare);

  private static KeyedOperator movable(String entry, Dataset<Row> input, String spec) {
    BiFunction<Dataset<Row>, String, KeyedOperator> prepare = MOVABLE.get(entry);
    if (prepare == null) {
      throw new IllegalArgumentException("operator " + entry + " cannot start from converted state; movable: "
          + new java.util.TreeSet<>(MOVABLE.keySet()));
    }
    return prepare.apply(input, spec);
  }

  /** The Spark type (JSON) of the {@code state} column of operator {@code entry}'s initial state. */
  public static String initialStateType(String entry, Dataset<Row> input, String spec) {
    return movable(entry, input, spec).initialStateType().json();
  }

  /** Operator {@code entry} over {@code input}, started from {@code initial} (a migration's seed query). */
  public static Dataset<Row> withInitialState(String entry, Dataset<Row> input, String spec, Dataset<Row> initial) {
    return movable(entry, input, spec).runFrom(initial);
  }

  /** {@code sparkVersion=...} and {@code sourceDigest=...} of this jar, as the build wrote them. */
  public static String buildInfo() throws IOException {
    Properties p = new Properties();
    try (InputStream in = Operators.class.getResourceAsStream("build-info.properties")) {
      if (in != null) {
        p.load(in);
      }
    }
    return "sparkVersion=" + p.getProperty("sparkVersion", "?") + "\nsourceDigest="
        + p.getProperty("sourceDigest", "?") + "\nruntimeSparkVersion=" + org.apache.spark.package$.MODULE$.SPARK_VERSION();
  }

  public static Dataset<Row> groupAggregate(Dataset<Row> input, String spec) {
    return GroupAggregate.apply(input, spec);
  }

  public static String groupAggregateInitialStateType(Dataset<Row> input, String spec) {
    return GroupAggregate.initialStateType(input, spec);
  }

  public static Dataset<Row> groupAggregateWithInitialState(Dataset<Row> input, String spec, Dataset<Row> initial) {
    return GroupAggregate.applyWithInitialState(input, spec, initial);
  }

  public static Dataset<Row> deduplicate(Dataset<Row> input, String spec) {
    return Deduplicate.apply(input, spec);
  }

  public static Dataset<Row> changelogNormalize(Dataset<Row> input, String spec) {
    return ChangelogNormalize.apply(input, spec);
  }

  public static Dataset<Row> join(Dataset<Row> input, String spec) {
    return Join.apply(input, spec);
  }

  public static Dataset<Row> rank(Dataset<Row> input, String spec) {
    return Rank.apply(input, spec);
  }

  public static Dataset<Row> overAggregate(Dataset<Row> input, String spec) {
    return OverAggregate.apply(input, spec);
  }

  public static Dataset<Row> sessionAggregate(Dataset<Row> input, String spec) {
    return SessionAggregate.apply(input, spec);
  }

  public static Dataset<Row> upsertMaterialize(Dataset<Row> input, String spec) {
    return UpsertMaterializer.apply(input, spec);
  }

  /** Not an operator: the per-record watermark column of a {@code watermark-assigner} with {@code perRecordWatermark}. */
  public static Dataset<Row> recordWatermarks(Dataset<Row> input, String spec) {
    return RecordWatermarks.apply(input, spec);
  }

  /** Diagnostic: counts rows per key (proves the library loads and a processor keeps state). */
  public static Dataset<Row> keyedRowCount(Dataset<Row> input, String spec) {
    return KeyedRowCount.apply(input, spec);
  }
}
