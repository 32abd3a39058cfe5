package wallclock.testdata;

/**
 * False alarms found in the JDK's sources (docs/audit.md), kept as cases: sequence numbers seeded
 * from the clock (JMX's ArrayNotificationBuffer), a min of two deadlines (sun.security.util.Cache),
 * a clamp that survives a step back (java.rmi.server.UID); and the checks beside them that stay.
 */
class Counters {
    private long earliestSequenceNumber = System.currentTimeMillis();
    private long nextSequenceNumber = earliestSequenceNumber;
    private long nextExpirationTime = Long.MAX_VALUE;
    private long lastTime;

    void add() {
        nextSequenceNumber++;
    }

    void drop() {
        earliestSequenceNumber++;
    }

    long backlog() {
        return nextSequenceNumber - earliestSequenceNumber;
    }

    void put(long lifetime) {
        long expirationTime = System.currentTimeMillis() + lifetime;
        if (expirationTime < nextExpirationTime) {
            nextExpirationTime = expirationTime;
        }
    }

    boolean expiredSome() {
        return System.currentTimeMillis() > nextExpirationTime; // want "compares wall-clock readings"
    }

    long uid() {
        long now = System.currentTimeMillis();
        lastTime = (now < lastTime) ? lastTime + 1 : now;
        return lastTime;
    }
}
