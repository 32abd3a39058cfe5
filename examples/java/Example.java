// A clockwatch stepdown client for lock holders: Java 17, standard library
// only, one file. Run it with
//
//     java Example.java [SOCKET] [--until-resume]
//
// It connects to clockwatch's stepdown socket (default
// /run/clockwatch/stepdown.sock), follows the state, "releases its locks" on
// a stepdown and acknowledges it, and reconnects with jittered exponential
// backoff when clockwatch goes away. No message for three heartbeat intervals
// means the state is unknown: treat it like a stepdown. With --until-resume it
// exits 0 after the first resume that follows a stepdown (used by
// clockwatch's CI).

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Example {
    static final String DEFAULT_SOCKET = "/run/clockwatch/stepdown.sock";

    // The protocol's objects are flat: a small pattern reads them.
    static final Pattern FIELD = Pattern.compile("\"(\\w+)\"\\s*:\\s*(\"(?:[^\"\\\\]|\\\\.)*\"|[^,}]+)");

    static Map<String, String> parse(String line) {
        Map<String, String> m = new HashMap<>();
        Matcher f = FIELD.matcher(line);
        while (f.find()) {
            String v = f.group(2).trim();
            if (v.startsWith("\"")) {
                v = v.substring(1, v.length() - 1).replace("\\\"", "\"").replace("\\\\", "\\");
            }
            m.put(f.group(1), v);
        }
        return m;
    }

    volatile String state = "unknown";
    volatile long lastMessageNanos = System.nanoTime();
    volatile long timeoutNanos = 5_000_000_000L;

    void releaseLocks(String reason, String drill) {
        // A real application stops using its lock or lease here, before the
        // lock server hands it to someone else.
        System.out.println("releasing locks: reason=" + reason + " drill=" + drill);
    }

    void setUnknown(String why) {
        if (state.equals("ok")) {
            releaseLocks("unknown", "false");
        }
        if (!state.equals("unknown")) {
            System.out.println("state " + state + " -> unknown (" + why + ")");
        }
        state = "unknown";
    }

    /** Runs one connection; returns true when --until-resume is done. */
    boolean session(String path, boolean untilResume) throws IOException {
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(path));
            lastMessageNanos = System.nanoTime();
            // A blocking channel has no read timeout: a watchdog closes it
            // when the heartbeats stop.
            Thread watchdog = new Thread(() -> {
                while (ch.isOpen()) {
                    if (System.nanoTime() - lastMessageNanos > timeoutNanos) {
                        System.out.println("heartbeat timeout");
                        try { ch.close(); } catch (IOException e) { /* closing anyway */ }
                        return;
                    }
                    try { Thread.sleep(50); } catch (InterruptedException e) { return; }
                }
            });
            watchdog.setDaemon(true);
            watchdog.start();
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
            boolean steppedDown = false;
            String line;
            while ((line = in.readLine()) != null) {
                lastMessageNanos = System.nanoTime();
                if (line.length() > 4096) {
                    throw new IOException("line too long");
                }
                Map<String, String> m = parse(line);
                switch (m.getOrDefault("type", "")) {
                    case "hello" -> {
                        double hb = Double.parseDouble(m.getOrDefault("heartbeat_seconds", "1"));
                        timeoutNanos = (long) (3 * hb * 1e9);
                        System.out.println("hello state=" + m.get("state") + " epoch=" + m.get("epoch") + " seq=" + m.get("seq"));
                        if (!m.get("state").equals("ok") && state.equals("ok")) {
                            releaseLocks(m.get("reason"), "false");
                        }
                        state = m.get("state");
                    }
                    case "stepdown" -> {
                        String drill = m.getOrDefault("drill", "false");
                        System.out.println("stepdown seq=" + m.get("seq") + " reason=" + m.get("reason") + " drill=" + drill
                                + " step_seconds=" + m.get("step_seconds"));
                        if (state.equals("ok")) {
                            releaseLocks(m.get("reason"), drill);
                        }
                        state = "stepdown";
                        steppedDown = true;
                        String ack = "{\"type\":\"ack\",\"seq\":" + m.get("seq") + "}\n";
                        ch.write(ByteBuffer.wrap(ack.getBytes(StandardCharsets.UTF_8)));
                        System.out.println("acked seq=" + m.get("seq"));
                    }
                    case "resume" -> {
                        System.out.println("resume seq=" + m.get("seq") + " reason=" + m.get("reason"));
                        state = "ok";
                        if (untilResume && steppedDown) {
                            return true;
                        }
                    }
                    case "heartbeat" -> {
                        if (!state.equals(m.get("state"))) {
                            System.out.println("state " + state + " -> " + m.get("state") + " (heartbeat)");
                            state = m.get("state");
                        }
                    }
                    case "error" -> System.out.println("error from clockwatch: " + m.get("code") + ": " + m.get("error"));
                    default -> { /* newer message types: ignore */ }
                }
            }
            throw new IOException("clockwatch closed the connection");
        }
    }

    public static void main(String[] args) throws InterruptedException {
        String path = DEFAULT_SOCKET;
        boolean untilResume = false;
        for (String a : args) {
            if (a.equals("--until-resume")) {
                untilResume = true;
            } else {
                path = a;
            }
        }
        Example client = new Example();
        double backoff = 0.1;
        while (true) {
            try {
                if (client.session(path, untilResume)) {
                    System.exit(0);
                }
                backoff = 0.1;
            } catch (IOException e) {
                client.setUnknown("connection lost: " + e.getMessage());
            }
            Thread.sleep((long) (1000 * (backoff / 2 + ThreadLocalRandom.current().nextDouble() * backoff / 2)));
            backoff = Math.min(backoff * 2, 5.0);
        }
    }
}
