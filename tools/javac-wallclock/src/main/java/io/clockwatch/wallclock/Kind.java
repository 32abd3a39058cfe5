package io.clockwatch.wallclock;

/**
 * What a value is as far as clocks go. Joining two kinds keeps the greater one: a variable that is
 * ever assigned a wall-clock reading holds one.
 */
enum Kind {
    /** Not a local reading: a constant, a duration, a time from elsewhere, System.nanoTime(). */
    NONE,
    /** A local wall-clock instant as an object: Instant.now(), new Date(), Calendar.getInstance(). */
    INSTANT,
    /** A local wall-clock reading as a number: System.currentTimeMillis(), instant.toEpochMilli(). */
    WALL;

    static Kind join(Kind a, Kind b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    boolean local() {
        return this != NONE;
    }
}
