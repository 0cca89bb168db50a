package io.planengine.jvm.ops.normalize;

import static io.planengine.jvm.testing.Processors.row;
import static io.planengine.jvm.testing.Processors.rows;

import io.planengine.jvm.testing.Check;
import io.planengine.jvm.testing.Processors;
import io.planengine.jvm.testing.Test;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * {@link ChangelogNormalize}, Flink's {@code ProcTimeDeduplicateKeepLastRowFunction} over an upsert changelog: a
 * full changelog with before-images comes out, a key-only {@code -D} retracts the stored row, {@code -U} is dropped.
 */
public final class ChangelogNormalizeTest {
  /** (id STRING, qty INT, _rowkind): an upsert source keyed by {@code id}. */
  private static final StructType INPUT = new StructType().add("id", DataTypes.StringType)
      .add("qty", DataTypes.IntegerType).add("_rowkind", DataTypes.StringType, false);
  private static final Row A = row("a");

  private static Processors normalize(boolean updateBefore) throws ReflectiveOperationException {
    String spec = "{\"uniqueKeys\": [0], \"generateUpdateBefore\": " + updateBefore
        + ", \"stateTtlMs\": 0, \"stateNames\": [\"latestRow\"]}";
    return new Processors(Processors.construct(ChangelogNormalize.class, spec, INPUT));
  }

  @Test
  public void upsertsBecomeInsertsAndUpdatesWithBeforeImages() throws ReflectiveOperationException {
    Processors p = normalize(true);
    Check.equal(rows("[a,1,+I]"), p.feed(A, row("a", 1, "+U")), "an unknown key's upsert is an insert");
    Check.equal(rows("[a,1,-U]", "[a,2,+U]"), p.feed(A, row("a", 2, "+I")),
        "a known key's upsert retracts the stored row first");
    Check.equal(row("a", 2), p.value("latestRow", A).getStruct(0), "the latest row is kept");
  }

  @Test
  public void anUpsertEqualToTheStoredRowEmitsNothing() throws ReflectiveOperationException {
    Processors p = normalize(true);
    p.feed(A, row("a", 1, "+I"));
    Check.equal(rows(), p.feed(A, row("a", 1, "+U")), "no change, no message (state TTL off)");
  }

  @Test
  public void aKeyOnlyDeleteRetractsTheStoredFullRow() throws ReflectiveOperationException {
    Processors p = normalize(true);
    p.feed(A, row("a", 7, "+I"));
    Check.equal(rows("[a,7,-D]"), p.feed(A, row("a", null, "-D")), "the stored row, not the key-only one");
    Check.isTrue(p.value("latestRow", A) == null, "and the key is forgotten");
    Check.equal(rows(), p.feed(A, row("a", null, "-D")), "a delete of an unknown key emits nothing");
  }

  @Test
  public void updateBeforesOfTheInputAreDropped() throws ReflectiveOperationException {
    Processors p = normalize(true);
    p.feed(A, row("a", 1, "+I"));
    Check.equal(rows("[a,1,-U]", "[a,2,+U]"), p.feed(A, row("a", 1, "-U"), row("a", 2, "+U")),
        "the -U is ignored and the +U alone makes the pair from state");
  }

  @Test
  public void withoutUpdateBeforeOnlyTheAfterImageIsEmitted() throws ReflectiveOperationException {
    Processors p = normalize(false);
    p.feed(A, row("a", 1, "+I"));
    Check.equal(rows("[a,2,+U]"), p.feed(A, row("a", 2, "+U")), "no -U");
  }

  @Test
  public void aDeleteThenAnInsertInOneBatchInsertsAgain() throws ReflectiveOperationException {
    Processors p = normalize(true);
    p.feed(A, row("a", 1, "+I"));
    Check.equal(rows("[a,1,-D]", "[a,3,+I]"), p.feed(A, row("a", null, "-D"), row("a", 3, "+I")),
        "a key deleted inside the batch is new again");
    Check.equal(row("a", 3), p.value("latestRow", A).getStruct(0), "the re-inserted row is kept");
  }
}
