package io.planengine.grammar;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

import org.apache.calcite.config.Lex;
import org.apache.calcite.sql.SqlNode;
import org.apache.calcite.sql.parser.SqlParseException;
import org.apache.calcite.sql.parser.SqlParser;
import org.apache.flink.sql.parser.impl.FlinkSqlParserImpl;
import org.apache.flink.sql.parser.validate.FlinkSqlConformance;

/**
 * Answers, for each statement, whether Apache Flink's own SQL parser accepts it: the reference side of the
 * grammar drift guard (tests/grammar, docs/testing.md "The grammar drift guard").
 *
 * <p>Input (stdin): one statement per line, each a JSON string literal (so a statement may hold newlines).
 * Output (stdout): one JSON object per input line, in order: {@code {"accepted":true,"node":"SqlCreateTable"}}
 * or {@code {"accepted":false,"error":"Encountered ..."}}. One JVM parses the whole corpus.
 *
 * <p>The parser is configured as Flink 2.3's table planner configures it (PlannerContext#getSqlParserConfig:
 * FlinkSqlParserImpl, FlinkSqlConformance.DEFAULT, Lex.JAVA = back-tick quoting, case unchanged and
 * case-sensitive, identifiers up to 256 characters) and a statement is read as ParserImpl#parse reads it: first
 * the planner's regular-expression commands (ExtendedParser: CLEAR, HELP, QUIT/EXIT, RESET, SET with an
 * unquoted key), then one statement through SqlParser#parseStmt.
 *
 * <p>A class missing from the class path is not a rejected statement: Calcite wraps whatever the generated
 * parser throws into a SqlParseException, so a LinkageError in the cause chain ends the run with status 3
 * (the jar set is incomplete) instead of being reported as Flink refusing the statement.
 */
public final class FlinkGrammar {

    private static final SqlParser.Config CONFIG = SqlParser.config()
            .withParserFactory(FlinkSqlParserImpl.FACTORY)
            .withConformance(FlinkSqlConformance.DEFAULT)
            .withLex(Lex.JAVA)
            .withIdentifierMaxLength(256);

    private static final int FLAGS = Pattern.CASE_INSENSITIVE | Pattern.DOTALL;

    /** The planner's commands that never reach Calcite (table-planner parse/*OperationParseStrategy). */
    private static final List<Pattern> COMMANDS = List.of(
            Pattern.compile("CLEAR\\s*;?", FLAGS),
            Pattern.compile("HELP\\s*;?", FLAGS),
            Pattern.compile("(QUIT|EXIT)\\s*;?", FLAGS),
            Pattern.compile("RESET(\\s+[^'\\s]+\\s*)?(\\s*;)?", FLAGS),
            Pattern.compile("SET(\\s+[^'\\s]+\\s*=\\s*('[^']*'|[^;\\s]+))?;?", FLAGS));

    private FlinkGrammar() {}

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        int number = 0;
        while ((line = in.readLine()) != null) {
            number++;
            if (line.isBlank()) {
                continue;
            }
            String statement;
            try {
                statement = Json.readString(line);
            } catch (IllegalArgumentException e) {
                System.err.println("FlinkGrammar: input line " + number + " is not a JSON string: " + e.getMessage());
                System.exit(2);
                return;
            }
            out.write(verdict(statement));
            out.newLine();
        }
        out.flush();
    }

    static String verdict(String statement) {
        String trimmed = statement.trim();
        for (Pattern command : COMMANDS) {
            if (command.matcher(trimmed).matches()) {
                return "{\"accepted\":true,\"node\":\"command\"}";
            }
        }
        try {
            SqlNode node = SqlParser.create(statement, CONFIG).parseStmt();
            return "{\"accepted\":true,\"node\":" + Json.quote(node.getClass().getSimpleName()) + "}";
        } catch (SqlParseException e) {
            for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                if (cause instanceof LinkageError) {
                    System.err.println("FlinkGrammar: the parser's class path is incomplete");
                    cause.printStackTrace();
                    System.exit(3);
                }
            }
            return "{\"accepted\":false,\"error\":" + Json.quote(firstLine(e.getMessage())) + "}";
        } catch (RuntimeException e) { // e.g. a CalciteException the grammar raises while building a node
            return "{\"accepted\":false,\"error\":" + Json.quote(e.getClass().getSimpleName() + ": "
                    + firstLine(String.valueOf(e.getMessage()))) + "}";
        }
    }

    private static String firstLine(String message) {
        int end = message.indexOf('\n');
        return (end < 0 ? message : message.substring(0, end)).strip();
    }

    /** Just enough JSON for one string literal per line, in and out. */
    static final class Json {
        private Json() {}

        static String readString(String text) {
            String s = text.strip();
            if (s.length() < 2 || s.charAt(0) != '"' || s.charAt(s.length() - 1) != '"') {
                throw new IllegalArgumentException("expected \"...\"");
            }
            StringBuilder b = new StringBuilder(s.length());
            for (int i = 1; i < s.length() - 1; i++) {
                char c = s.charAt(i);
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(++i);
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                    default -> throw new IllegalArgumentException("bad escape \\" + e);
                }
            }
            return b.toString();
        }

        static String quote(String value) {
            StringBuilder b = new StringBuilder(value.length() + 2).append('"');
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    case '\t' -> b.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                    }
                }
            }
            return b.append('"').toString();
        }
    }
}
