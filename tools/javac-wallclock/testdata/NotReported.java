package wallclock.testdata;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.util.Date;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/** What is right and must not be reported. */
class NotReported {
    private static final Logger LOG = Logger.getLogger("x");

    /** Stands in for Jackson's annotation: such fields are data. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.FIELD)
    @interface JsonProperty {
        String value();
    }

    static final class Token {
        private final Date expiresAt;

        Token(Date expiresAt) {
            this.expiresAt = expiresAt;
        }

        Date getExpiresAt() {
            return expiresAt;
        }
    }

    static final class Record {
        @JsonProperty("created")
        long created = System.currentTimeMillis();
    }

    private long lastRenewNanos = System.nanoTime();

    // The fix the postmortem asks for: a monotonic clock and a scheduler.
    boolean renewDue() {
        return System.nanoTime() - lastRenewNanos >= TimeUnit.SECONDS.toNanos(5);
    }

    void schedule(Runnable renew) {
        ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor();
        s.scheduleAtFixedRate(renew, 0, 5, TimeUnit.SECONDS);
    }

    // A token's expiry comes from elsewhere: comparing it with the wall clock is right.
    boolean valid(Token t) {
        return t.getExpiresAt().after(new Date());
    }

    boolean validExp(long expSeconds) {
        return System.currentTimeMillis() / 1000 < expSeconds;
    }

    // A time parsed from input.
    boolean past(String s) {
        return Instant.parse(s).isBefore(Instant.now());
    }

    // Persisted creation times are data.
    long age(Record r) {
        return System.currentTimeMillis() - r.created;
    }

    // Logging, formatting, IDs, seeds.
    String log() {
        LOG.info("started at " + System.currentTimeMillis());
        Random r = new Random(System.currentTimeMillis());
        return "job-" + System.currentTimeMillis() + "-" + r.nextInt()
                + DateTimeFormatter.ISO_INSTANT.format(Instant.now());
    }

    // Arithmetic on one reading is not an interval.
    long bucket() {
        return System.currentTimeMillis() / 60_000 * 60_000;
    }
}
