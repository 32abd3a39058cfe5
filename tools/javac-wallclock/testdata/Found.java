package wallclock.testdata;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Calendar;
import java.util.Date;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** Wall-clock timing in the forms real code has it. */
class Found {
    private final AtomicLong lastHeartbeat = new AtomicLong();
    private final Map<String, Long> expiries = new ConcurrentHashMap<>();
    private volatile Instant started;
    private final Clock clock = Clock.systemUTC();

    void beat() {
        lastHeartbeat.set(System.currentTimeMillis());
    }

    boolean dead(long timeoutMillis) {
        return System.currentTimeMillis() - lastHeartbeat.get() > timeoutMillis; // want "subtracts two wall-clock readings"
    }

    void put(String key, long ttlMillis) {
        expiries.put(key, System.currentTimeMillis() + ttlMillis);
    }

    boolean fresh(String key) {
        Long exp = expiries.get(key);
        return exp != null && System.currentTimeMillis() < exp; // want "compares wall-clock readings"
    }

    void start() {
        started = Instant.now();
    }

    Duration uptime() {
        return Duration.between(started, Instant.now()); // want "measures between two wall-clock instants"
    }

    long uptimeSeconds() {
        return ChronoUnit.SECONDS.between(started, Instant.now()); // want "measures between two wall-clock instants"
    }

    boolean pastDeadline(Duration d) {
        Instant deadline = started.plus(d);
        return Instant.now().isAfter(deadline); // want "measures between two wall-clock instants"
    }

    long dateElapsed() {
        Date begin = new Date();
        work();
        return new Date().getTime() - begin.getTime(); // want "subtracts two wall-clock readings"
    }

    long clockElapsed() {
        long t0 = clock.millis();
        work();
        return Clock.systemUTC().millis() - t0; // want "subtracts two wall-clock readings"
    }

    long calendarElapsed() {
        Calendar c = Calendar.getInstance();
        work();
        return (System.currentTimeMillis() - c.getTimeInMillis()) / 1000; // want "subtracts two wall-clock readings"
    }

    static long now() {
        return System.currentTimeMillis();
    }

    long viaHelper(long since) {
        return now() - since; // want "subtracts two wall-clock readings"
    }

    long callViaHelper() {
        return viaHelper(now());
    }

    long seconds() {
        long start = TimeUnit.MILLISECONDS.toSeconds(System.currentTimeMillis());
        work();
        return TimeUnit.MILLISECONDS.toSeconds(System.currentTimeMillis()) - start; // want "subtracts two wall-clock readings"
    }

    boolean epochInstant(long lastMillis) {
        return Instant.ofEpochMilli(lastMillis).plusSeconds(30).isBefore(Instant.now()); // want "measures between two wall-clock instants"
    }

    void callEpochInstant() {
        epochInstant(System.currentTimeMillis());
    }

    private static void work() {}
}
