package io.planengine.jvm.ops.join;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@link Join}, Flink's {@code StreamingJoinOperator} and {@code StreamingSemiAntiJoinOperator}: both sides of one
 * join key in one processor, each side's rows with their multiplicity and {@code numOfAssociations}.
 */
public final class JoinTest {
  /** The engine's union of both sides: the key, the side, the row kind, then (l0, l1) and (r0, r1). */
  private static final StructType INPUT = new StructType().add("_k0", DataTypes.StringType)
      .add("_side", DataTypes.IntegerType).add("_rowkind", DataTypes.StringType, false)
      .add("l0", DataTypes.StringType).add("l1", DataTypes.IntegerType)
      .add("r0", DataTypes.StringType).add("r1", DataTypes.IntegerType);
  private static final Row A = row("a");

  private static String spec(String type) {
    return "{\"joinType\": \"" + type + "\", \"leftWidth\": 2, \"rightWidth\": 2, \"leftKeys\": [0],"
        + " \"rightKeys\": [0], \"filterNulls\": [1], \"insertOnly\": false, \"stateTtlMs\": 0,"
        + " \"stateNames\": [\"leftRows\", \"rightRows\"]}";
  }

  private static Processors join(String type, PairCondition condition) throws ReflectiveOperationException {
    return new Processors(Processors.construct(Join.class, spec(type), INPUT, true, condition));
  }

  /** Spark hands the processor rows with their schema; the join finds each side's fields by name. */
  private static Row left(String kind, String key, Integer v) {
    return new GenericRowWithSchema(new Object[] {key, 0, kind, key, v, null, null}, INPUT);
  }

  private static Row right(String kind, String key, Integer v) {
    return new GenericRowWithSchema(new Object[] {key, 1, kind, null, null, key, v}, INPUT);
  }

  /** The (count, associations) of each row a side keeps for key {@code a}, as text. */
  private static String held(Processors p, String variable) {
    StringBuilder out = new StringBuilder();
    for (Map.Entry<Row, Row> e : p.map(variable, A).entrySet()) {
      out.append(e.getKey().getStruct(0)).append("x").append(e.getValue().getLong(0)).append(" assoc ")
          .append(e.getValue().getLong(1)).append(';');
    }
    return out.toString();
  }

  @Test
  public void innerJoinEmitsEveryMatchOnceForEachCopy() throws ReflectiveOperationException {
    Processors p = join("INNER", null);
    Check.equal(rows(), p.feed(A, left("+I", "a", 1)), "no right row yet");
    Check.equal(rows("[a,1,a,10,+I]"), p.feed(A, right("+I", "a", 10)), "the right row joins the kept left row");
    Check.equal(rows("[a,2,a,10,+I]", "[a,2,a,10,+I]"), p.feed(A, left("+I", "a", 2), left("+I", "a", 2)),
        "each copy of a left row joins");
    Check.equal("[a,1]x1 assoc 0;[a,2]x2 assoc 0;", held(p, "leftRows"), "the left rows with their counts");
  }

  @Test
  public void innerJoinKeepsTheInputRowKind() throws ReflectiveOperationException {
    Processors p = join("INNER", null);
    p.feed(A, left("+I", "a", 1));
    Check.equal(rows("[a,1,a,10,+U]"), p.feed(A, right("+U", "a", 10)), "an update-after stays one");
    Check.equal(rows("[a,1,a,10,-U]"), p.feed(A, right("-U", "a", 10)), "an update-before stays one");
    Check.equal("", held(p, "rightRows"), "the retracted row is gone");
  }

  @Test
  public void leftJoinPadsAnUnmatchedRowAndRetractsThePaddingOnTheFirstMatch()
      throws ReflectiveOperationException {
    Processors p = join("LEFT", null);
    Check.equal(rows("[a,1,null,null,+I]"), p.feed(A, left("+I", "a", 1)), "no match: padded with NULLs");
    Check.equal(rows("[a,1,null,null,-D]", "[a,1,a,10,+I]"), p.feed(A, right("+I", "a", 10)),
        "the first match retracts the padded row");
    Check.equal(rows("[a,1,a,11,+I]"), p.feed(A, right("+I", "a", 11)), "a second match adds a row only");
    Check.equal("[a,1]x1 assoc 2;", held(p, "leftRows"), "the left row has two associations");
    Check.equal(rows("[a,1,a,10,-D]"), p.feed(A, right("-D", "a", 10)), "one match left: no padding yet");
    Check.equal(rows("[a,1,a,11,-D]", "[a,1,null,null,+I]"), p.feed(A, right("-D", "a", 11)),
        "the last match gone: the padded row comes back");
    Check.equal(rows("[a,1,null,null,-D]"), p.feed(A, left("-D", "a", 1)), "retracting the left row");
  }

