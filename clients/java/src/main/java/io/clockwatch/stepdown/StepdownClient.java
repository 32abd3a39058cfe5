package io.clockwatch.stepdown;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows clockwatch's stepdown socket in a daemon thread and tells a {@link StepdownListener}.
 *
 * <p>It reconnects with jittered exponential backoff (100 ms doubling to 5 s) when clockwatch goes away,
 * treats three heartbeats of silence as {@code unknown}, and acks each stepdown once the listener's
 * {@code onStepdown} has returned. The wire format is docs/stepdown-protocol.md.
 */
public final class StepdownClient implements Closeable {
    /** Where clockwatch serves the stepdown socket unless configured otherwise. */
    public static final String DEFAULT_SOCKET = "/run/clockwatch/stepdown.sock";
    /** Environment variable that overrides {@link #DEFAULT_SOCKET}. */
    public static final String SOCKET_ENV = "CLOCKWATCH_STEPDOWN_SOCKET";
    /** Longest line either side may send. */
    public static final int MAX_LINE = 4096;

    private static final long HELLO_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final Path socket;
    private final StepdownListener listener;
    private final Thread reader;
    private final Thread watchdog;
    private volatile boolean closed;
    private volatile SocketChannel channel;
    private volatile long lastMessageNanos = System.nanoTime();
    private volatile long silenceNanos = HELLO_TIMEOUT_NANOS;
    // Set while the reader is in the listener: messages wait unread in the
    // socket then, and that silence is the application's, not clockwatch's.
    private volatile boolean inListener;
    private volatile String state = "unknown";
    private volatile List<String> watchPeers = List.of();

    /** A client of the socket at $CLOCKWATCH_STEPDOWN_SOCKET, or the default path. */
    public StepdownClient(StepdownListener listener) {
        this(defaultSocket(), listener);
    }

    public StepdownClient(Path socket, StepdownListener listener) {
        this.socket = socket;
        this.listener = listener;
        this.reader = new Thread(this::follow, "clockwatch-stepdown");
        this.reader.setDaemon(true);
        this.watchdog = new Thread(this::watch, "clockwatch-stepdown-watchdog");
        this.watchdog.setDaemon(true);
    }

    /**
     * The reserved socket beside the stepdown socket at {@code socket}: "x.sock" becomes "x.reserved.sock"
     * (".reserved" is appended to a path that does not end in ".sock"). Only root and clockwatch's uid may connect
     * there, and no other uid's connection flood can delay them: the client tries it first and takes the stepdown
     * socket on any error (docs/stepdown-protocol.md).
     */
    public static Path reservedPath(Path socket) {
        String s = socket.toString();
        return Path.of(s.endsWith(".sock") ? s.substring(0, s.length() - ".sock".length()) + ".reserved.sock" : s + ".reserved");
    }

