package io.planengine.jvm.core;

/** Flink's row kinds as the hidden {@code _rowkind} column spells them on updating edges. */
public enum RowKind {
  INSERT("+I"),
  UPDATE_BEFORE("-U"),
  UPDATE_AFTER("+U"),
  DELETE("-D");

  private final String text;

  RowKind(String text) {
    this.text = text;
  }

  public String text() {
    return text;
  }

  /** INSERT and UPDATE_AFTER add a row; UPDATE_BEFORE and DELETE retract one. */
  public boolean isAccumulate() {
    return this == INSERT || this == UPDATE_AFTER;
  }

  public static RowKind parse(String text) {
    if (text == null) {
      return INSERT;
    }
    switch (text) {
      case "+I":
        return INSERT;
      case "-U":
        return UPDATE_BEFORE;
      case "+U":
        return UPDATE_AFTER;
      case "-D":
        return DELETE;
      default:
        throw new IllegalArgumentException("not a row kind: '" + text + "' (expected +I, -U, +U or -D)");
    }
  }
}
