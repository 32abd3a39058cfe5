package wallclock.testdata;

import java.time.Duration;
import java.time.Instant;

/**
 * A pool's borrow with a max wait, timed by a helper of another class (commons-pool's
 * durationSince): the reading crosses into PoolUtils's parameter. BorrowPool comes first in file
 * order, so a plugin that analyses classes one by one never sees it; after a forward step every
 * borrow times out at once.
 */
class BorrowPool {
    Object borrow(Duration maxWait) throws InterruptedException {
        Instant start = Instant.now();
        while (true) {
            Object o = poll();
            if (o != null) {
                return o;
            }
            if (PoolUtils.durationSince(start).compareTo(maxWait) > 0) {
                throw new IllegalStateException("timeout waiting for idle object");
            }
            Thread.sleep(10);
        }
    }

    private Object poll() {
        return null;
    }
}
