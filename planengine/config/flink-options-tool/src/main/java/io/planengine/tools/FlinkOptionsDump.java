package io.planengine.tools;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.annotation.docs.Documentation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.description.HtmlFormatter;

/**
 * Writes every public static {@link ConfigOption} of a Flink release's jars as planengine's table of Flink keys
 * ({@code planengine/config/flink_options.json}).
 *
 * <p>Why reflection over the jars rather than a list of classes: Flink keeps options in many holder classes
 * (and moves them between releases); scanning the named artifacts finds all of them, so the table is "every
 * key this Flink release knows" by construction. Only keys under the given prefixes are kept (the groups a SQL
 * script sets: table, execution, pipeline, state, checkpointing, SQL client, ...).
 *
 * <p>Arguments: {@code --version V --out FILE --prefixes p1,p2,... artifactId...}; the artifacts' jars are found
 * on the class path by file name. Output is sorted by key and byte-identical for the same inputs.
 */
public final class FlinkOptionsDump {

    private FlinkOptionsDump() {}

    /** One option as the JSON file holds it. */
    private record Entry(
            String key,
            String type,
            List<String> enumValues,
            String defaultValue,
            List<String> deprecatedKeys,
            List<String> fallbackKeys,
            boolean deprecated,
            boolean documented,
            String holder,
            String description) {}

