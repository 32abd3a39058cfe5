package wallclock.testdata;

/**
 * The incident's lock client, as the postmortem quotes it: renewals and the local expiry timed with
 * System.currentTimeMillis(). A 12.4 s step back skipped renewals while the client believed its
 * lease had 20 s left.
 */
class Incident {
    interface Etcd {
        void leaseKeepAlive(long leaseId);
    }

    private final Etcd etcd;
    private final long leaseId;
    private long lastRenew;
    private long myLockExpireAt;

    Incident(Etcd etcd, long leaseId) {
        this.etcd = etcd;
        this.leaseId = leaseId;
    }

    void acquired() {
        myLockExpireAt = System.currentTimeMillis() + 15_000L; // lock acquired: TTL 15 s
    }

    void tick() {
        // 反例：续约节奏 & 本地过期判断都用墙钟
        long now = System.currentTimeMillis();
        if (now - lastRenew >= 5_000L) { // want "now - lastRenew subtracts two wall-clock readings"
            etcd.leaseKeepAlive(leaseId);
            lastRenew = now;
        }
        if (now >= myLockExpireAt) { // want "now >= myLockExpireAt compares wall-clock readings"
            releaseLocalLock();
        }
    }

    void releaseLocalLock() {}
}
