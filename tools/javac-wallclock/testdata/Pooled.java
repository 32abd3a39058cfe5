package wallclock.testdata;

import java.time.Instant;

interface Pooled {
    Instant getLastUsedInstant();

    long getLastUsedMillis();

    Instant getExpiry();
}

final class DefaultPooled implements Pooled {
    private volatile Instant lastUse = Instant.now();
    private volatile long lastUseMillis = System.currentTimeMillis();
    private final Instant expiry;

    DefaultPooled(Instant expiry) {
        this.expiry = expiry;
    }

    void use() {
        lastUse = Instant.now();
        lastUseMillis = System.currentTimeMillis();
    }

    @Override
    public Instant getLastUsedInstant() {
        return lastUse;
    }

    @Override
    public long getLastUsedMillis() {
        return lastUseMillis;
    }

    @Override
    public Instant getExpiry() {
        return expiry;
    }
}
