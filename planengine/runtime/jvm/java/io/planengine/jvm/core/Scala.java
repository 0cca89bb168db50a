package io.planengine.jvm.core;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import scala.jdk.javaapi.CollectionConverters;

/** Java collections as the Scala collections Spark's row encoder takes for ARRAY and MAP values. */
public final class Scala {
  private Scala() {}

  /** A copy as an immutable Scala sequence (the read-only view types the elements as Object without a cast). */
  public static scala.collection.immutable.Seq<Object> seq(List<?> list) {
    List<Object> objects = Collections.unmodifiableList(list);
    return CollectionConverters.asScala(objects).toSeq();
  }

  /** A read-only Scala view of {@code map}, typed {@code Object → Object} without a cast. */
  public static scala.collection.Map<Object, Object> map(Map<?, ?> map) {
    Map<Object, Object> objects = Collections.unmodifiableMap(map);
    return CollectionConverters.asScala(objects);
  }
}
