package io.planengine.jvm.agg;

/**
 * A multiset of one aggregate's input values, kept in the operator's map state: what DISTINCT counts and what
 * MIN/MAX rescan when their current extreme is retracted.
 */
public interface ValueBag {
  /** Change the count of {@code value} by {@code delta}; the new count (never below 0; 0 removes it). */
  long add(Object value, long delta);

  /** The current count of {@code value} (0 when absent). */
  long count(Object value);

  /** Every value whose count is positive. */
  Iterable<Object> values();
}
