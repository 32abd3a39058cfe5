package wallclock.testdata;

/**
 * HikariCP's ClockSource: a static facade over an implementation chosen at run time; on one
 * platform it is the wall clock. The start time passes through the interface's method into the
 * implementation's parameter.
 */
interface ClockSource {
    ClockSource CLOCK = new MillisecondClockSource();

    static long currentTime() {
        return CLOCK.currentTime0();
    }

    static long elapsedMillis(long startTime) {
        return CLOCK.elapsedMillis0(startTime);
    }

    long currentTime0();

    long elapsedMillis0(long startTime);

    final class MillisecondClockSource implements ClockSource {
        @Override
        public long currentTime0() {
            return System.currentTimeMillis();
        }

        @Override
        public long elapsedMillis0(long startTime) {
            return System.currentTimeMillis() - startTime; // want "subtracts two wall-clock readings"
        }
    }
}

class Borrower {
    boolean timedOut(long timeoutMillis) {
        long start = ClockSource.currentTime();
        return ClockSource.elapsedMillis(start) > timeoutMillis;
    }
}
