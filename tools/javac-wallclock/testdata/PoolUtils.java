package wallclock.testdata;

import java.time.Duration;
import java.time.Instant;

final class PoolUtils {
    private PoolUtils() {}

    static Duration durationSince(Instant start) {
        return Duration.between(start, Instant.now()); // want "measures between two wall-clock instants"
    }
}
