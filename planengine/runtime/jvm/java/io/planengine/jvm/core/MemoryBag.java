package io.planengine.jvm.core;

import io.planengine.jvm.agg.ValueBag;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A value multiset held in memory for one call, for operators that rebuild accumulators from rows they keep
 * anyway (a bounded OVER frame, a session at its end): DISTINCT and MIN/MAX under retraction need no map state.
 */
public final class MemoryBag implements ValueBag {
  private static final class Count {
    final Object value;
    long n;

    Count(Object value) {
      this.value = value;
    }
  }

  private final Map<Object, Count> counts = new HashMap<>();

  @Override
  public long add(Object value, long delta) {
    Count c = counts.computeIfAbsent(Values.hashable(value), k -> new Count(value));
    c.n = Math.max(c.n + delta, 0L);
    if (c.n == 0) {
      counts.remove(Values.hashable(value));
    }
    return c.n;
  }

  @Override
  public long count(Object value) {
    Count c = counts.get(Values.hashable(value));
    return c == null ? 0L : c.n;
  }

  @Override
  public Iterable<Object> values() {
    List<Object> out = new ArrayList<>(counts.size());
    for (Count c : counts.values()) {
      out.add(c.value);
    }
    return out;
  }
}
