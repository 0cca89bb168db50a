package io.planengine.jvm.testing;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Runs the {@link Test} methods of the classes named on the command line, each on a new instance, and reports
 * one line per test, then {@code N passed, N failed}; {@code --report PATH} also writes the counts as JSON
 * (read by {@code python -m tests.tiers.run}). Exit status 1 when a test failed or a class has no test (a test
 * class whose methods lost their annotation would otherwise pass silently).
 *
 * <p>Why not JUnit: the build downloads nothing, and PySpark's jars carry no test framework; the few features
 * the library's unit tests need fit here.
 */
public final class TestRunner {
  private TestRunner() {}

  public static void main(String[] args) throws IOException, ReflectiveOperationException {
    Path report = null;
    List<String> classes = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--report")) {
        report = Path.of(args[++i]);
      } else {
        classes.add(args[i]);
      }
    }
    int passed = 0;
    int failed = 0;
    for (String name : classes) {
      Class<?> type = Class.forName(name);
      List<Method> tests = new ArrayList<>();
      for (Method m : type.getDeclaredMethods()) {
        if (m.isAnnotationPresent(Test.class)) {
          tests.add(m);
        }
      }
      if (tests.isEmpty()) {
        System.out.println("FAILED " + name + ": no @Test method");
        failed++;
        continue;
      }
      tests.sort(Comparator.comparing(Method::getName));
      for (Method test : tests) {
        String id = type.getSimpleName() + "." + test.getName();
        String problem = run(type, test);
        if (problem == null) {
          System.out.println("passed " + id);
          passed++;
        } else {
          System.out.println("FAILED " + id + ": " + problem);
          failed++;
        }
      }
    }
    System.out.println(passed + " passed, " + failed + " failed");
    if (report != null) {
      Files.writeString(report, "{\"passed\": " + passed + ", \"failed\": " + failed + ", \"skipped\": 0}\n",
          StandardCharsets.UTF_8);
    }
    System.exit(failed == 0 ? 0 : 1);
  }

  /** Null when {@code test} passed, else what went wrong (the failure and where, in the test's own frames). */
  private static String run(Class<?> type, Method test) {
    if (!Modifier.isPublic(test.getModifiers()) || test.getParameterCount() != 0
        || Modifier.isStatic(test.getModifiers())) {
      return "a @Test method must be public, not static, and take no arguments";
    }
    try {
      Object instance = type.getDeclaredConstructor().newInstance();
      test.invoke(instance);
      return null;
    } catch (InvocationTargetException e) {
      return describe(e.getCause(), type);
    } catch (ReflectiveOperationException e) {
      return "cannot run: " + e;
    }
  }

  private static String describe(Throwable failure, Class<?> type) {
    StringBuilder out = new StringBuilder(String.valueOf(failure));
    List<StackTraceElement> own = new ArrayList<>();
    for (StackTraceElement frame : failure.getStackTrace()) {
      if (frame.getClassName().startsWith(type.getName())) {
        own.add(frame);
      }
    }
    if (!own.isEmpty()) {
      out.append(" at ").append(own.get(0));
    }
    if (!(failure instanceof AssertionError)) {
      StringWriter trace = new StringWriter();
      failure.printStackTrace(new PrintWriter(trace));
      out.append('\n').append(Arrays.stream(trace.toString().split("\n")).limit(15)
          .reduce((a, b) -> a + "\n" + b).orElse(""));
    }
    return out.toString();
  }
}
