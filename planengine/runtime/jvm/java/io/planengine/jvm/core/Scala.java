package io.planengine.jvm.core;

import java.util.List;
import java.util.Map;
import scala.jdk.javaapi.CollectionConverters;

/** Java collections as the Scala collections Spark's row encoder takes for ARRAY and MAP values. */
public final class Scala {
  private Scala() {}

  public static scala.collection.immutable.Seq<Object> seq(List<?> list) {
    @SuppressWarnings("unchecked")
    List<Object> objects = (List<Object>) list;
    return CollectionConverters.asScala(objects).toSeq();
  }

  public static scala.collection.Map<Object, Object> map(Map<?, ?> map) {
    @SuppressWarnings("unchecked")
    Map<Object, Object> objects = (Map<Object, Object>) map;
    return CollectionConverters.asScala(objects);
  }
}
