package io.planengine.jvm.testing;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TwsTester;
import scala.Function1;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Drives one keyed processor without a streaming query (Spark's {@link TwsTester}: an in-memory state handle,
 * no SparkSession, no JVM start beyond this one): {@link #feed} hands one key's rows of a micro-batch to
 * {@code handleInputRows} and returns the rows it emitted as text ({@code [a,1,+I]}: the fields, then the
 * row kind on an updating output); {@link #value} and {@link #map} read a key's state directly;
 * {@link #watermark} advances event time and returns what the timers it expired emitted.
 */
public final class Processors {
  private final TwsTester<Row, Row, Row> tester;

  /** A processor without timers ({@code TimeMode.None}). */
  public Processors(StatefulProcessor<Row, Row, Row> processor) {
    this(processor, false);
  }

  /**
   * A processor in {@code TimeMode.EventTime} when {@code eventTime}. The tester drops rows at or before the
   * watermark by an event time it extracts; the engine turns Spark's event-time marks off for its event-time
   * processors, which judge lateness themselves, so here no row is ever too old for the tester.
   */
  public Processors(StatefulProcessor<Row, Row, Row> processor, boolean eventTime) {
    Function1<Row, Object> never = row -> Long.MAX_VALUE;
    this.tester = new TwsTester<>(processor, CollectionConverters.asScala(new ArrayList<Tuple2<Row, Object>>())
        .toList(), eventTime ? TimeMode.EventTime() : TimeMode.None(), OutputMode.Append(),
        eventTime ? Option.apply(never) : Option.empty());
  }

  /** {@code key}'s rows of one micro-batch → what the processor emitted, as {@link Row#toString}. */
  public List<String> feed(Row key, Row... rows) {
    return text(tester.test(key, CollectionConverters.asScala(Arrays.asList(rows)).toList()));
  }

  /** Moves the event-time watermark to {@code ms}; what the expired timers emitted, as {@link #feed} returns. */
  public List<String> watermark(long ms) {
    return text(tester.setWatermark(ms));
  }

  private static List<String> text(scala.collection.immutable.List<Row> emitted) {
    List<String> out = new ArrayList<>();
    for (Row row : CollectionConverters.asJava(emitted)) {
      out.add(row.toString());
    }
    return out;
  }

  /** The value state {@code name} of {@code key}, or null when the key has none. */
  public Row value(String name, Row key) {
    Option<Row> held = tester.peekValueState(name, key);
    return held.isDefined() ? held.get() : null;
  }

  /** The map state {@code name} of {@code key} (empty when the key has none). */
  public Map<Row, Row> map(String name, Row key) {
    scala.collection.immutable.Map<Row, Row> held = tester.peekMapState(name, key);
    return CollectionConverters.asJava(held);
  }

  /**
   * A processor built through its private constructor. The families' constructors are private because the
   * engine builds them only through {@code prepare(Dataset, spec)}, whose Dataset needs a SparkSession; a unit
   * test needs neither. {@code args} must match the one declared constructor with as many parameters.
   */
  public static <T> T construct(Class<T> type, Object... args) throws ReflectiveOperationException {
    for (Constructor<?> c : type.getDeclaredConstructors()) {
      if (c.getParameterCount() == args.length) {
        c.setAccessible(true);
        return type.cast(c.newInstance(args));
      }
    }
    throw new NoSuchMethodException(type.getName() + " has no constructor of " + args.length + " parameters");
  }

  public static Row row(Object... fields) {
    return RowFactory.create(fields);
  }

  public static List<String> rows(String... text) {
    return Arrays.asList(text);
  }
}
