package io.planengine.jvm.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.sql.types.DataType;

/**
 * A node's plan spec as the engine hands it to the JVM: JSON, read with paths in every error, so a spec
 * the Python side got wrong fails at query start with the field that is wrong rather than mid-stream.
 *
 * <p>Each family reads its spec once into a typed record of this package ({@code DeduplicateSpec}, ...), whose
 * {@code from(Spec)} is the only code that walks the JSON; a Python dataclass of the same fields
 * ({@code planengine/runtime/jvm/specs.py}) writes it, and a test compares the two
 * ({@code tests/jvm/spec_pairs.py}).
 */
public final class Spec {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private final JsonNode node;
  private final String path;

  private Spec(JsonNode node, String path) {
    this.node = node;
    this.path = path;
  }

  public static Spec parse(String json) {
    try {
      return new Spec(MAPPER.readTree(json), "$");
    } catch (Exception e) {
      throw new IllegalArgumentException("operator spec is not valid JSON: " + e.getMessage(), e);
    }
  }

  public String path() {
    return path;
  }

  public boolean has(String field) {
    JsonNode v = node.get(field);
    return v != null && !v.isNull();
  }

  public Spec get(String field) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      throw error(field, "is missing");
    }
    return new Spec(v, path + "." + field);
  }

  public String string(String field) {
    Spec v = get(field);
    if (!v.node.isTextual()) {
      throw error(field, "must be a string");
    }
    return v.node.asText();
  }

  public String string(String field, String otherwise) {
    return has(field) ? string(field) : otherwise;
  }

  public long longValue(String field, long otherwise) {
    if (!has(field)) {
      return otherwise;
    }
    JsonNode v = node.get(field);
    if (!v.canConvertToLong()) {
      throw error(field, "must be an integer");
    }
    return v.asLong();
  }

  public int intValue(String field, int otherwise) {
    return (int) longValue(field, otherwise);
  }

  /** An optional integer field: null when absent or null. */
  public Integer nullableInt(String field) {
    return has(field) ? intValue(field, 0) : null;
  }

  /** An optional integer field: null when absent or null. */
  public Long nullableLong(String field) {
    return has(field) ? longValue(field, 0L) : null;
  }

  /** An optional string field: null when absent or null. */
  public String nullableString(String field) {
    return has(field) ? string(field) : null;
  }

  /** An optional list of integers: null when absent or null (an empty list stays empty). */
  public int[] nullableInts(String field) {
    return has(field) ? ints(field) : null;
  }

  /** Each item of the list {@code field} read by {@code read} (empty when absent), in order. */
  public <T> List<T> list(String field, Function<Spec, T> read) {
    List<T> out = new ArrayList<>();
    for (Spec item : list(field)) {
      out.add(read.apply(item));
    }
    return out;
  }

  /** A list of Spark SQL types in DDL text; an item that is not one fails with its path. */
  public List<DataType> types(String field) {
    List<DataType> out = new ArrayList<>();
    for (Spec item : list(field)) {
      String text = item.node.asText();
      try {
        out.add(DataType.fromDDL(text));
      } catch (Exception e) {
        throw at(item.path, "is not a Spark type: " + text);
      }
    }
    return out;
  }

  /** An optional integer field: -1 when absent or null. */
  public int index(String field) {
    return has(field) ? intValue(field, -1) : -1;
  }

  public boolean bool(String field, boolean otherwise) {
    if (!has(field)) {
      return otherwise;
    }
    JsonNode v = node.get(field);
    if (!v.isBoolean()) {
      throw error(field, "must be true or false");
    }
    return v.asBoolean();
  }

  public int[] ints(String field) {
    if (!has(field)) {
      return new int[0];
    }
    List<Spec> items = list(field);
    int[] out = new int[items.size()];
    for (int i = 0; i < out.length; i++) {
      if (!items.get(i).node.canConvertToInt()) {
        throw new IllegalArgumentException("operator spec " + items.get(i).path + " must be an integer");
      }
      out[i] = items.get(i).node.asInt();
    }
    return out;
  }

  public List<Spec> list(String field) {
    if (!has(field)) {
      return List.of();
    }
    JsonNode v = node.get(field);
    if (!v.isArray()) {
      throw error(field, "must be a list");
    }
    List<Spec> out = new ArrayList<>();
    for (int i = 0; i < v.size(); i++) {
      out.add(new Spec(v.get(i), path + "." + field + "[" + i + "]"));
    }
    return out;
  }

  public List<String> strings(String field) {
    List<String> out = new ArrayList<>();
    for (Spec s : list(field)) {
      out.add(s.node.asText());
    }
    return out;
  }

  /** A Spark SQL type in DDL text ({@code DECIMAL(38,2)}, {@code TIMESTAMP_NTZ}, ...). */
  public DataType type(String field) {
    String text = string(field);
    try {
      return DataType.fromDDL(text);
    } catch (Exception e) {
      throw error(field, "is not a Spark type: " + text);
    }
  }

  /** The raw JSON value (for literals handed over as JSON). */
  public JsonNode json() {
    return node;
  }

  public IllegalArgumentException error(String field, String problem) {
    return at(path + "." + field, problem);
  }

  /**
   * The error of the field at {@code path} ({@code $.aggCalls[1].args}): for what a typed spec can only check
   * once it meets the input (a position beyond the input's fields), after the JSON has been read.
   */
  public static IllegalArgumentException at(String path, String problem) {
    return new IllegalArgumentException("operator spec " + path + " " + problem);
  }
}
