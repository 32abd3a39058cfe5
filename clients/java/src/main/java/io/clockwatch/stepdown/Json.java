package io.clockwatch.stepdown;

import java.util.HashMap;
import java.util.Map;

/** The protocol's objects are flat (no nesting): this reads and writes them without a JSON library. */
final class Json {
    private Json() {}

    /** Parses a flat JSON object into its fields as text (strings unquoted, numbers and booleans as written). */
    static Map<String, String> parseFlat(String s) {
        Map<String, String> out = new HashMap<>();
        int i = skip(s, 0);
        if (i >= s.length() || s.charAt(i) != '{') {
            throw new IllegalArgumentException("not a JSON object: " + s);
        }
        i = skip(s, i + 1);
        if (i < s.length() && s.charAt(i) == '}') {
            return out;
        }
        while (true) {
            StringBuilder key = new StringBuilder();
            i = string(s, skip(s, i), key);
            i = skip(s, i);
            expect(s, i++, ':');
            i = skip(s, i);
            StringBuilder val = new StringBuilder();
            if (i < s.length() && s.charAt(i) == '"') {
                i = string(s, i, val);
            } else {
                int start = i;
                while (i < s.length() && ",} \t".indexOf(s.charAt(i)) < 0) {
                    i++;
                }
                val.append(s, start, i);
                if (val.length() == 0 || val.charAt(0) == '{' || val.charAt(0) == '[') {
                    throw new IllegalArgumentException("not a flat JSON value at " + start + ": " + s);
                }
            }
            out.put(key.toString(), val.toString());
            i = skip(s, i);
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
                continue;
            }
            expect(s, i, '}');
            return out;
        }
    }

    private static int skip(String s, int i) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
        return i;
    }

    private static void expect(String s, int i, char c) {
        if (i >= s.length() || s.charAt(i) != c) {
            throw new IllegalArgumentException("expected '" + c + "' at " + i + ": " + s);
        }
    }

    private static int string(String s, int i, StringBuilder out) {
        expect(s, i, '"');
        for (i++; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') {
                return i + 1;
            }
            if (c == '\\' && i + 1 < s.length()) {
                char e = s.charAt(++i);
                switch (e) {
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                    default -> out.append(e);
                }
            } else {
                out.append(c);
            }
        }
        throw new IllegalArgumentException("unterminated string: " + s);
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
