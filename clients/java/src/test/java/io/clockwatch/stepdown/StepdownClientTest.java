package io.clockwatch.stepdown;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.ToolProvider;

/**
 * Tests of the client against a real clockwatch, without a test framework (none can be fetched where
 * clockwatch is built): each {@code test*} method runs in turn; the first failure of each is printed and
 * the run exits 1 if any failed. clients/clients_test.go starts clockwatch and sets
 * CLOCKWATCH_STEPDOWN_SOCKET and CLOCKWATCH_METRICS_URL.
 */
public final class StepdownClientTest {
    static final Path SOCKET = StepdownClient.defaultSocket();
    static final String METRICS = System.getenv("CLOCKWATCH_METRICS_URL");
    static Path readme;

    public static void main(String[] args) throws Exception {
        readme = Path.of(args.length > 0 ? args[0] : "README.md");
        if (METRICS == null || System.getenv(StepdownClient.SOCKET_ENV) == null) {
            System.err.println("CLOCKWATCH_STEPDOWN_SOCKET and CLOCKWATCH_METRICS_URL must name a running clockwatch");
            System.exit(2);
        }
        int failed = 0;
        for (Method m : StepdownClientTest.class.getDeclaredMethods()) {
            if (!m.getName().startsWith("test")) {
                continue;
            }
            waitFor(() -> "ok".equals(helloState()), 20, "clockwatch in state ok (an earlier drill may still hold)");
            long start = System.nanoTime();
            try {
                m.invoke(null);
                System.out.printf("ok   %s (%.2fs)%n", m.getName(), (System.nanoTime() - start) / 1e9);
            } catch (java.lang.reflect.InvocationTargetException e) {
                failed++;
                System.out.printf("FAIL %s: %s%n", m.getName(), e.getCause());
                e.getCause().printStackTrace(System.out);
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    /** The reserved socket's path, as docs/stepdown-protocol.md gives the rule. */
    static void testReservedPath() {
        check(StepdownClient.reservedPath(Path.of("/run/clockwatch/stepdown.sock")).equals(Path.of("/run/clockwatch/stepdown.reserved.sock")),
                "reservedPath of stepdown.sock: " + StepdownClient.reservedPath(Path.of("/run/clockwatch/stepdown.sock")));
        check(StepdownClient.reservedPath(Path.of("/tmp/x/socket")).equals(Path.of("/tmp/x/socket.reserved")),
                "reservedPath of a path without .sock: " + StepdownClient.reservedPath(Path.of("/tmp/x/socket")));
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void waitFor(BooleanSupplier cond, double seconds, String what) throws InterruptedException {
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not within " + seconds + "s");
            }
            Thread.sleep(20);
        }
    }

    static String helloState() {
        CountDownLatch got = new CountDownLatch(1);
        String[] state = {"unknown"};
        StepdownListener l = new StepdownListener() {
            @Override
            public void onStepdown(Event e) {
                state[0] = e.state();
                got.countDown();
            }

            @Override
            public void onTrusted(Event e) {
                state[0] = e.state();
                got.countDown();
            }
        };
        try (StepdownClient c = new StepdownClient(SOCKET, l).start()) {
            got.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return state[0];
    }

    static double acks() {
        try {
            String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(METRICS)).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            Matcher m = Pattern.compile("(?m)^clockwatch_stepdown_acks_total (\\S+)$").matcher(body);
            return m.find() ? Double.parseDouble(m.group(1)) : 0;
        } catch (IOException | InterruptedException e) {
            throw new AssertionError("reading " + METRICS + ": " + e);
        }
    }

    /** Drills, retrying while an earlier drill's hold has not ended. */
    static void drill(String reason, Double step, double hold) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try {
                StepdownClient.requestDrill(SOCKET, reason, step, hold);
                return;
            } catch (IOException e) {
                if (!String.valueOf(e.getMessage()).contains("busy") || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    static void testEventsAndAck() throws Exception {
        List<Event> events = new CopyOnWriteArrayList<>();
        CountDownLatch resumed = new CountDownLatch(1);
        StepdownListener l = new StepdownListener() {
            @Override
            public void onStepdown(Event e) {
                events.add(e);
            }

            @Override
            public void onTrusted(Event e) {
                events.add(e);
                if (e.type().equals("resume")) {
                    resumed.countDown();
                }
            }
        };
        double before = acks();
        try (StepdownClient c = new StepdownClient(SOCKET, l).start()) {
            waitFor(() -> !events.isEmpty(), 10, "the hello");
            check(events.get(0).type().equals("hello") && events.get(0).trusted(), "first event " + events.get(0));
            drill("step", -12.4, 0.3);
            check(resumed.await(20, TimeUnit.SECONDS), "no resume after the drill: " + events);
            Event sd = events.get(1);
            check(sd.type().equals("stepdown") && sd.drill() && "step".equals(sd.reason()) && Double.valueOf(-12.4).equals(sd.stepSeconds()),
                    "second event " + sd);
            check(c.state().equals("ok"), "state " + c.state());
        }
        waitFor(() -> acks() >= before + 1, 10, "clockwatch counting the ack");
    }

    /**
     * The peer clockwatch (CLOCKWATCH_PEER, measured by the first) is drilled on its own socket: a watcher of
     * it on the first node's socket hears its clock untrusted, then trusted again, while this node's own
     * state stays ok.
     */
    static void testWatchPeer() throws Exception {
        String peer = System.getenv("CLOCKWATCH_PEER");
        String peerSocket = System.getenv("CLOCKWATCH_PEER_SOCKET");
        check(peer != null && peerSocket != null, "CLOCKWATCH_PEER and CLOCKWATCH_PEER_SOCKET are not set");
        List<Event> peerEvents = new CopyOnWriteArrayList<>();
        List<Event> local = new CopyOnWriteArrayList<>();
        StepdownListener l = new StepdownListener() {
            @Override
            public void onStepdown(Event e) {
                local.add(e);
            }

            @Override
            public void onTrusted(Event e) {
                local.add(e);
            }

            @Override
            public void onPeer(Event e) {
                peerEvents.add(e);
            }
        };
        try (StepdownClient c = new StepdownClient(SOCKET, l).watchPeers(peer).start()) {
            waitFor(() -> peerEvents.stream().anyMatch(e -> "ok".equals(e.state())), 20, "the peer's clock trusted");
            check(peer.equals(peerEvents.get(0).peer()), "peer event about " + peerEvents.get(0).peer());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) {
                try {
                    StepdownClient.requestDrill(Path.of(peerSocket), "drill", null, 2.0);
                    break;
                } catch (IOException e) {
                    if (!String.valueOf(e.getMessage()).contains("busy") || System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
            waitFor(() -> peerEvents.stream().anyMatch(e -> "stepdown".equals(e.state()) && "drill".equals(e.reason())), 20,
                    "the peer's drill");
            waitFor(() -> "ok".equals(peerEvents.get(peerEvents.size() - 1).state()), 20, "the peer's resume");
            check(local.stream().allMatch(Event::trusted), "this node's state moved with its peer's: " + local);
        }
    }

    static void testClockGuardAcksAfterWorkUnlocks() throws Exception {
        List<String> released = new CopyOnWriteArrayList<>();
        ClockGuard guard = new ClockGuard(released::add);
        try (StepdownClient c = new StepdownClient(SOCKET, guard).start()) {
            check(guard.awaitTrusted(10, TimeUnit.SECONDS), "never trusted");
            Lock work = guard.workLock();
            check(work.tryLock(), "tryLock while trusted");
            double before = acks();
            drill("offset", null, 1.0);
            waitFor(() -> released.equals(List.of("offset")), 10, "the release callback");
            check(!guard.trusted(), "still trusted after the stepdown");
            Thread t = new Thread(() -> check(!work.tryLock(), "tryLock succeeded while untrusted"));
            t.start();
            t.join();
            // Held for longer than three heartbeats: the client must not
            // take the wait in its own listener for clockwatch's silence
            // (it did: it closed the connection and the ack was lost).
            Thread.sleep(3500);
            check(acks() == before, "acked while the work lock was held");
            work.unlock();
            waitFor(() -> acks() >= before + 1, 10, "the ack after the work lock was released");
            check(work.tryLock(10, TimeUnit.SECONDS), "the work lock after the drill's resume");
            work.unlock();
        }
    }

    static void testUnknownWithoutClockwatch() throws Exception {
        ClockGuard guard = new ClockGuard(r -> {});
        try (StepdownClient c = new StepdownClient(Path.of("/nonexistent/clockwatch/stepdown.sock"), guard).start()) {
            check(!guard.awaitTrusted(300, TimeUnit.MILLISECONDS), "trusted without clockwatch");
            check(!guard.workLock().tryLock(), "work lock without clockwatch");
            check(c.state().equals("unknown"), "state " + c.state());
        }
    }

    static void testParse() {
        Event e = Event.parse("{\"type\":\"stepdown\",\"state\":\"stepdown\",\"epoch\":3,\"seq\":2,\"reason\":\"step\",\"drill\":true,\"step_seconds\":-12.4,\"detail\":\"a \\\"quoted\\\" word\",\"new\":1}");
        check(e.type().equals("stepdown") && e.seq() == 2 && e.epoch() == 3 && e.drill() && e.stepSeconds() == -12.4 && e.needsAck(), e.toString());
        check(e.fields().get("detail").equals("a \"quoted\" word") && e.fields().get("new").equals("1"), e.fields().toString());
        for (String bad : new String[] {"not json", "[1]", "{\"state\":\"ok\"}", "{\"type\":\"x\",\"a\":{}}"}) {
            try {
                Event.parse(bad);
                throw new AssertionError("parsed " + bad);
            } catch (IllegalArgumentException expected) {
                // refused, as it must be
            }
        }
    }

    static void testReadmeExample() throws Exception {
        String text = Files.readString(readme);
        Matcher m = Pattern.compile("## Release your lock\n\n```java\n(.*?)```", Pattern.DOTALL).matcher(text);
        check(m.find(), "no java block under \"Release your lock\" in " + readme);
        String body = m.group(1);
        check(body.split("\n").length == 15, "the README's example is " + body.split("\n").length + " lines, want 15");
        Path dir = Files.createTempDirectory("readme-example");
        Files.writeString(dir.resolve("ReadmeExample.java"), "import io.clockwatch.stepdown.*;\nimport java.util.concurrent.*;\n"
                + "import java.util.concurrent.atomic.*;\nimport java.util.concurrent.locks.*;\n"
                + "public class ReadmeExample {\npublic static void main(String[] args) throws Exception {\n" + body + "}\n}\n");
        String cp = System.getProperty("java.class.path");
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "-cp", cp, "-d", dir.toString(), dir.resolve("ReadmeExample.java").toString());
        check(rc == 0, "the README's example does not compile");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp", cp + ":" + dir, "ReadmeExample")
                .redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            List<String> lines = new ArrayList<>();
            String first = out.readLine();
            lines.add(first);
            check("holding the lock".equals(first), "example printed " + lines);
            drill("step", -1.5, 0.3);
            lines.add(out.readLine());
            check("releasing the lock: step".equals(lines.get(1)), "example printed " + lines);
            check(p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0, "the example did not end after releasing");
        } finally {
            p.destroyForcibly();
        }
    }
}
