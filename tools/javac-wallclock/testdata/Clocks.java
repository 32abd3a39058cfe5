package wallclock.testdata;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/** Clocks behind interfaces: java.time.Clock, InstantSource, and a project's own. */
class Clocks {
    /** A project's own clock, implemented elsewhere (not in this compilation). */
    interface TimeSource {
        long currentTimeMillis();
    }

    private final InstantSource source;
    private final Clock clock;
    private final TimeSource time;
    private Instant started;
    private long startedMillis;
    private long renewedAt;

    Clocks(InstantSource source, Clock clock, TimeSource time) {
        this.source = source;
        this.clock = clock;
        this.time = time;
    }

    void start() {
        started = source.instant();
        startedMillis = clock.millis();
        renewedAt = time.currentTimeMillis();
    }

    Duration uptime() {
        return Duration.between(started, source.instant()); // want "measures between"
    }

    long uptimeMillis() {
        return source.millis() - startedMillis; // want "subtracts two wall-clock readings"
    }

    boolean renewDue(long interval) {
        return time.currentTimeMillis() - renewedAt >= interval; // want "subtracts two wall-clock readings"
    }
}
