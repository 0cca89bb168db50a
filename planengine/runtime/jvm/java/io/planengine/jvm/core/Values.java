package io.planengine.jvm.core;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Comparator;
import org.apache.spark.sql.Row;

/**
 * Ordering and equality of the external values Spark's row encoder hands operators, with Flink's rules:
 * strings order by code point (Flink compares UTF-8 bytes, which is code point order; Java's
 * {@code String.compareTo} compares UTF-16 units and differs above U+FFFF), binary strings unsigned
 * lexicographically, decimals by value, doubles with {@code Double.compare}.
 */
public final class Values {
  private Values() {}

  public static final Comparator<Object> ORDER = Values::compare;

  // Raw and unchecked: the last case compares two values of one column (Long, Integer, LocalDate, …), whose
  // Comparable type argument is erased and cannot be named here; a pair of different types throws
  // ClassCastException, as a sort over them would.
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static int compare(Object a, Object b) {
    if (a instanceof String && b instanceof String) {
      return compareCodePoints((String) a, (String) b);
    }
    if (a instanceof byte[] && b instanceof byte[]) {
      return Arrays.compareUnsigned((byte[]) a, (byte[]) b);
    }
    if (a instanceof BigDecimal && b instanceof BigDecimal) {
      return ((BigDecimal) a).compareTo((BigDecimal) b);
    }
    if (a instanceof Comparable) {
      return ((Comparable) a).compareTo(b);
    }
    throw new IllegalArgumentException("values of type " + a.getClass().getName() + " have no order");
  }

  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /** Equality of result values (the "did the result change" test): arrays by content, decimals by value. */
  public static boolean equal(Object a, Object b) {
    if (a == b) {
      return true;
    }
    if (a == null || b == null) {
      return false;
    }
    if (a instanceof byte[] && b instanceof byte[]) {
      return Arrays.equals((byte[]) a, (byte[]) b);
    }
    if (a instanceof BigDecimal && b instanceof BigDecimal) {
      return ((BigDecimal) a).compareTo((BigDecimal) b) == 0;
    }
    return a.equals(b);
  }

  public static boolean equalRows(Object[] a, Object[] b) {
    if (a.length != b.length) {
      return false;
    }
    for (int i = 0; i < a.length; i++) {
      if (!equal(a[i], b[i])) {
        return false;
      }
    }
    return true;
  }

  /** A value usable as a hash key (binary content, nested rows field by field). */
  public static Object hashable(Object v) {
    if (v instanceof byte[]) {
      return ByteBuffer.wrap((byte[]) v);
    }
    if (v instanceof BigDecimal) {
      return ((BigDecimal) v).stripTrailingZeros();
    }
    if (v instanceof Row) {
      Row r = (Row) v;
      Object[] out = new Object[r.length()];
      for (int i = 0; i < out.length; i++) {
        out[i] = hashable(r.get(i));
      }
      return Arrays.asList(out);
    }
    return v;
  }
}
