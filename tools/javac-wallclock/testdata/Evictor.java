package wallclock.testdata;

import java.time.Duration;
import java.time.Instant;

/**
 * Readings behind an interface method (commons-pool's PooledObject.getLastUsedInstant()): what the
 * implementation returns, the interface returns, whichever file javac reads first.
 */
class Evictor {
    boolean idleTooLong(Pooled p, Duration max) {
        return Duration.between(p.getLastUsedInstant(), Instant.now()).compareTo(max) > 0; // want "measures between"
    }

    boolean idleMillis(Pooled p, long max) {
        return System.currentTimeMillis() - p.getLastUsedMillis() > max; // want "subtracts two wall-clock readings"
    }

    // An interface method with no wall-clock implementation is not a reading.
    boolean expired(Pooled p) {
        return p.getExpiry().isBefore(Instant.now());
    }
}
