package io.planengine.jvm.testing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TwsTester;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Drives one keyed processor without a streaming query (Spark's {@link TwsTester}: an in-memory state handle,
 * no SparkSession, no JVM start beyond this one): {@link #feed} hands one key's rows of a micro-batch to
 * {@code handleInputRows} and returns the rows it emitted as text ({@code [a,1,+I]}: the fields, then the
 * row kind on an updating output); {@link #value} reads a value state of a key directly.
 */
public final class Processors {
  private final TwsTester<Row, Row, Row> tester;

  public Processors(StatefulProcessor<Row, Row, Row> processor) {
    this.tester = new TwsTester<>(processor, CollectionConverters.asScala(new ArrayList<Tuple2<Row, Object>>())
        .toList(), TimeMode.None(), OutputMode.Append(), Option.empty());
  }

  /** {@code key}'s rows of one micro-batch → what the processor emitted, as {@link Row#toString}. */
  public List<String> feed(Row key, Row... rows) {
    List<String> out = new ArrayList<>();
    for (Row emitted : CollectionConverters.asJava(tester.test(key, CollectionConverters.asScala(
        Arrays.asList(rows)).toList()))) {
      out.add(emitted.toString());
    }
    return out;
  }

  /** The value state {@code name} of {@code key}, or null when the key has none. */
  public Row value(String name, Row key) {
    Option<Row> held = tester.peekValueState(name, key);
    return held.isDefined() ? held.get() : null;
  }

  public static Row row(Object... fields) {
    return RowFactory.create(fields);
  }

  public static List<String> rows(String... text) {
    return Arrays.asList(text);
  }
}
