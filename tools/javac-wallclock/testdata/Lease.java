package wallclock.testdata;

/**
 * Two stored readings compared (neither is "now"): it may order them or check one against the
 * other, so it is the lower-severity category, which "noambiguous" turns off.
 */
class Lease {
    private long renewedAt;
    private long expiresAt;

    void renew(long ttl) {
        renewedAt = System.currentTimeMillis();
        expiresAt = renewedAt + ttl;
    }

    boolean stale() {
        return renewedAt >= expiresAt; // want "\[WallClock ambiguous\] renewedAt >= expiresAt orders two stored"
    }
}
