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

  /**
   * The kind a {@code _rowkind} value spells (null: INSERT). Called once per input row, so it reads the two
   * characters instead of switching on the string (which hashes each freshly decoded string first).
   */
  public static RowKind parse(String text) {
    if (text == null) {
      return INSERT;
    }
    if (text.length() == 2) {
      char sign = text.charAt(0);
      char letter = text.charAt(1);
      if (sign == '+') {
        if (letter == 'I') {
          return INSERT;
        }
        if (letter == 'U') {
          return UPDATE_AFTER;
        }
      } else if (sign == '-') {
        if (letter == 'U') {
          return UPDATE_BEFORE;
        }
        if (letter == 'D') {
          return DELETE;
        }
      }
    }
    throw new IllegalArgumentException("not a row kind: '" + text + "' (expected +I, -U, +U or -D)");
  }
}
