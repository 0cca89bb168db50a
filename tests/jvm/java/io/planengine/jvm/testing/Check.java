package io.planengine.jvm.testing;

import java.util.Objects;

/** The assertions of the unit tests: a failure says what was expected, what came and what was being checked. */
public final class Check {
  private Check() {}

  public static void equal(Object expected, Object actual, String what) {
    if (!Objects.deepEquals(expected, actual)) {
      throw new AssertionError(what + ": expected " + expected + " but got " + actual);
    }
  }

  public static void isTrue(boolean condition, String what) {
    if (!condition) {
      throw new AssertionError(what);
    }
  }

  /** Runs {@code body}, which must throw a {@code type} whose message contains {@code words}. */
  public static <T extends Throwable> T raises(Class<T> type, String words, Runnable body) {
    try {
      body.run();
    } catch (Throwable thrown) {
      if (!type.isInstance(thrown)) {
        throw new AssertionError("expected " + type.getSimpleName() + " but " + thrown + " was thrown", thrown);
      }
      if (thrown.getMessage() == null || !thrown.getMessage().contains(words)) {
        throw new AssertionError("expected a message containing '" + words + "' but got: " + thrown.getMessage());
      }
      return type.cast(thrown);
    }
    throw new AssertionError("expected " + type.getSimpleName() + " (" + words + ") but nothing was thrown");
  }
}
