package wallclock.testdata;

/** The ways to silence a reviewed line. */
class Silenced {
    private final long start = System.currentTimeMillis();

    long uptimeForDisplay() {
        // clockwatch:wallclock-ok shown to people as wall time since start; a step shows there anyway
        return System.currentTimeMillis() - start;
    }

    long trailing() {
        return System.currentTimeMillis() - start; //clockwatch:wallclock-ok display only
    }

    @SuppressWarnings("WallClock")
    long suppressedMethod() {
        return System.currentTimeMillis() - start;
    }

    @SuppressWarnings({"unchecked", "WallClock"})
    static final class Suppressed {
        private final long begun = System.currentTimeMillis();

        long elapsed() {
            return System.currentTimeMillis() - begun;
        }
    }

    long bare() {
        // clockwatch:wallclock-ok
        return System.currentTimeMillis() - start; // want "needs a reason to silence this"
    }
}