    /**
     * Connects to the reserved socket beside {@code socket}, else (on any error) to {@code socket}; {@code keep} is
     * handed each channel before its connect, so that another thread may close it.
     */
    private static SocketChannel connect(Path socket, Consumer<SocketChannel> keep) throws IOException {
        try {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            keep.accept(ch);
            ch.connect(UnixDomainSocketAddress.of(reservedPath(socket)));
            return ch;
        } catch (IOException e) {
            // A failed connect closes the channel: a new one for the stepdown socket.
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            keep.accept(ch);
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
            } catch (IOException e2) {
                ch.close();
                throw e2;
            }
            return ch;
        }
    }

    /** $CLOCKWATCH_STEPDOWN_SOCKET, or {@link #DEFAULT_SOCKET}. */
    public static Path defaultSocket() {
        String env = System.getenv(SOCKET_ENV);
        return Path.of(env == null || env.isEmpty() ? DEFAULT_SOCKET : env);
    }

    /**
     * Follows the clocks of these peers too (other nodes' clockwatch this one measures: a name as its
     * metrics show it, an IP:port or an IP): after each hello the client asks for them, and
     * {@link StepdownListener#onPeer} hears their changes. Call before {@link #start}.
     */
    public StepdownClient watchPeers(String... peers) {
        this.watchPeers = List.of(peers);
        return this;
    }

    /** Starts following the socket; returns at once. */
    public StepdownClient start() {
        reader.start();
        watchdog.start();
        return this;
    }

    /** The state as last heard: ok, stepdown or unknown. */
    public String state() {
        return state;
    }

    @Override
    public void close() {
        closed = true;
        closeChannel();
        reader.interrupt();
        watchdog.interrupt();
    }

    private void follow() {
        long backoff = 100;
        while (!closed) {
            try {
                session();
                backoff = 100;
            } catch (IOException | IllegalArgumentException e) {
                if (!"unknown".equals(state) && !closed) {
                    state = "unknown";
                    if (!deliver(Event.unknown("connection lost: " + e.getMessage()))) {
                        return;
                    }
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                closeChannel();
            }
            if (closed) {
                return;
            }
            try {
                Thread.sleep(backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
            } catch (InterruptedException e) {
                return;
            }
            backoff = Math.min(backoff * 2, 5000);
        }
    }

    private void session() throws IOException, InterruptedException {
        silenceNanos = HELLO_TIMEOUT_NANOS;
        lastMessageNanos = System.nanoTime();
        SocketChannel ch = connect(socket, c -> channel = c);
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8), MAX_LINE);
        while (!closed) {
            String line = in.readLine();
            if (line == null) {
                throw new IOException("clockwatch closed the connection");
            }
            lastMessageNanos = System.nanoTime();
            if (line.length() > MAX_LINE) {
                throw new IOException("line longer than " + MAX_LINE + " bytes");
            }
            if (line.isEmpty()) {
                continue;
            }
            Event ev = Event.parse(line);
            switch (ev.type()) {
                case "hello" -> {
                    String hb = ev.fields().get("heartbeat_seconds");
                    silenceNanos = 3 * (long) (1e9 * (hb == null ? 1.0 : Double.parseDouble(hb)));
                    // Asked again on every connection: a watch ends with it.
                    for (String p : watchPeers) {
                        send("{\"type\":\"watch_peer\",\"peer\":" + Json.quote(p) + "}");
                    }
                    handle(ev);
                }
                case "peer" -> {
                    inListener = true;
                    try {
                        listener.onPeer(ev);
                    } finally {
                        lastMessageNanos = System.nanoTime();
                        inListener = false;
                    }
                }
                case "stepdown", "resume" -> handle(ev);
                case "heartbeat" -> {
                    if (!ev.state().equals(state)) {
                        handle(ev);
                    }
                }
                default -> {
                    // error messages and types added later are ignored
                }
            }
        }
    }

    private void handle(Event ev) throws InterruptedException {
        state = ev.state();
        inListener = true;
        try {
            if (ev.trusted()) {
                listener.onTrusted(ev);
                return;
            }
            // A ClockGuard returns once the work under its lock has ended,
            // which may take longer than three heartbeats.
            listener.onStepdown(ev);
        } finally {
            lastMessageNanos = System.nanoTime();
            inListener = false;
        }
        if (ev.needsAck()) {
            send("{\"type\":\"ack\",\"seq\":" + ev.seq() + "}");
        }
    }

    private boolean deliver(Event ev) {
        try {
            listener.onStepdown(ev);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    private void send(String line) {
        SocketChannel ch = channel;
        if (ch == null) {
            return;
        }
        try {
            ByteBuffer b = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
            while (b.hasRemaining()) {
                ch.write(b);
            }
        } catch (IOException e) {
            // The connection is gone: the next hello carries the state.
        }
    }

    // SocketChannel reads have no timeout: the watchdog closes a silent
    // connection so that the reader sees unknown and reconnects.
    private void watch() {
        while (!closed) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                return;
            }
            if (channel != null && !inListener && System.nanoTime() - lastMessageNanos > silenceNanos) {
                closeChannel();
            }
        }
    }

    private void closeChannel() {
        SocketChannel ch = channel;
        channel = null;
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
    }

    /**
     * Asks clockwatch for a drill: a stepdown with {@code drill} true, then a resume {@code holdSeconds}
     * later. Allowed for root, clockwatch's user and {@code stepdown.drill_uids}. Returns when the drill's
     * stepdown arrives; throws IOException with clockwatch's refusal.
     */
    public static void requestDrill(Path socket, String reason, Double stepSeconds, Double holdSeconds) throws IOException {
        StringBuilder req = new StringBuilder("{\"type\":\"drill\",\"reason\":").append(Json.quote(reason));
        if (stepSeconds != null) {
            req.append(",\"step_seconds\":").append(stepSeconds);
        }
        if (holdSeconds != null) {
            req.append(",\"hold_seconds\":").append(holdSeconds);
        }
        req.append("}\n");
        try (SocketChannel ch = connect(socket, c -> { })) {
            // Reads cannot time out: a timer closes the channel at the deadline.
            Closeable deadline = ch;
            Thread timer = new Thread(() -> {
                try {
                    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(2 * HELLO_TIMEOUT_NANOS));
                    deadline.close();
                } catch (InterruptedException | IOException e) {
                    // done in time, or closed anyway
                }
            });
            timer.setDaemon(true);
            timer.start();
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
            boolean sent = false;
            try {
                for (String line; (line = in.readLine()) != null; ) {
                    Event ev = Event.parse(line);
                    if (ev.type().equals("hello") && !sent) {
                        // Only now is this connection surely a subscriber
                        // that hears the drill's stepdown.
                        ByteBuffer b = ByteBuffer.wrap(req.toString().getBytes(StandardCharsets.UTF_8));
                        while (b.hasRemaining()) {
                            ch.write(b);
                        }
                        sent = true;
                    } else if (ev.type().equals("error")) {
                        throw new IOException("drill refused: " + ev.fields().get("code") + ": " + ev.fields().get("error"));
                    } else if (ev.type().equals("stepdown") && ev.drill()) {
                        return;
                    }
                }
            } finally {
                timer.interrupt();
            }
            throw new IOException("clockwatch closed the connection before answering the drill (or did not within 10 s)");
        }
    }
}
