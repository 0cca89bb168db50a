package io.planengine.jvm.core;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The state variables a processor opens, learnt from the processor itself: {@link #recording} wraps the
 * handle {@code open} receives and notes every {@code get*State} call (name, kind, the encoders' schemas).
 *
 * <p>Why: a migration starts a processor from another operator's state ({@code transformWithState} with
 * initial state). Every family's initial state then has one shape, derived from what it opens rather than
 * written out per family: {@code state STRUCT<one field per variable>}, a value variable as its value row, a
 * map variable as {@code ARRAY<STRUCT<key, value>>}; {@link #load} writes such a row into the variables, so
 * no family carries its own migration code. A {@code written BIGINT} field of a value (the TTL clock, see
 * {@link KeyedChangelogProcessor}) is stamped with the time of the move, as a write would.
 */
public final class StateVariables {
  /** The name of the initial state's column that holds the variables. */
  public static final String STATE = "state";
  private static final String WRITTEN = "written";

  enum Kind { VALUE, LIST, MAP }

  private static final class Variable {
    final String name;
    final Kind kind;
    final List<Encoder<?>> encoders;
    final Object state;

    Variable(String name, Kind kind, List<Encoder<?>> encoders, Object state) {
      this.name = name;
      this.kind = kind;
      this.encoders = encoders;
      this.state = state;
    }
  }

  private final List<Variable> variables = new ArrayList<>();

  /**
   * A handle that records the state variables opened through it, then hands the call to {@code delegate}
   * (null: nothing is opened, the state objects are null; for learning the layout on the driver).
   */
  public StatefulProcessorHandle recording(StatefulProcessorHandle delegate) {
    return (StatefulProcessorHandle) Proxy.newProxyInstance(StatefulProcessorHandle.class.getClassLoader(),
        new Class<?>[] {StatefulProcessorHandle.class}, (proxy, method, args) -> {
          Object result = delegate == null ? null : invoke(delegate, method, args);
          Kind kind = kindOf(method);
          if (kind != null && args != null && args.length > 0 && args[0] instanceof String) {
            List<Encoder<?>> encoders = new ArrayList<>();
            for (Object a : args) {
              if (a instanceof Encoder) {
                encoders.add((Encoder<?>) a);
              }
            }
            variables.add(new Variable((String) args[0], kind, encoders, result));
          }
          if (delegate == null && method.getDeclaringClass() == Object.class) {
            return method.getName().equals("equals") ? proxy == args[0]
                : method.getName().equals("hashCode") ? System.identityHashCode(proxy) : "recording handle";
          }
          return result;
        });
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static Kind kindOf(Method method) {
    switch (method.getName()) {
      case "getValueState":
        return Kind.VALUE;
      case "getListState":
        return Kind.LIST;
      case "getMapState":
        return Kind.MAP;
      default:
        return null;
    }
  }

  private static StructType rowSchema(Encoder<?> encoder, String owner, String variable) {
    if (!Row.class.isAssignableFrom(encoder.clsTag().runtimeClass())) {
      throw new UnsupportedOperationException(owner + " cannot start from another operator's state: its "
          + "state variable " + variable + " is not kept as rows");
    }
    return encoder.schema();
  }

  /** {@code STRUCT<variable: value | ARRAY<STRUCT<key, value>>, ...>}: the initial state's {@code state}. */
  public StructType initialStateType(String owner) {
    StructType out = new StructType();
    for (Variable v : variables) {
      if (v.kind == Kind.LIST || v.encoders.isEmpty()) {
        throw new UnsupportedOperationException(owner + " cannot start from another operator's state: its "
            + "state variable " + v.name + " is a " + v.kind + " state");
      }
      if (v.kind == Kind.VALUE) {
        out = out.add(v.name, rowSchema(v.encoders.get(0), owner, v.name), true);
      } else {
        StructType entry = new StructType().add("key", rowSchema(v.encoders.get(0), owner, v.name), false)
            .add("value", rowSchema(v.encoders.get(1), owner, v.name), false);
        out = out.add(v.name, DataTypes.createArrayType(entry, false), true);
      }
    }
    return out;
  }

  /** Write one key's initial {@code state} row (see {@link #initialStateType}) into the opened variables. */
  // Unchecked: a Variable keeps its handle's state object untyped (variables of several kinds and element types
  // share one list); its kind and encoders, recorded when it was opened, say the type the casts below restore,
  // and the encoders are row encoders, so the element type is always Row.
  @SuppressWarnings("unchecked")
  public void load(Row state, long now) {
    for (Variable v : variables) {
      int i = state.fieldIndex(v.name);
      if (state.isNullAt(i)) {
        continue;
      }
      if (v.kind == Kind.VALUE) {
        ((ValueState<Row>) v.state).update(stamped(state.getStruct(i), v.encoders.get(0), now));
      } else if (v.kind == Kind.MAP) {
        MapState<Row, Row> map = (MapState<Row, Row>) v.state;
        for (Object o : state.getList(i)) {
          Row entry = (Row) o;
          map.updateValue(entry.getStruct(0), stamped(entry.getStruct(1), v.encoders.get(1), now));
        }
      }
    }
  }

  private static Row stamped(Row value, Encoder<?> encoder, long now) {
    int written = java.util.Arrays.asList(encoder.schema().fieldNames()).indexOf(WRITTEN);
    if (written < 0) {
      return value;
    }
    Object[] fields = new Object[value.length()];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = value.get(i);
    }
    fields[written] = now;
    return RowFactory.create(fields);
  }
}