    public static void main(String[] args) throws Exception {
        String version = null;
        Path out = null;
        List<String> prefixes = new ArrayList<>();
        List<String> artifacts = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--version" -> version = args[++i];
                case "--out" -> out = Paths.get(args[++i]);
                case "--prefixes" -> prefixes.addAll(Arrays.asList(args[++i].split(",")));
                default -> artifacts.add(args[i]);
            }
        }
        if (version == null || out == null || prefixes.isEmpty() || artifacts.isEmpty()) {
            throw new IllegalArgumentException("usage: --version V --out FILE --prefixes p1,p2 artifactId...");
        }
        Map<String, Entry> byKey = new TreeMap<>();
        for (String artifact : artifacts) {
            Path jar = findJar(artifact, version);
            for (String className : classNames(jar)) {
                for (Entry entry : options(className)) {
                    if (prefixes.stream().anyMatch(entry.key()::startsWith)) {
                        // The same option may be declared by two holders; keep the first in scan order.
                        byKey.putIfAbsent(entry.key(), entry);
                    }
                }
            }
        }
        Files.writeString(out, render(version, prefixes, artifacts, byKey.values()), StandardCharsets.UTF_8);
        System.out.println("wrote " + byKey.size() + " options of Flink " + version + " to " + out);
    }

    private static Path findJar(String artifact, String version) {
        String name = artifact + "-" + version + ".jar";
        for (String element : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path path = Paths.get(element);
            if (path.getFileName() != null && path.getFileName().toString().equals(name)) {
                return path;
            }
        }
        throw new IllegalStateException(name + " is not on the class path (is it a dependency in pom.xml?)");
    }

    private static List<String> classNames(Path jar) {
        List<String> names = new ArrayList<>();
        try (JarFile file = new JarFile(jar.toFile())) {
            Enumeration<JarEntry> entries = file.entries();
            while (entries.hasMoreElements()) {
                String entry = entries.nextElement().getName();
                if (entry.endsWith(".class") && !entry.contains("-info") && !entry.startsWith("META-INF/")
                        && !entry.contains("/shaded/")) {
                    names.add(entry.substring(0, entry.length() - ".class".length()).replace('/', '.'));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        names.sort(String::compareTo);
        return names;
    }

    private static List<Entry> options(String className) {
        List<Entry> found = new ArrayList<>();
        Class<?> holder;
        Field[] fields;
        try {
            holder = Class.forName(className, false, FlinkOptionsDump.class.getClassLoader());
            if (!Modifier.isPublic(holder.getModifiers())) {
                return found;
            }
            fields = holder.getDeclaredFields();
        } catch (LinkageError | ClassNotFoundException e) {
            return found; // a class needing an optional dependency holds no option of ours
        }
        for (Field field : fields) {
            int modifiers = field.getModifiers();
            if (!Modifier.isStatic(modifiers) || !Modifier.isPublic(modifiers)
                    || !ConfigOption.class.isAssignableFrom(field.getType())) {
                continue;
            }
            try {
                ConfigOption<?> option = (ConfigOption<?>) field.get(null);
                if (option != null) {
                    found.add(describe(option, field, holder));
                }
            } catch (ReflectiveOperationException | LinkageError e) {
                System.err.println("skipped " + className + "." + field.getName() + ": " + e);
            }
        }
        return found;
    }

    private static Entry describe(ConfigOption<?> option, Field field, Class<?> holder)
            throws ReflectiveOperationException {
        Class<?> clazz = (Class<?>) call(option, "getClazz");
        boolean isList = (Boolean) call(option, "isList");
        String type = typeName(clazz);
        if (isList) {
            type = "List<" + type + ">";
        }
        List<String> enumValues = new ArrayList<>();
        if (clazz.isEnum()) {
            for (Object constant : clazz.getEnumConstants()) {
                enumValues.add(constant.toString()); // Flink matches enum values by toString, ignoring case
            }
        }
        List<String> deprecatedKeys = new ArrayList<>();
        List<String> fallbackKeys = new ArrayList<>();
        for (FallbackKey fallback : option.fallbackKeys()) {
            (fallback.isDeprecated() ? deprecatedKeys : fallbackKeys).add(fallback.getKey());
        }
        String defaultValue = option.hasDefaultValue() ? stringify(option.defaultValue()) : null;
        return new Entry(
                option.key(),
                type,
                enumValues,
                defaultValue,
                deprecatedKeys,
                fallbackKeys,
                field.isAnnotationPresent(Deprecated.class) || holder.isAnnotationPresent(Deprecated.class),
                !field.isAnnotationPresent(Documentation.ExcludeFromDocumentation.class),
                holder.getSimpleName() + "." + field.getName(),
                firstSentence(new HtmlFormatter().format(option.description())));
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        Method m = ConfigOption.class.getDeclaredMethod(method);
        m.setAccessible(true); // package-private accessors of ConfigOption
        return m.invoke(target);
    }

    /** Flink's own rendering of a value ("10 min", "64 kb", "a;b", "k1:v1,k2:v2"), as its docs show defaults. */
    private static String stringify(Object value) throws ReflectiveOperationException {
        Class<?> utils = Class.forName("org.apache.flink.configuration.ConfigurationUtils");
        Method convert = utils.getDeclaredMethod("convertToString", Object.class);
        convert.setAccessible(true);
        return (String) convert.invoke(null, value);
    }

    private static String typeName(Class<?> clazz) {
        if (clazz.isEnum()) {
            return "Enum";
        }
        if (clazz == Map.class) {
            return "Map";
        }
        return clazz.getSimpleName();
    }

    private static final Pattern TAG = Pattern.compile("<[^>]+>");
    private static final Pattern SENTENCE_END = Pattern.compile("(?<!\\be\\.g|\\bi\\.e|\\betc)[.!?](?=\\s+[A-Z\"'(]|\\s*$)");

    static String firstSentence(String html) {
        String text = TAG.matcher(html.replace("<br />", " ")).replaceAll(" ")
                .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'")
                .replace("&amp;", "&").replaceAll("\\s+", " ").trim()
                .replaceAll(" ([.,;:)])", "$1"); // tags stripped to spaces left "exponential-delay ."
        Matcher end = SENTENCE_END.matcher(text);
        return end.find() ? text.substring(0, end.end()) : text;
    }

    // --- JSON (one option per line so a Flink bump reviews as a readable diff) ------------------------------

    private static String render(String version, List<String> prefixes, List<String> artifacts,
            Iterable<Entry> entries) {
        StringBuilder json = new StringBuilder();
        json.append("{\n");
        json.append("  \"flinkVersion\": ").append(quote(version)).append(",\n");
        json.append("  \"generatedBy\": \"planengine/config/flink-options-tool (see its README.md)\",\n");
        json.append("  \"artifacts\": ").append(list(artifacts)).append(",\n");
        json.append("  \"prefixes\": ").append(list(prefixes)).append(",\n");
        json.append("  \"options\": [\n");
        boolean first = true;
        for (Entry e : entries) {
            if (!first) {
                json.append(",\n");
            }
            first = false;
            json.append("    {\"key\": ").append(quote(e.key()))
                    .append(", \"type\": ").append(quote(e.type()));
            if (!e.enumValues().isEmpty()) {
                json.append(", \"values\": ").append(list(e.enumValues()));
            }
            json.append(", \"default\": ").append(e.defaultValue() == null ? "null" : quote(e.defaultValue()));
            if (!e.deprecatedKeys().isEmpty()) {
                json.append(", \"deprecatedKeys\": ").append(list(e.deprecatedKeys()));
            }
            if (!e.fallbackKeys().isEmpty()) {
                json.append(", \"fallbackKeys\": ").append(list(e.fallbackKeys()));
            }
            if (e.deprecated()) {
                json.append(", \"deprecated\": true");
            }
            if (!e.documented()) {
                json.append(", \"documented\": false");
            }
            json.append(", \"holder\": ").append(quote(e.holder()))
                    .append(", \"description\": ").append(quote(e.description())).append('}');
        }
        json.append("\n  ]\n}\n");
        return json.toString();
    }

    private static String list(List<String> values) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(quote(values.get(i)));
        }
        return out.append(']').toString();
    }

    private static String quote(String value) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
