package io.planengine.jvm.ops.materialize;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link UpsertMaterializer}, Flink's {@code SinkUpsertMaterializer}: several rows alive for one sink key, and
 * retracting one that is not the latest must not delete the key.
 */
public final class UpsertMaterializerTest {
  /** (k STRING, v INT, _rowkind): the sink is keyed by {@code k}, the changelog by something else. */
  private static final StructType INPUT = new StructType().add("k", DataTypes.StringType)
      .add("v", DataTypes.IntegerType).add("_rowkind", DataTypes.StringType, false);
  private static final Row K = row("k");

  private static Processors materializer() throws ReflectiveOperationException {
    String spec = "{\"upsertKeys\": [0], \"stateTtlMs\": 0, \"stateNames\": [\"materializedRows\"]}";
    return new Processors(Processors.construct(UpsertMaterializer.class, spec, INPUT));
  }

  private static int alive(Processors p) {
    Row held = p.value("materializedRows", K);
    return held == null ? 0 : held.getList(0).size();
  }

  @Test
  public void theFirstRowInsertsAndLaterOnesUpdate() throws ReflectiveOperationException {
    Processors p = materializer();
    Check.equal(rows("[k,1,+I]"), p.feed(K, row("k", 1, "+I")), "the only row alive is an insert");
    Check.equal(rows("[k,2,+U]"), p.feed(K, row("k", 2, "+I")), "a second row alive updates the key");
    Check.equal(2, alive(p), "both rows are kept, oldest first");
  }

  @Test
  public void retractingAnOlderRowEmitsNothing() throws ReflectiveOperationException {
    Processors p = materializer();
    p.feed(K, row("k", 1, "+I"), row("k", 2, "+I"));
    Check.equal(rows(), p.feed(K, row("k", 1, "-U")), "the latest row is still the key's value");
    Check.equal(rows("[k,2,-D]"), p.feed(K, row("k", 2, "-D")), "the last row alive deletes the key");
    Check.isTrue(p.value("materializedRows", K) == null, "and the key's state is cleared");
  }

  @Test
  public void retractingTheLatestRowRestoresThePreviousOne() throws ReflectiveOperationException {
    Processors p = materializer();
    p.feed(K, row("k", 1, "+I"), row("k", 2, "+I"));
    Check.equal(rows("[k,1,+U]"), p.feed(K, row("k", 2, "-D")), "the row before the latest becomes the value");
  }

  @Test
  public void anIdenticalRowIsReplacedInPlace() throws ReflectiveOperationException {
    Processors p = materializer();
    p.feed(K, row("k", 1, "+I"), row("k", 2, "+I"));
    Check.equal(rows("[k,1,+U]"), p.feed(K, row("k", 1, "+U")), "an identical row is emitted");
    Check.equal(2, alive(p), "but not kept twice");
    Check.equal(rows("[k,1,+U]"), p.feed(K, row("k", 2, "-D")),
        "it stayed in its old place, so retracting the later row makes it the value");
  }

  @Test
  public void aRetractionOfAnUnknownRowIsIgnored() throws ReflectiveOperationException {
    Processors p = materializer();
    p.feed(K, row("k", 1, "+I"));
    Check.equal(rows(), p.feed(K, row("k", 9, "-D")), "nothing to retract");
    Check.equal(1, alive(p), "the alive row stays");
  }
}
