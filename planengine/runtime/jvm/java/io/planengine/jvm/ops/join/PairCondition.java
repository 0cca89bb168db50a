package io.planengine.jvm.ops.join;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.catalyst.expressions.Unevaluable;
import org.apache.spark.sql.catalyst.optimizer.ReplaceExpressions$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.StructType;
import scala.Function1;

/**
 * A join's non-equi condition, evaluated per pair of rows (left fields then right fields), as Flink's
 * {@code JoinCondition}: NULL counts as false.
 *
 * <p>Why resolved here, on the driver: the engine hands the condition over as Spark SQL text over the columns
 * {@code l0..} and {@code r0..} (rendered from the plan's expression by the same code as every other expression),
 * and only the driver has the session's analyzer (functions, time zone). The resolved Catalyst expression and its
 * input attributes are serializable and travel to the executors inside the processor; each processor instance
 * builds its (code-generated, else interpreted) {@link BasePredicate} in {@link #open}.
 *
 * <p>Rows reach the processor as external {@link Row} values; each side's row is converted to an
 * {@link InternalRow} once ({@link #internal}) and a pair is evaluated on a {@link JoinedRow} of the two, so
 * a row is not converted again for every row of the other side it is compared with.
 */
final class PairCondition implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Expression expression;
  private final scala.collection.immutable.Seq<Attribute> attributes;
  private final StructType[] sides;
  private transient BasePredicate predicate;
  /** Per side, per field: external value → Catalyst value (lists: Java has no arrays of a generic type). */
  private transient List<List<Function1<Object, Object>>> converters;
  private transient JoinedRow pair;

  private PairCondition(Expression expression, scala.collection.immutable.Seq<Attribute> attributes,
      StructType left, StructType right) {
    this.expression = expression;
    this.attributes = attributes;
    this.sides = new StructType[] {left, right};
  }

  /**
   * Resolves {@code sql} over the fields {@code left} then {@code right} with {@code spark}'s analyzer, runtime
   * replacements applied (the optimizer's {@code ReplaceExpressions}, which a predicate outside a query needs).
   * Refuses a condition that is not BOOLEAN or that the JVM cannot evaluate (a Python function), saying which.
   */
  static PairCondition resolve(SparkSession spark, String sql, StructType left, StructType right) {
    StructType both = new StructType(concat(left, right));
    Dataset<Row> empty = spark.createDataFrame(Collections.<Row>emptyList(), both);
    LogicalPlan plan = empty.select(functions.expr(sql)).queryExecution().analyzed();
    plan = ReplaceExpressions$.MODULE$.apply(plan);
    if (!(plan instanceof Project)) {
      throw new IllegalArgumentException("join condition " + sql + " resolved to " + plan.nodeName()
          + ", not a projection");
    }
    Project project = (Project) plan;
    Expression e = (Expression) project.projectList().head();
    if (e instanceof Alias) {
      e = ((Alias) e).child();
    }
    if (!e.dataType().sameType(BooleanType$.MODULE$)) {
      throw new IllegalArgumentException("join condition " + sql + " is " + e.dataType().simpleString()
          + ", not BOOLEAN");
    }
    scala.Option<Expression> bad = e.find(x -> x instanceof Unevaluable && !(x instanceof Attribute)
        || x.getClass().getSimpleName().contains("PythonUDF"));
    if (bad.isDefined()) {
      throw new IllegalArgumentException("join condition " + sql + " has " + bad.get().prettyName()
          + ", which the JVM cannot evaluate");
    }
    return new PairCondition(e, project.child().output(), left, right);
  }

  private static org.apache.spark.sql.types.StructField[] concat(StructType a, StructType b) {
    org.apache.spark.sql.types.StructField[] out =
        new org.apache.spark.sql.types.StructField[a.length() + b.length()];
    System.arraycopy(a.fields(), 0, out, 0, a.length());
    System.arraycopy(b.fields(), 0, out, a.length(), b.length());
    return out;
  }

  /** Builds the predicate and the converters; once per processor instance (executor side). */
  void open() {
    predicate = Predicate$.MODULE$.create(expression, attributes);
    TaskContext task = TaskContext.get();
    predicate.initialize(task == null ? 0 : task.partitionId());
    converters = new ArrayList<>(sides.length);
    for (StructType side : sides) {
      List<Function1<Object, Object>> fields = new ArrayList<>(side.length());
      for (int i = 0; i < side.length(); i++) {
        fields.add(CatalystTypeConverters$.MODULE$.createToCatalystConverter(side.fields()[i].dataType()));
      }
      converters.add(fields);
    }
    pair = new JoinedRow();
  }

  /** Side {@code side}'s row (external values, the side's fields in order) as an {@link InternalRow}. */
  InternalRow internal(Object[] fields, int side) {
    List<Function1<Object, Object>> convert = converters.get(side);
    Object[] values = new Object[fields.length];
    for (int i = 0; i < fields.length; i++) {
      values[i] = fields[i] == null ? null : convert.get(i).apply(fields[i]);
    }
    return new GenericInternalRow(values);
  }

  /** Whether the pair satisfies the condition (NULL: no). */
  boolean test(InternalRow left, InternalRow right) {
    return predicate.eval(pair.apply(left, right));
  }
}