  @Test
  public void aNullKeyNeverMatchesButAnOuterSideStillEmitsIt() throws ReflectiveOperationException {
    Processors p = join("LEFT", null);
    Check.equal(rows("[null,1,null,null,+I]"), p.feed(row((Object) null), left("+I", null, 1)),
        "padded, not kept");
    Check.equal(rows(), p.feed(row((Object) null), right("+I", null, 10)), "the NULL-keyed right row joins nothing");
    Processors inner = join("INNER", null);
    inner.feed(row((Object) null), left("+I", null, 1));
    Check.equal(rows(), inner.feed(row((Object) null), right("+I", null, 10)), "not in an inner join either");
  }

  @Test
  public void semiJoinEmitsALeftRowWhileItHasAMatch() throws ReflectiveOperationException {
    Processors p = join("SEMI", null);
    Check.equal(rows(), p.feed(A, left("+I", "a", 1)), "no match yet");
    Check.equal(rows("[a,1,+I]"), p.feed(A, right("+I", "a", 10)), "the first match emits the left row");
    Check.equal(rows(), p.feed(A, right("+I", "a", 11)), "a second match emits nothing");
    Check.equal(rows(), p.feed(A, right("-D", "a", 10)), "one match is left");
    Check.equal(rows("[a,1,-D]"), p.feed(A, right("-D", "a", 11)), "the last match gone: retracted");
    Check.equal(rows("[a,1,+I]", "[a,2,+I]"), p.feed(A, right("+I", "a", 12), left("+I", "a", 2)),
        "a new match emits the kept left row again, and a left row with a match is emitted at once");
  }

  @Test
  public void antiJoinEmitsALeftRowWhileItHasNoMatch() throws ReflectiveOperationException {
    Processors p = join("ANTI", null);
    Check.equal(rows("[a,1,+I]"), p.feed(A, left("+I", "a", 1)), "no match: emitted");
    Check.equal(rows("[a,1,-D]"), p.feed(A, right("+I", "a", 10)), "a match retracts it");
    Check.equal(rows("[a,1,+I]"), p.feed(A, right("-D", "a", 10)), "the match gone: emitted again");
    Check.equal(rows("[null,1,+I]"), p.feed(row((Object) null), left("+I", null, 1)),
        "a NULL key never matches, so anti emits it");
  }

  /**
   * {@code l1 < r1}, built as {@link PairCondition#resolve} would resolve {@code "l1 < r1"} (the analyzer needs a
   * SparkSession; the Catalyst expression does not).
   */
  private static PairCondition lessThan() throws ReflectiveOperationException {
    StructType left = new StructType().add("l0", DataTypes.StringType).add("l1", DataTypes.IntegerType);
    StructType right = new StructType().add("r0", DataTypes.StringType).add("r1", DataTypes.IntegerType);
    List<Attribute> attributes = new java.util.ArrayList<>();
    for (StructField f : left.add(right.fields()[0]).add(right.fields()[1]).fields()) {
      attributes.add(new AttributeReference(f.name(), f.dataType(), true, Metadata.empty(),
          NamedExpression$.MODULE$.newExprId(), CollectionConverters.asScala(Arrays.<String>asList()).toList()));
    }
    LessThan condition = new LessThan(attributes.get(1), attributes.get(3));
    return Processors.construct(PairCondition.class, condition,
        CollectionConverters.asScala(attributes).toList(), left, right);
  }

  @Test
  public void aNonEquiConditionDecidesWhichPairsMatch() throws ReflectiveOperationException {
    Processors p = join("LEFT", lessThan());
    Check.equal(rows("[a,5,null,null,+I]"), p.feed(A, left("+I", "a", 5)), "padded");
    Check.equal(rows(), p.feed(A, right("+I", "a", 3)), "5 < 3 is false: no match, the padding stays");
    Check.equal(rows("[a,5,null,null,-D]", "[a,5,a,8,+I]"), p.feed(A, right("+I", "a", 8)),
        "5 < 8 matches and retracts the padding");
    Check.equal("[a,5]x1 assoc 1;", held(p, "leftRows"), "only the matching pair is an association");
    Check.equal(rows("[a,5,a,8,-D]", "[a,5,null,null,+I]"), p.feed(A, right("-D", "a", 8)),
        "its only match gone, the padded row comes back");
    Check.equal(rows("[a,5,null,null,-D]"), p.feed(A, right("+I", "a", null), left("-D", "a", 5)),
        "a NULL condition is false: the NULL right row does not match");
  }
}
