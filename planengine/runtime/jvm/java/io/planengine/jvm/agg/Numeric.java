package io.planengine.jvm.agg;

import java.math.BigDecimal;
import java.math.RoundingMode;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/**
 * Flink's arithmetic on the external values of one numeric type: integers wrap at their width like Java's,
 * FLOAT adds in float precision, DECIMAL(p, s) keeps scale s and overflows to NULL (Flink's
 * {@code DecimalData} returns null when a result needs more than p digits).
 */
public final class Numeric {
  public enum Kind {
    TINYINT,
    SMALLINT,
    INT,
    BIGINT,
    FLOAT,
    DOUBLE,
    DECIMAL
  }

  private Numeric() {}

  public static Kind kind(DataType t) {
    if (t instanceof ByteType) {
      return Kind.TINYINT;
    }
    if (t instanceof ShortType) {
      return Kind.SMALLINT;
    }
    if (t instanceof IntegerType) {
      return Kind.INT;
    }
    if (t instanceof LongType) {
      return Kind.BIGINT;
    }
    if (t instanceof FloatType) {
      return Kind.FLOAT;
    }
    if (t instanceof DoubleType) {
      return Kind.DOUBLE;
    }
    if (t instanceof DecimalType) {
      return Kind.DECIMAL;
    }
    return null;
  }

  public static boolean isIntegral(Kind k) {
    return k == Kind.TINYINT || k == Kind.SMALLINT || k == Kind.INT || k == Kind.BIGINT;
  }

  /** {@code v} (any external numeric value) in type {@code t}: integers wrap, decimals round HALF_UP. */
  public static Object cast(Object v, DataType t) {
    if (v == null) {
      return null;
    }
    Kind k = kind(t);
    Number n = (Number) v;
    switch (k) {
      case TINYINT:
        return (byte) integral(n);
      case SMALLINT:
        return (short) integral(n);
      case INT:
        return (int) integral(n);
      case BIGINT:
        return integral(n);
      case FLOAT:
        return n.floatValue();
      case DOUBLE:
        return n.doubleValue();
      case DECIMAL:
        return decimal(toBigDecimal(n), (DecimalType) t);
      default:
        throw new IllegalArgumentException("not a numeric type: " + t);
    }
  }

  private static long integral(Number n) {
    if (n instanceof BigDecimal) {
      return ((BigDecimal) n).longValue(); // truncates toward zero, like Flink's CAST
    }
    if (n instanceof Double || n instanceof Float) {
      return (long) n.doubleValue();
    }
    return n.longValue();
  }

  public static BigDecimal toBigDecimal(Number n) {
    if (n instanceof BigDecimal) {
      return (BigDecimal) n;
    }
    if (n instanceof Double || n instanceof Float) {
      return new BigDecimal(n.toString());
    }
    return BigDecimal.valueOf(n.longValue());
  }

  /** {@code v} with the type's scale (HALF_UP), or null when it needs more digits than the precision. */
  public static BigDecimal decimal(BigDecimal v, DecimalType t) {
    if (v == null) {
      return null;
    }
    BigDecimal scaled = v.setScale(t.scale(), RoundingMode.HALF_UP);
    return scaled.precision() - scaled.scale() > t.precision() - t.scale() ? null : scaled;
  }

  /** a + b in type t (both already of t's external type). */
  public static Object add(Object a, Object b, DataType t) {
    switch (kind(t)) {
      case TINYINT:
        return (byte) (((Number) a).byteValue() + ((Number) b).byteValue());
      case SMALLINT:
        return (short) (((Number) a).shortValue() + ((Number) b).shortValue());
      case INT:
        return ((Number) a).intValue() + ((Number) b).intValue();
      case BIGINT:
        return ((Number) a).longValue() + ((Number) b).longValue();
      case FLOAT:
        return ((Number) a).floatValue() + ((Number) b).floatValue();
      case DOUBLE:
        return ((Number) a).doubleValue() + ((Number) b).doubleValue();
      case DECIMAL:
        return decimal(((BigDecimal) a).add((BigDecimal) b), (DecimalType) t);
      default:
        throw new IllegalArgumentException("not a numeric type: " + t);
    }
  }

  /** a - b in type t. */
  public static Object subtract(Object a, Object b, DataType t) {
    switch (kind(t)) {
      case TINYINT:
        return (byte) (((Number) a).byteValue() - ((Number) b).byteValue());
      case SMALLINT:
        return (short) (((Number) a).shortValue() - ((Number) b).shortValue());
      case INT:
        return ((Number) a).intValue() - ((Number) b).intValue();
      case BIGINT:
        return ((Number) a).longValue() - ((Number) b).longValue();
      case FLOAT:
        return ((Number) a).floatValue() - ((Number) b).floatValue();
      case DOUBLE:
        return ((Number) a).doubleValue() - ((Number) b).doubleValue();
      case DECIMAL:
        return decimal(((BigDecimal) a).subtract((BigDecimal) b), (DecimalType) t);
      default:
        throw new IllegalArgumentException("not a numeric type: " + t);
    }
  }

  /** a * b in type t (integers wrap). */
  public static Object multiply(Object a, Object b, DataType t) {
    switch (kind(t)) {
      case TINYINT:
        return (byte) (((Number) a).byteValue() * ((Number) b).byteValue());
      case SMALLINT:
        return (short) (((Number) a).shortValue() * ((Number) b).shortValue());
      case INT:
        return ((Number) a).intValue() * ((Number) b).intValue();
      case BIGINT:
        return ((Number) a).longValue() * ((Number) b).longValue();
      case FLOAT:
        return ((Number) a).floatValue() * ((Number) b).floatValue();
      case DOUBLE:
        return ((Number) a).doubleValue() * ((Number) b).doubleValue();
      case DECIMAL:
        return decimal(((BigDecimal) a).multiply((BigDecimal) b), (DecimalType) t);
      default:
        throw new IllegalArgumentException("not a numeric type: " + t);
    }
  }

  public static Object zero(DataType t) {
    return cast(0L, t);
  }
}
