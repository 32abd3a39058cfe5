package io.clockwatch.stepdown;

import java.util.Map;

/**
 * One message from clockwatch's stepdown socket, or a synthetic {@code unknown} event.
 *
 * <p>{@code type} is {@code hello}, {@code stepdown}, {@code resume}, {@code heartbeat} or
 * {@code unknown} (not connected, or silent for three heartbeats: treat it like a stepdown), or
 * {@code peer}: the state of a watched peer's clock, named by {@link #peer()}.
 * {@code state} is {@code ok}, {@code stepdown} or {@code unknown}. Fields the protocol may add later
 * are kept, as text, in {@code fields}.
 */
public record Event(String type, String state, long seq, long epoch, String reason, boolean drill,
        Double stepSeconds, Map<String, String> fields) {

    /** Whether the clock may be trusted after this event: only in state ok. */
    public boolean trusted() {
        return "ok".equals(state);
    }

    /** The peer a {@code peer} event is about (null for the others). */
    public String peer() {
        return fields.get("peer");
    }

    /** Whether clockwatch waits for an ack of this event (stepdowns). */
    public boolean needsAck() {
        return "stepdown".equals(type);
    }

    static Event unknown(String why) {
        return new Event("unknown", "unknown", 0, 0, why, false, null, Map.of());
    }

    /** Parses one line (without its newline); throws IllegalArgumentException if it is not a message. */
    public static Event parse(String line) {
        Map<String, String> f = Json.parseFlat(line);
        String type = f.get("type");
        if (type == null) {
            throw new IllegalArgumentException("not a message object with a type: " + abbreviate(line));
        }
        String state = f.get("state");
        if (state == null) {
            state = switch (type) {
                case "stepdown" -> "stepdown";
                case "resume" -> "ok";
                default -> "";
            };
        }
        String step = f.get("step_seconds");
        return new Event(type, state, parseLong(f.get("seq")), parseLong(f.get("epoch")), f.get("reason"),
                "true".equals(f.get("drill")), step == null ? null : Double.valueOf(step), Map.copyOf(f));
    }

    private static long parseLong(String s) {
        return s == null ? 0 : Long.parseLong(s);
    }

    private static String abbreviate(String s) {
        return s.length() > 80 ? s.substring(0, 80) + "..." : s;
    }
}
