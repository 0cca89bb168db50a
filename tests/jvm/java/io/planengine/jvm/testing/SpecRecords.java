package io.planengine.jvm.testing;

import io.planengine.jvm.spec.Nullable;
import io.planengine.jvm.spec.Spec;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.AnnotatedArrayType;
import java.lang.reflect.AnnotatedParameterizedType;
import java.lang.reflect.AnnotatedType;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Lists the spec records of the library ({@code io.planengine.jvm.spec}: every record there) with their components
 * as JSON, for the check that each has a Python dataclass of the same fields ({@code tests/jvm/spec_pairs.py}):
 *
 * <pre>{"DeduplicateSpec": {"uniqueKeys": {"array": {"class": "int"}}, ...}, ...}</pre>
 *
 * <p>A component's type is its Java type as {@link RecordComponent#getAnnotatedType} gives it: {@code {"class":
 * name}} (a primitive's name or a class's binary name), {@code {"array": item}}, {@code {"class": "java.util.List",
 * "args": [item]}}, each with {@code "nullable": true} where it carries {@link Nullable}. The mapping to Python
 * types is the Python side's, so this stays a plain listing.
 *
 * <p>Records are found in the library jar (or class folder) that holds {@link Spec}, so a record added without a
 * dataclass is listed too. {@code java ... SpecRecords OUT.json}.
 */
public final class SpecRecords {
  private SpecRecords() {}

  public static void main(String[] args) throws IOException, ReflectiveOperationException {
    Files.writeString(Path.of(args[0]), json(), StandardCharsets.UTF_8);
  }

  static String json() throws IOException, ReflectiveOperationException {
    TreeMap<String, String> records = new TreeMap<>();
    for (Class<?> type : specClasses()) {
      if (!type.isRecord()) {
        continue;
      }
      List<String> components = new ArrayList<>();
      for (RecordComponent c : type.getRecordComponents()) {
        components.add(quote(c.getName()) + ": " + describe(c.getAnnotatedType()));
      }
      records.put(type.getSimpleName(), "{" + String.join(", ", components) + "}");
    }
    List<String> out = new ArrayList<>();
    records.forEach((name, components) -> out.add("  " + quote(name) + ": " + components));
    return "{\n" + String.join(",\n", out) + "\n}\n";
  }

  private static String describe(AnnotatedType type) {
    String nullable = type.isAnnotationPresent(Nullable.class) ? ", \"nullable\": true" : "";
    if (type instanceof AnnotatedArrayType) {
      return "{\"array\": " + describe(((AnnotatedArrayType) type).getAnnotatedGenericComponentType()) + nullable
          + "}";
    }
    if (type instanceof AnnotatedParameterizedType) {
      List<String> items = new ArrayList<>();
      for (AnnotatedType a : ((AnnotatedParameterizedType) type).getAnnotatedActualTypeArguments()) {
        items.add(describe(a));
      }
      Class<?> raw = (Class<?>) ((ParameterizedType) type.getType()).getRawType();
      return "{\"class\": " + quote(raw.getName()) + ", \"args\": [" + String.join(", ", items) + "]" + nullable
          + "}";
    }
    return "{\"class\": " + quote(((Class<?>) type.getType()).getName()) + nullable + "}";
  }

  private static String quote(String text) {
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** The classes directly in {@link Spec}'s package, from the jar or folder it was loaded from. */
  private static List<Class<?>> specClasses() throws IOException, ReflectiveOperationException {
    String folder = Spec.class.getPackageName().replace('.', '/') + "/";
    File where;
    try {
      where = new File(Spec.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (java.net.URISyntaxException e) {
      throw new IOException(e);
    }
    List<String> names = new ArrayList<>();
    if (where.isDirectory()) {
      File[] files = new File(where, folder).listFiles();
      for (File f : files == null ? new File[0] : files) {
        names.add(folder + f.getName());
      }
    } else {
      try (JarFile jar = new JarFile(where)) {
        for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
          names.add(e.nextElement().getName());
        }
      }
    }
    List<Class<?>> out = new ArrayList<>();
    for (String name : names) {
      String rest = name.startsWith(folder) ? name.substring(folder.length()) : "";
      if (rest.endsWith(".class") && !rest.contains("/") && !rest.contains("$")) {
        out.add(Class.forName((folder + rest.substring(0, rest.length() - ".class".length())).replace('/', '.')));
      }
    }
    return out;
  }
}
